#include "sim/core/sched/async_scheduler.h"

#include "sim/common/model_check.h"
#include "sim/common/upstream_assertion.h"

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

bool AsyncScheduler::update_request_with_output(Request& req, const std::vector<TokenId>& sampled, bool is_stale) {
    if (req.async_tokens_to_discard > 0) {  // a step scheduled before a failed load rewound the request
        req.async_tokens_to_discard -= 1;
        return false;
    }
    const RequestStatus before = req.status;
    const int outputs_before = req.num_output_tokens();
    const bool stopped = Scheduler::update_request_with_output(req, sampled, is_stale);
    if (!is_stale) req.num_output_placeholders -= req.num_output_tokens() - outputs_before;
    if (req.num_output_placeholders < 0)
        throw UpstreamAssertion("negative_output_placeholders",
                                "vllm/v1/core/sched/async_scheduler.py AsyncScheduler._update_request_with_output",
                                "assert request.num_output_placeholders >= 0 (" + req.id() + ")", req.id());
    if (before == RequestStatus::running)
        kv_cache_manager_mut().cache_blocks(req, req.num_computed_tokens - req.num_output_placeholders);
    return stopped;
}

void AsyncScheduler::on_stale_output_dropped(Request& req) {
    if (req.async_tokens_to_discard > 0) req.async_tokens_to_discard -= 1;
}

void AsyncScheduler::on_rewound_by_failed_load(Request& req, bool sampled) {
    switch (variant().flag<&Variant::failed_load_placeholders>()) {
        case FailedLoadPlaceholders::kept: return;
        case FailedLoadPlaceholders::rolled_back: roll_back_frames_in_flight(req, sampled); break;
        case FailedLoadPlaceholders::rolled_back_but_one: roll_back_all_but_one(req); break;
    }
    // rollback_full_prompt=capped (kvsim's fix): a sharer reverted to its count before the processed step can
    // be left with every token computed, its sampled token and placeholders gone: nothing would schedule it.
    if (req.num_computed_tokens >= req.num_tokens() &&
        variant().flag<&Variant::rollback_full_prompt>() == RollbackFullPrompt::capped)
        req.num_computed_tokens = req.num_tokens() - 1;
}

// #45430's rule: the processed frame is in flight as a placeholder or, when an earlier rewind (a scan of a
// step before the one that scheduled it) already moved it there, as a discard; update_from_output skips
// it either way, so only the others are discarded.
void AsyncScheduler::roll_back_frames_in_flight(Request& req, bool sampled) {
    const int this_step = sampled ? 1 : 0;
    model_check(req.num_output_placeholders + req.async_tokens_to_discard >= this_step,
                "a sampling step's frame is in flight");
    req.async_tokens_to_discard += req.num_output_placeholders - this_step;
    req.num_output_placeholders = 0;
}

// Scheduler._update_requests_with_invalid_blocks @ dd5c5168d45287542ac34c753bf9d133f66c4f85 (#49252, open): one frame
// is taken to be the processed one, skipped by update_from_output, whether or not the step carries it.
void AsyncScheduler::roll_back_all_but_one(Request& req) {
    if (req.num_output_placeholders == 0) return;
    req.async_tokens_to_discard += req.num_output_placeholders - 1;
    req.num_output_placeholders = 0;
}

}  // namespace kvsim
