#include "sim/connector/mooncake/mooncake_connector_scheduler.h"

#include <fmt/format.h>

#include "sim/common/upstream_assertion.h"
#include "sim/common/event_log.h"

namespace kvsim {
namespace {

constexpr const char* kSchedulerSite =
    "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py MooncakeConnectorScheduler.";

[[noreturn]] void fail_not_producer(const char* function) {
    throw UpstreamAssertion("p2p_remote_prefill_on_producer", std::string(kSchedulerSite) + function,
                            "assert not self.is_kv_producer");
}

[[noreturn]] void fail_not_consumer(const char* function) {
    throw UpstreamAssertion("p2p_remote_decode_on_consumer", std::string(kSchedulerSite) + function,
                            "assert not self.is_kv_consumer");
}

}  // namespace

// Block groups render as "()" for none, else one "[..]" per group: "[1,2]" or "[1,2][7]".
std::vector<LogEvent> MooncakeConnectorMetadata::log_events() const {
    std::vector<LogEvent> events;
    auto event = [](const char* format, const char* action, const std::string& id) {
        return make_event(EventCategory::meta, format).text("connector", "p2p").text("action", action).request(id).take();
    };
    for (const auto& pull : reqs_to_recv) {
        events.push_back(event("p2p pull {request} {blocks}", "pull", pull.req_id));
        events.back().fields.push_back(
            Field{.key = "blocks", .kind = FieldKind::block_groups, .value = to_group_list(pull.local_block_ids)});
    }
    for (const auto& send : reqs_to_send) {
        const bool pre_register = !any_blocks(send.block_ids);
        events.push_back(event(pre_register ? "p2p send {request} pre-register" : "p2p send {request} {blocks}",
                               pre_register ? "pre_register" : "send", send.req_id));
        events.back().fields.push_back(
            Field{.key = "blocks", .kind = FieldKind::block_groups, .value = to_group_list(send.block_ids)});
    }
    for (const auto& id : reqs_not_processed) events.push_back(event("p2p not_processed {request}", "not_processed", id));
    return events;
}

// MooncakeConnectorScheduler.__init__ @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1: is_kv_producer / is_kv_consumer are
// `kv_role == "kv_producer"` / `== "kv_consumer"`; kv_both sets neither (both paths active).
MooncakeConnectorScheduler::MooncakeConnectorScheduler(const ConnectorSpec& spec, EventLog& log,
                                                       const Variant& variant)
    : spec_(spec),
      log_(log),
      variant_(variant),
      is_kv_producer_(spec.role == KvRole::kv_producer),
      is_kv_consumer_(spec.role == KvRole::kv_consumer) {}

// MooncakeConnectorScheduler.get_num_new_matched_tokens @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
MatchResult MooncakeConnectorScheduler::get_num_new_matched_tokens(Request& request, int num_computed_tokens) {
    const KvTransferParams& params = request.kv_transfer_params;
    if (!params.do_remote_prefill && !params.do_remote_decode) return {.num_tokens = 0, .load_async = false};  // `if not params`
    if (params.do_remote_prefill) {
        if (is_kv_producer_) fail_not_producer("get_num_new_matched_tokens");
        // _get_remote_prefill_token_count is the identity without Mamba layers.
        const int count = request.num_prompt_tokens() - num_computed_tokens;
        if (count > 0) return {.num_tokens = count, .load_async = true};
    }
    return {.num_tokens = 0, .load_async = false};
}

// MooncakeConnectorScheduler.update_state_after_alloc @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
void MooncakeConnectorScheduler::update_state_after_alloc(Request& request, const KVCacheBlocks& blocks,
                                                          int num_external_tokens) {
    KvTransferParams& params = request.kv_transfer_params;
    if (!params.do_remote_prefill && !params.do_remote_decode) return;
    if (params.do_remote_prefill) {
        if (is_kv_producer_) fail_not_producer("update_state_after_alloc");
        // Unhashed blocks to pull when there are external tokens; otherwise `()`, a
        // notify-only pull so P frees its blocks (full local hit, or a MultiConnector
        // sibling won the load). get_sw_clipped_blocks is the identity without HMA.
        // p2p_empty_pull=only_when_loading (NIXL's rule, vllm-project/vllm#56640): the notify-only pull is not
        // reported, since the request does not await this connector's KV.
        const bool loads = num_external_tokens > 0;
        queue_pull(request.id(), loads ? blocks.unhashed_block_ids : GroupBlockIds{},
                   loads || variant_.flag<&Variant::p2p_empty_pull>() == P2PEmptyPull::reported);
        // Only trigger 1 KV transfer per request.
        params.do_remote_prefill = false;
    } else if (params.do_remote_decode) {
        if (is_kv_consumer_) fail_not_consumer("update_state_after_alloc");
        // An empty entry pre-registers the send slot on the worker.
        reqs_need_send_[request.id()] = GroupBlockIds{};
    }
}

void MooncakeConnectorScheduler::queue_pull(const std::string& req_id, GroupBlockIds blocks, bool notify_scheduler) {
    reqs_need_recv_[req_id] = std::move(blocks);
    if (notify_scheduler)
        silent_pulls_.erase(req_id);
    else
        silent_pulls_.insert(req_id);
}

// MooncakeConnectorScheduler.build_connector_meta @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
std::shared_ptr<const ConnectorMetadata> MooncakeConnectorScheduler::build_connector_meta(const SchedulerOutput&) {
    auto meta = std::make_shared<MooncakeConnectorMetadata>();
    if (!is_kv_producer_) {
        for (const auto& [id, blocks] : reqs_need_recv_)
            meta->reqs_to_recv.push_back(
                {.req_id = id, .local_block_ids = blocks, .notify_scheduler = !silent_pulls_.contains(id)});
        reqs_need_recv_.clear();
        silent_pulls_.clear();
    }
    if (!is_kv_consumer_) {
        for (const auto& [id, blocks] : reqs_need_send_) meta->reqs_to_send.push_back({.req_id = id, .block_ids = blocks});
        reqs_need_send_.clear();
        meta->reqs_not_processed = std::move(reqs_not_processed_);
        reqs_not_processed_.clear();
    }
    return meta;
}

// MooncakeConnectorScheduler.update_connector_output @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1: only prefill-side replay
// checkpoints (not modelled), so nothing to do.
void MooncakeConnectorScheduler::update_connector_output(const KVConnectorOutput&) {}

// MooncakeConnectorScheduler.request_finished @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1 (block_ids is group 0; the
// single-group request_finished and request_finished_all_groups agree)
FinishResult MooncakeConnectorScheduler::request_finished(Request& request, const std::vector<BlockId>& block_ids) {
    KvTransferParams& params = request.kv_transfer_params;
    if (!params.do_remote_prefill && !params.do_remote_decode) return {.delay_free_blocks = false};  // no params / no transfer_id

    if (params.do_remote_prefill) {
        // Aborted before update_state_after_alloc ever ran: queue an empty pull so the
        // prefill instance frees its blocks.
        if (is_kv_producer_) fail_not_producer("request_finished");
        // vllm-project/vllm#50565 (p2p_abort_pull=silent) and NIXL's rule (p2p_empty_pull=only_when_loading):
        // nobody awaits this pull, so its answer is not reported.
        const bool report = variant_.flag<&Variant::p2p_abort_pull>() == P2PAbortPull::reported &&
                            variant_.flag<&Variant::p2p_empty_pull>() == P2PEmptyPull::reported;
        queue_pull(request.id(), GroupBlockIds{}, report);
        params.do_remote_prefill = false;
        log_.event(EventCategory::p2p, "{request} finished before alloc: notify-only pull queued")
            .text("action", "finished_before_alloc")
            .request(request.id());
        return {.delay_free_blocks = false};
    }

    if (!params.do_remote_decode) return {.delay_free_blocks = false};
    if (is_kv_consumer_) fail_not_consumer("request_finished");

    if (request.status != RequestStatus::finished_length_capped) {
        // Abort or any other stop: P will never send; it frees now.
        reqs_not_processed_.insert(request.id());
        log_.event(EventCategory::p2p, "{request} {status}: not processed")
            .text("action", "not_processed")
            .request(request.id())
            .status("status", to_string(request.status));
        return {.delay_free_blocks = false};
    }

    const GroupBlockIds groups{block_ids};
    const bool delay_free_blocks = any_blocks(groups);
    if (delay_free_blocks) reqs_need_send_[request.id()] = groups;
    log_.event(EventCategory::p2p, delay_free_blocks ? "{request} length capped: send queued {blocks}, delay free"
                                                     : "{request} length capped: no blocks")
        .text("action", "length_capped")
        .request(request.id())
        .block_groups("blocks", groups)
        .flag("delay_free", delay_free_blocks);
    return {.delay_free_blocks = delay_free_blocks};
}

}  // namespace kvsim
