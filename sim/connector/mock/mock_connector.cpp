#include "sim/connector/mock/mock_connector.h"

#include "sim/common/event_log.h"
#include "sim/connector/due_receives.h"

namespace kvsim {

std::vector<LogEvent> MockMetadata::log_events() const {
    std::vector<LogEvent> events;
    if (!requests.empty())
        events.push_back(make_event(EventCategory::meta, "mock requests={requests}")
                             .text("connector", "mock")
                             .requests("requests", requests)
                             .take());
    for (const auto& id : async_loads)
        events.push_back(make_event(EventCategory::meta, "mock load {request}")
                             .text("connector", "mock")
                             .text("action", "load")
                             .request(id)
                             .take());
    return events;
}

MatchResult MockConnectorScheduler::get_num_new_matched_tokens(Request& request, int /*num_computed_tokens*/) {
    auto [it, fresh] = defers_left_.try_emplace(request.id(), spec_.defer);
    if (it->second > 0) {
        --it->second;
        return {.num_tokens = std::nullopt, .load_async = false};
    }
    const int matched = request.kv_transfer_params.external_tokens.value_or(spec_.matched);
    return {.num_tokens = matched, .load_async = spec_.is_async};
}

void MockConnectorScheduler::update_state_after_alloc(Request& request, const KVCacheBlocks& /*blocks*/,
                                                      int num_external_tokens) {
    if (spec_.is_async && num_external_tokens > 0) pending_async_loads_.push_back(request.id());
}

std::shared_ptr<const ConnectorMetadata> MockConnectorScheduler::build_connector_meta(const SchedulerOutput& output) {
    auto meta = std::make_shared<MockMetadata>();
    for (const auto& req : output.scheduled_new_reqs) meta->requests.push_back(req.req_id);
    for (const auto& id : output.scheduled_cached_reqs.req_ids)
        if (output.scheduled_cached_reqs.resumed_req_ids.contains(id)) meta->requests.push_back(id);
    meta->async_loads = std::move(pending_async_loads_);
    pending_async_loads_.clear();
    return meta;
}

void MockConnectorWorker::bind_and_start(int step, const ConnectorMetadata* metadata) {
    const auto* meta = metadata_as<MockMetadata>(metadata);
    if (meta == nullptr) return;
    for (const auto& id : meta->async_loads)
        if (!scripted_.covers_recv(id, step)) inflight_[id] = step + env_.draw_load_delay();
}

KVConnectorOutput MockConnectorWorker::get_finished(int step, const std::set<std::string>& /*finished_req_ids*/) {
    KVConnectorOutput out;
    report_due_receives(inflight_, step, out);
    return out;
}

}  // namespace kvsim
