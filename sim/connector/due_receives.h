#pragma once
// The receives of a worker that reports each load done at a fixed step: kvsim's own (the stand-in and
// mock connectors' workers), no upstream file.
#include <map>
#include <string>

#include "sim/core/outputs.h"

namespace kvsim {

// Moves every receive due by `step` (request -> step whose output reports it) into `out.finished_recving`.
inline void report_due_receives(std::map<std::string, int>& inflight, int step, KVConnectorOutput& out) {
    for (auto it = inflight.begin(); it != inflight.end();) {
        if (it->second <= step) {
            out.finished_recving.insert(it->first);
            it = inflight.erase(it);
        } else {
            ++it;
        }
    }
}

}  // namespace kvsim
