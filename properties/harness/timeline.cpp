#include "properties/harness/timeline.h"

#include <algorithm>
#include <map>

#include "properties/harness/timeline_transfers.h"
#include "sim/connector/multi_connector.h"
#include "sim/engine/engine.h"

namespace kvsim {

std::string_view to_string(LaneStatus status) { return enum_name(kLaneStatusNames, status); }

int Timeline::lane_of(std::string_view request) const {
    const auto it = std::find(lanes.begin(), lanes.end(), request);
    return it == lanes.end() ? -1 : static_cast<int>(it - lanes.begin());
}

namespace {

LaneStatus lane_status(const Request& request, const Scheduler& scheduler) {
    switch (request.status) {
        case RequestStatus::waiting: {
            const auto& skipped = scheduler.skipped_waiting();
            return std::find(skipped.begin(), skipped.end(), request.id()) != skipped.end() ? LaneStatus::skipped
                                                                                             : LaneStatus::waiting;
        }
        case RequestStatus::waiting_for_remote_kvs: return LaneStatus::waiting_for_remote_kvs;
        case RequestStatus::running: return LaneStatus::running;
        case RequestStatus::preempted: return LaneStatus::preempted;
        default: return LaneStatus::finished;
    }
}

// The (lane, tokens) pairs of this step's `schedule` event.
void record_scheduled(const std::vector<LogEvent>& events, std::size_t first, std::size_t end,
                      const std::map<std::string, int>& lanes, TimelineStep& out) {
    for (std::size_t i = first; i < end; ++i) {
        if (events[i].category != EventCategory::schedule) continue;
        for (const char* key : {"new", "cached"})
            if (const CountList* counts = events[i].value<CountList>(key))
                for (const auto& [request, tokens] : *counts)
                    if (auto it = lanes.find(request); it != lanes.end())
                        out.scheduled.emplace_back(it->second, static_cast<int>(tokens));
    }
}

}  // namespace

TimelineRecorder::TimelineRecorder(const Engine& engine) : engine_(engine) {
    const BlockPool& pool = engine.scheduler().kv_cache_manager().block_pool();
    timeline_.num_blocks = pool.num_blocks();
    timeline_.num_ranks = engine.trace().workers.ranks;
    last_block_.resize(pool.num_blocks());
    for (BlockId id = 0; id < pool.num_blocks(); ++id) last_block_[id] = BlockChange{id, 0, false, 0, 0};
}

int TimelineRecorder::lane(const std::string& request) {
    if (auto it = lane_index_.find(request); it != lane_index_.end()) return it->second;
    const int index = static_cast<int>(timeline_.lanes.size());
    timeline_.lanes.push_back(request);
    lane_index_.emplace(request, index);
    last_request_.emplace_back();
    child_recorded_.push_back(false);
    return index;
}

void TimelineRecorder::record_requests(TimelineStep& out) {
    const Scheduler& scheduler = engine_.scheduler();
    const KVCacheManager& kvm = scheduler.kv_cache_manager();
    std::vector<bool> alive(timeline_.lanes.size(), false);
    for (const auto& [id, request] : scheduler.requests()) {
        const int index = lane(id);
        alive.resize(timeline_.lanes.size(), false);
        alive[static_cast<std::size_t>(index)] = true;
        RequestChange now{index, lane_status(*request, scheduler), std::string(to_string(request->status)),
                          request->num_computed_tokens, kvm.get_block_ids(id)};
        auto& last = last_request_[static_cast<std::size_t>(index)];
        if (!last || !(*last == now)) {
            out.requests.push_back(now);
            last = std::move(now);
        }
    }
    for (std::size_t i = 0; i < alive.size(); ++i) {
        auto& last = last_request_[i];
        if (alive[i] || !last || last->status == LaneStatus::freed) continue;
        RequestChange gone{static_cast<int>(i), LaneStatus::freed, "FREED", last->num_computed_tokens, {}};
        out.requests.push_back(gone);
        last = std::move(gone);
    }
}

void TimelineRecorder::record_blocks(TimelineStep& out) {
    const BlockPool& pool = engine_.scheduler().kv_cache_manager().block_pool();
    std::vector<int> pins(pool.num_blocks(), 0);
    if (const KVConnectorScheduler* connector = engine_.connector())
        for (BlockId id : connector->pinned_blocks())
            if (id < pins.size()) ++pins[id];
    for (BlockId id = 0; id < pool.num_blocks(); ++id) {
        const KVCacheBlock& block = pool.block(id);
        const BlockChange now{id, block.ref_cnt, block.hash.has_value(), pins[id], block.generation};
        if (now == last_block_[id]) continue;
        out.blocks.push_back(now);
        last_block_[id] = now;
    }
}

void TimelineRecorder::record_chosen_children(TimelineStep& out) {
    const auto* multi = dynamic_cast<const MultiConnectorScheduler*>(engine_.connector());
    if (multi == nullptr) return;
    for (const auto& [request, child] : multi->requests_to_connector()) {
        const int index = lane(request);
        if (child_recorded_[static_cast<std::size_t>(index)]) continue;
        child_recorded_[static_cast<std::size_t>(index)] = true;
        out.chosen_child.emplace_back(index, std::string(multi->child(static_cast<std::size_t>(child)).name()));
    }
}

void TimelineRecorder::record(int step) {
    TimelineStep out;
    out.step = step;
    const std::vector<LogEvent>& events = engine_.log().events();
    out.first_event = events_seen_;
    out.end_event = events.size();
    events_seen_ = events.size();
    record_requests(out);
    record_blocks(out);
    record_chosen_children(out);
    record_scheduled(events, out.first_event, out.end_event, lane_index_, out);
    timeline_.steps.push_back(std::move(out));
}

Timeline TimelineRecorder::finish(const std::vector<LogEvent>& events) {
    if (events_seen_ < events.size()) {  // the liveness finding, logged after the last step
        TimelineStep tail;
        tail.step = events.back().step;
        tail.first_event = events_seen_;
        tail.end_event = events.size();
        timeline_.steps.push_back(std::move(tail));
    }
    read_transfers(events, timeline_);
    return std::move(timeline_);
}

}  // namespace kvsim
