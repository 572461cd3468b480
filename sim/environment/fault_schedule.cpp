#include "sim/environment/fault_schedule.h"

namespace kvsim {

void FaultSchedule::apply(const FaultEvent& fault) {
    switch (fault.kind) {
        case FaultKind::store_delay: store_delay_by_rank_[fault.rank] = fault.steps; break;
        case FaultKind::store_fail: ++store_failures_by_rank_[fault.rank]; break;
        case FaultKind::load_fail: load_failures_.insert(fault.request_id); break;
        case FaultKind::lookup_pending: lookup_pending_until_[fault.request_id] = step_ + fault.steps; break;
    }
}

int FaultSchedule::store_extra_delay(int rank) const {
    auto it = store_delay_by_rank_.find(rank);
    return it == store_delay_by_rank_.end() ? 0 : it->second;
}

bool FaultSchedule::take_store_failure(int rank) {
    auto it = store_failures_by_rank_.find(rank);
    if (it == store_failures_by_rank_.end()) return false;
    if (--it->second == 0) store_failures_by_rank_.erase(it);
    ++fired_;
    return true;
}

bool FaultSchedule::take_load_failure(const std::string& request_id) {
    if (load_failures_.erase(request_id) == 0) return false;
    ++fired_;
    return true;
}

bool FaultSchedule::lookup_pending(const std::string& request_id) const {
    auto it = lookup_pending_until_.find(request_id);
    return it != lookup_pending_until_.end() && step_ < it->second;
}

bool FaultSchedule::active() const {
    return !store_failures_by_rank_.empty() || !load_failures_.empty() || in_effect();
}

bool FaultSchedule::in_effect() const {
    for (const auto& [id, until] : lookup_pending_until_)
        if (step_ < until) return true;
    return false;
}

}  // namespace kvsim
