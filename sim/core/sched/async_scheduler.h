#pragma once
// vllm/v1/core/sched/async_scheduler.py AsyncScheduler @ 014b23503270d029739d400ec4c14ba0714bdcd8: the
// scheduler the engine core uses when SchedulerConfig.async_scheduling is on (no speculative decoding, no
// structured output, no pipeline parallelism are modelled).
#include "sim/core/sched/scheduler.h"

namespace kvsim {

class AsyncScheduler : public Scheduler {
public:
    using Scheduler::Scheduler;

protected:
    // AsyncScheduler._update_after_schedule @ 014b23503270d029739d400ec4c14ba0714bdcd8: one output
    // placeholder per scheduled request that samples this step.
    void update_after_schedule(const SchedulerOutput& out) override;
    // AsyncScheduler._update_request_with_output @ 014b23503270d029739d400ec4c14ba0714bdcd8: placeholders
    // shrink by the tokens received; a running request caches its blocks up to the processed tokens. After
    // #48245 (local-inference-lab/vllm @ 4c346dac0157aab148601ae13f0e8c76d2a3b778) stale tokens leave them as
    // they are: the preemption zeroed them.
    bool update_request_with_output(Request& request, const std::vector<TokenId>& sampled, bool is_stale) override;
    // failed_load_placeholders=rolled_back: the rule proposed for issue #45138 by vllm-project/vllm#45430
    // (#45146 zeroes the placeholders only): placeholders of this step go with its skipped output, those of
    // later steps in flight become async_tokens_to_discard; rolled_back_but_one: #49252's rule.
    void on_rewound_by_failed_load(Request& request, bool sampled) override;
    // A frame a failed-load rollback counts in async_tokens_to_discard and #50297 drops as stale is one
    // frame: the drop consumes the discard too (kvsim's composition of the proposals' counter with the drop).
    void on_stale_output_dropped(Request& request) override;

private:
    void roll_back_frames_in_flight(Request& request, bool sampled);
    void roll_back_all_but_one(Request& request);
};

}  // namespace kvsim
