#include "sim/connector/multi_connector.h"

#include <fmt/format.h>

#include <stdexcept>

namespace kvsim {

// Each child's events prefixed "c<child> ", then "multi extra_async_saves r0:1,r1:2".
std::vector<LogEvent> MultiKVConnectorMetadata::log_events() const {
    std::vector<LogEvent> events;
    for (std::size_t i = 0; i < metadata.size(); ++i) {
        if (!metadata[i]) continue;
        for (LogEvent& event : metadata[i]->log_events()) {
            event.format = "c{child} " + event.format;
            event.fields.insert(event.fields.begin(), Field{.key = "child",
                                                            .kind = FieldKind::integer,
                                                            .value = static_cast<std::int64_t>(i)});
            events.push_back(std::move(event));
        }
    }
    if (!extra_async_saves.empty()) {
        CountList saves(extra_async_saves.begin(), extra_async_saves.end());
        events.push_back(make_event(EventCategory::meta, "multi extra_async_saves {extra_async_saves}")
                             .text("connector", "multi")
                             .request_counts("extra_async_saves", std::move(saves))
                             .take());
    }
    return events;
}

// MultiConnector.__init__ @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1: children in config order.
MultiConnectorScheduler::MultiConnectorScheduler(std::vector<std::unique_ptr<KVConnectorScheduler>> children,
                                                 const Variant& variant)
    : children_(std::move(children)), variant_(variant) {
    for (const auto& c : children_)
        if (!c) throw std::invalid_argument("MultiConnectorScheduler: null child");
}

// MultiConnector.get_num_new_matched_tokens @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1 (same in a4a2a8ee6926f64110185dcf028df78326563436)
MatchResult MultiConnectorScheduler::get_num_new_matched_tokens(Request& request, int num_computed_tokens) {
    MatchResult to_return{.num_tokens = 0, .load_async = false};
    for (std::size_t i = 0; i < children_.size(); ++i) {
        const MatchResult r = children_[i]->get_num_new_matched_tokens(request, num_computed_tokens);
        // A child still looking up: not done yet; later children are not asked.
        if (!r.num_tokens) return {.num_tokens = std::nullopt, .load_async = false};
        // The first child with new matched tokens is assigned to the request.
        if (to_return.num_tokens == 0 && *r.num_tokens > 0) {
            requests_to_connector_[request.id()] = static_cast<int>(i);
            to_return = r;
        }
    }
    return to_return;
}

// MultiConnector.update_state_after_alloc @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1 (losers get the real blocks, #46865);
// multi_loser_blocks=empty follows @ a4a2a8ee6926f64110185dcf028df78326563436 (losers get blocks.new_empty()).
void MultiConnectorScheduler::update_state_after_alloc(Request& request, const KVCacheBlocks& blocks,
                                                       int num_external_tokens) {
    auto it = requests_to_connector_.find(request.id());
    const int chosen = it == requests_to_connector_.end() ? -1 : it->second;
    const KVCacheBlocks empty_blocks = KVCacheBlocks::empty(blocks.block_ids.size());
    const KVCacheBlocks& loser_blocks =
        variant_.flag<&Variant::multi_loser_blocks>() == MultiLoserBlocks::real ? blocks : empty_blocks;
    for (std::size_t i = 0; i < children_.size(); ++i) {
        if (static_cast<int>(i) == chosen)
            children_[i]->update_state_after_alloc(request, blocks, num_external_tokens);
        else
            children_[i]->update_state_after_alloc(request, loser_blocks, 0);
    }
}

// MultiConnector.build_connector_meta @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
std::shared_ptr<const ConnectorMetadata> MultiConnectorScheduler::build_connector_meta(const SchedulerOutput& output) {
    auto meta = std::make_shared<MultiKVConnectorMetadata>();
    meta->metadata.reserve(children_.size());
    for (const auto& c : children_) meta->metadata.push_back(c->build_connector_meta(output));
    if (!extra_async_saves_.empty()) {
        meta->extra_async_saves = std::move(extra_async_saves_);
        extra_async_saves_.clear();
    }
    return meta;
}

// MultiConnector.update_connector_output @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1: every child sees the output (the
// finished sets are shared; per-child worker metadata is not modelled).
void MultiConnectorScheduler::update_connector_output(const KVConnectorOutput& output) {
    for (const auto& c : children_) c->update_connector_output(output);
}

// MultiConnector._aggregate_request_finished (via request_finished_all_groups) @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
FinishResult MultiConnectorScheduler::request_finished(Request& request, const std::vector<BlockId>& block_ids) {
    int async_saves = 0;
    for (const auto& c : children_)
        if (c->request_finished(request, block_ids).delay_free_blocks) ++async_saves;
    if (async_saves > 1) extra_async_saves_[request.id()] = async_saves - 1;
    requests_to_connector_.erase(request.id());
    return {.delay_free_blocks = async_saves > 0};
}

// MultiConnector.has_pending_push_work @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
bool MultiConnectorScheduler::has_pending_push_work() const {
    for (const auto& c : children_)
        if (c->has_pending_push_work()) return true;
    return false;
}

// MultiConnector.bind_gpu_block_pool @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
void MultiConnectorScheduler::bind_gpu_block_pool(BlockPool* pool) {
    for (const auto& c : children_) c->bind_gpu_block_pool(pool);
}

void MultiConnectorScheduler::append_pinned_blocks(std::vector<BlockId>& out) const {
    for (const auto& c : children_) c->append_pinned_blocks(out);
}

MultiConnectorWorker::MultiConnectorWorker(std::vector<std::unique_ptr<KVConnectorWorker>> children,
                                           const Variant& /*variant*/)
    : children_(std::move(children)) {
    for (const auto& c : children_)
        if (!c) throw std::invalid_argument("MultiConnectorWorker: null child");
}

// MultiConnector.bind_connector_metadata + start_load_kv @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1: merge the extra saves,
// then child i runs with element i.
void MultiConnectorWorker::bind_and_start(int step, const ConnectorMetadata* metadata) {
    const auto* meta = metadata_as<MultiKVConnectorMetadata>(metadata);
    if (metadata != nullptr && meta == nullptr)
        throw std::logic_error("MultiConnectorWorker: metadata is not MultiKVConnectorMetadata");
    if (meta != nullptr && meta->metadata.size() != children_.size())
        throw std::logic_error("MultiConnectorWorker: metadata does not match the children");
    if (meta != nullptr)
        for (const auto& [id, n] : meta->extra_async_saves) extra_async_saves_[id] = n;  // dict.update
    for (std::size_t i = 0; i < children_.size(); ++i)
        children_[i]->bind_and_start(step, meta != nullptr ? meta->metadata[i].get() : nullptr);
}

// MultiConnector.get_transfer_results + get_block_ids_with_load_errors @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1: a
// finished send is reported only when the last of the request's delaying children reports it.
KVConnectorOutput MultiConnectorWorker::get_finished(int step, const std::set<std::string>& finished_req_ids) {
    KVConnectorOutput out;
    for (const auto& c : children_) {
        KVConnectorOutput child = c->get_finished(step, finished_req_ids);
        // merge() moves the child's nodes over; what it leaves is already in `out`.
        out.finished_recving.merge(child.finished_recving);
        out.invalid_block_ids.merge(child.invalid_block_ids);
        out.completed_store_jobs.merge(child.completed_store_jobs);
        for (const auto& [job, n] : child.completed_store_jobs) out.completed_store_jobs[job] += n;
        for (const auto& id : child.finished_sending) {
            auto it = extra_async_saves_.find(id);
            if (it == extra_async_saves_.end()) {
                out.finished_sending.insert(id);
                continue;
            }
            if (it->second == 1)
                extra_async_saves_.erase(it);
            else
                --it->second;
        }
    }
    return out;
}

bool MultiConnectorWorker::busy() const {
    for (const auto& c : children_)
        if (c->busy()) return true;
    return false;
}

}  // namespace kvsim
