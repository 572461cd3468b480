#pragma once
// The store save jobs, loads, P2P pulls and sends of a run, read from its typed events (the
// store metadata's `save`/`load` entries, each rank's `copy` report, `put`, the worker's `load`
// completions, the P2P worker's `pull`, `pull_result` and `send_ready`, the scheduler's `send_done`).
#include <vector>

#include "properties/harness/timeline.h"

namespace kvsim {

// Fills timeline.jobs and timeline.transfers.
void read_transfers(const std::vector<LogEvent>& events, Timeline& timeline);

// Every block id a field names (a block list, or block groups flattened).
IdList event_blocks(const LogEvent& event, std::string_view key = "blocks");

}  // namespace kvsim
