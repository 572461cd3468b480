#pragma once
// The trace's fault events as the model sees them: applied at their step, queried by
// the worker and connector models. Once every fault has fired and expired, the run is
// in its liveness phase: everything must drain.
#include <map>
#include <set>
#include <string>

#include "sim/trace/trace.h"

namespace kvsim {

class FaultSchedule {
public:
    void set_step(int step) { step_ = step; }
    int step() const { return step_; }

    void apply(const FaultEvent& fault);

    // Extra steps a store job started now on `rank` takes.
    int store_extra_delay(int rank) const;
    // Consumes a pending store_fail for `rank`.
    bool take_store_failure(int rank);
    // Consumes a pending load_fail for `request_id`.
    bool take_load_failure(const std::string& request_id);
    // The store lookup for `request_id` is still pending at the current step.
    bool lookup_pending(const std::string& request_id) const;
    // Some fault is still armed or in effect.
    bool active() const;
    // A fault in effect now, whatever the model does: a store lookup held pending. An armed failure
    // waits on the model (a load or store job it fails), a store_delay lasts for good.
    bool in_effect() const;
    // Armed failures taken so far.
    int fired() const { return fired_; }

private:
    int step_ = 0;
    int fired_ = 0;
    std::map<int, int> store_delay_by_rank_;
    std::map<int, int> store_failures_by_rank_;
    std::set<std::string> load_failures_;
    std::map<std::string, int> lookup_pending_until_;
};

}  // namespace kvsim
