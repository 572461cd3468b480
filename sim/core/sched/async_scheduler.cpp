#include "sim/core/sched/async_scheduler.h"

#include "sim/common/model_check.h"

namespace kvsim {
namespace {

constexpr ModelCheck model_check{.component = "async scheduler model"};

}  // namespace

void AsyncScheduler::update_after_schedule(const SchedulerOutput& out) {
    Scheduler::update_after_schedule(out);
    for (const auto& [id, n] : out.num_scheduled_tokens) {
        Request& req = request(id);
        if (req.is_prefill_chunk) continue;
        req.num_output_placeholders += 1;  // num_sampled_tokens_per_step, no spec tokens
    }
}

bool AsyncScheduler::update_request_with_output(Request& req, const std::vector<TokenId>& sampled) {
    if (req.async_tokens_to_discard > 0) {  // a step scheduled before a failed load rewound the request
        req.async_tokens_to_discard -= 1;
        return false;
    }
    const RequestStatus before = req.status;
    const int outputs_before = req.num_output_tokens();
    const bool stopped = Scheduler::update_request_with_output(req, sampled);
    req.num_output_placeholders -= req.num_output_tokens() - outputs_before;
    model_check(req.num_output_placeholders >= 0, "assert request.num_output_placeholders >= 0");
    if (before == RequestStatus::running)
        kv_cache_manager_mut().cache_blocks(req, req.num_computed_tokens - req.num_output_placeholders);
    return stopped;
}

void AsyncScheduler::on_rewound_by_failed_load(Request& req, bool sampled) {
    if (variant().flag<&Variant::failed_load_placeholders>() != FailedLoadPlaceholders::rolled_back) return;
    const int this_step = sampled ? 1 : 0;
    model_check(req.num_output_placeholders >= this_step, "a sampling step holds its placeholder");
    req.async_tokens_to_discard += req.num_output_placeholders - this_step;
    req.num_output_placeholders = 0;
    // rollback_full_prompt=capped (kvsim's fix): a sharer reverted to its count before the processed step can
    // be left with every token computed, its sampled token and placeholders gone: nothing would schedule it.
    if (req.num_computed_tokens >= req.num_tokens() &&
        variant().flag<&Variant::rollback_full_prompt>() == RollbackFullPrompt::capped)
        req.num_computed_tokens = req.num_tokens() - 1;
}

}  // namespace kvsim
