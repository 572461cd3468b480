#include "sim/connector/stand_in_connector.h"

#include <fmt/format.h>

#include "sim/common/event_log.h"
#include "sim/connector/due_receives.h"

namespace kvsim {

std::vector<LogEvent> StandInMetadata::log_events() const {
    std::vector<LogEvent> events;
    for (const auto& [id, blocks] : loads)
        events.push_back(make_event(EventCategory::meta, "stand_in load {request} {blocks}")
                             .text("connector", "stand_in")
                             .text("action", "load")
                             .request(id)
                             .blocks("blocks", blocks)
                             .take());
    return events;
}

MatchResult StandInConnectorScheduler::get_num_new_matched_tokens(Request& request, int num_computed_tokens) {
    if (spec_.role == KvRole::kv_producer || !request.kv_transfer_params.do_remote_prefill)
        return {.num_tokens = 0, .load_async = false};
    const int count = request.num_prompt_tokens() - num_computed_tokens;
    if (count > 0) return {.num_tokens = count, .load_async = true};
    return {.num_tokens = 0, .load_async = false};
}

void StandInConnectorScheduler::update_state_after_alloc(Request& request, const KVCacheBlocks& blocks,
                                                         int num_external_tokens) {
    if (!request.kv_transfer_params.do_remote_prefill) return;
    if (num_external_tokens > 0) pending_loads_.emplace_back(request.id(), blocks.unhashed_block_ids.at(0));
    request.kv_transfer_params.do_remote_prefill = false;  // one transfer per request
}

std::shared_ptr<const ConnectorMetadata> StandInConnectorScheduler::build_connector_meta(const SchedulerOutput&) {
    auto meta = std::make_shared<StandInMetadata>();
    meta->loads = std::move(pending_loads_);
    pending_loads_.clear();
    return meta;
}

FinishResult StandInConnectorScheduler::request_finished(Request& request, const std::vector<BlockId>&) {
    request.kv_transfer_params.do_remote_prefill = false;
    return {.delay_free_blocks = false};
}

void StandInConnectorWorker::bind_and_start(int step, const ConnectorMetadata* metadata) {
    const auto* meta = metadata_as<StandInMetadata>(metadata);
    if (meta == nullptr) return;
    for (const auto& [id, blocks] : meta->loads) inflight_[id] = step + spec_.load_delay;
}

KVConnectorOutput StandInConnectorWorker::get_finished(int step, const std::set<std::string>&) {
    KVConnectorOutput out;
    report_due_receives(inflight_, step, out);
    return out;
}

}  // namespace kvsim
