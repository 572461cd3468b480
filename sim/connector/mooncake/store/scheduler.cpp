#include "sim/connector/mooncake/store/scheduler.h"

#include <algorithm>
#include <span>

#include <fmt/format.h>

#include "sim/common/upstream_assertion.h"
#include "sim/connector/mooncake/store/worker.h"
#include "sim/core/block_pool.h"
#include "sim/common/event_log.h"
#include "sim/environment/fault_schedule.h"

namespace kvsim {
namespace {

constexpr const char* kSchedulerPy = "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/scheduler.py";

std::string site(const char* function) { return fmt::format("{} MooncakeStoreScheduler.{}", kSchedulerPy, function); }

template <class V>
std::optional<V> pop(std::map<std::string, V>& map, const std::string& key) {
    auto it = map.find(key);
    if (it == map.end()) return std::nullopt;
    V value = std::move(it->second);
    map.erase(it);
    return value;
}

// groups = (table,): the one group of the current table, in the lists the meta already holds.
void assign_single_group(GroupBlockIds& groups, const std::vector<BlockId>& table) {
    groups.resize(1);
    groups.front().assign(table.begin(), table.end());
}

// MooncakeStoreConnectorMetadata.add_request, for a from_request_tracker result that is not None.
void add_request(StoreMetadata& meta, std::optional<ReqMeta> req_meta) {
    if (req_meta) meta.requests.push_back(std::move(*req_meta));
}

}  // namespace

MooncakeStoreScheduler::MooncakeStoreScheduler(const ConnectorSpec& spec, const EngineConfig& engine,
                                               const Variant& variant, int num_workers, KvStore& store,
                                               FaultSchedule& faults, EventLog& log)
    : spec_(spec),
      variant_(variant),
      block_size_(engine.block_size),
      num_workers_(num_workers),
      store_(store),
      faults_(faults),
      log_(log) {}

const RequestTracker* MooncakeStoreScheduler::tracker(const std::string& req_id) const {
    return request_trackers_.find(req_id);
}

MatchResult MooncakeStoreScheduler::get_num_new_matched_tokens(Request& request, int num_computed_tokens) {
    if (!spec_.enable_lookup) return {.num_tokens = 0, .load_async = false};
    // Without partial hash hits, prompts shorter than one block are not looked up.
    if (request.num_tokens() < block_size_) return {.num_tokens = 0, .load_async = false};

    // store/worker.py LookupKeyClient.lookup @ 003df2961dd8830c317a61f9745ccd557da9fa06: the future is submitted on the first call and
    // answers from the store as it was then; non_block returns None until it is done.
    auto pending = pending_lookups_.find(request.id());
    const int hit = pending != pending_lookups_.end()
                        ? pending->second
                        : store_lookup_hit_tokens(store_, request.num_tokens(), request.block_hashes(), block_size_);
    if (spec_.lookup_async && faults_.lookup_pending(request.id())) {
        pending_lookups_[request.id()] = hit;
        return {.num_tokens = std::nullopt, .load_async = false};
    }
    if (pending != pending_lookups_.end()) pending_lookups_.erase(pending);

    const int need_to_allocate = hit < num_computed_tokens ? 0 : hit - num_computed_tokens;
    if (need_to_allocate <= 0) return {.num_tokens = 0, .load_async = false};
    load_specs_[request.id()] = LoadSpec{
        .vllm_cached_tokens = num_computed_tokens, .kvpool_cached_tokens = hit, .can_load = false, .token_len = 0};
    return {.num_tokens = need_to_allocate, .load_async = spec_.load_async};
}

void MooncakeStoreScheduler::update_state_after_alloc(Request& request, const KVCacheBlocks& blocks,
                                                      int num_external_tokens) {
    GroupBlockIds local_block_ids;
    if (num_external_tokens > 0) local_block_ids = blocks.block_ids;
    unfinished_requests_[request.id()] = {.request = &request, .block_ids = std::move(local_block_ids)};
    unfinished_request_ids_.insert(request.id());

    auto it = load_specs_.find(request.id());
    if (it == load_specs_.end()) return;
    LoadSpec& load_spec = it->second;
    if (num_external_tokens == 0) {
        load_spec.can_load = false;
        return;
    }
    if (num_external_tokens != load_spec.kvpool_cached_tokens - load_spec.vllm_cached_tokens)
        throw UpstreamAssertion("store_load_token_mismatch", site("update_state_after_alloc"),
                                fmt::format("Mismatch in number of tokens: {} vs {} - {} for request {}",
                                            num_external_tokens, load_spec.kvpool_cached_tokens,
                                            load_spec.vllm_cached_tokens, request.id()),
                                request.id());
    load_spec.can_load = true;
}

std::shared_ptr<const ConnectorMetadata> MooncakeStoreScheduler::build_connector_meta(const SchedulerOutput& output) {
    forget_finished_and_preempted(output);

    auto meta = std::make_shared<StoreMetadata>();
    meta->preempted_req_ids = output.preempted_req_ids;

    add_new_requests(*meta, output);
    if (spec_.role != KvRole::kv_consumer || spec_.save_decode_cache) add_cached_requests(*meta, output);
    add_pending_load_requests(*meta, output);

    apply_current_save_block_ids(*meta, output);
    if (variant_.flag<&Variant::save_block_refs>() == SaveBlockRefs::store_job_pins) reference_save_blocks(*meta);
    return meta;
}

// MooncakeStoreScheduler.build_connector_meta @ a83dffb9ea007219cd877492e020ec6bee45c6a3: finished and preempted requests first.
void MooncakeStoreScheduler::forget_finished_and_preempted(const SchedulerOutput& output) {
    for (const auto& id : output.finished_req_ids) {
        pending_lookups_.erase(id);  // client.discard
        load_specs_.erase(id);
        request_trackers_.erase(id);
        unfinished_requests_.erase(id);
        unfinished_request_ids_.erase(id);
    }
    for (const auto& id : output.preempted_req_ids) {
        load_specs_.erase(id);
        if (RequestTracker* tracker = request_trackers_.find(id)) tracker->reset();
        unfinished_requests_.erase(id);
    }
}

// MooncakeStoreScheduler.build_connector_meta @ a83dffb9ea007219cd877492e020ec6bee45c6a3: new requests (model runner v2
// also folds resumed requests in here, with prefill_token_ids = all tokens: the prefill range is
// the request's whole length).
void MooncakeStoreScheduler::add_new_requests(StoreMetadata& meta, const SchedulerOutput& output) {
    const bool is_consumer = spec_.role == KvRole::kv_consumer;
    for (const auto& nr : output.scheduled_new_reqs) {
        auto load_spec = pop(load_specs_, nr.req_id);
        const int num_tokens_to_compute = nr.num_computed_tokens + output.num_scheduled_tokens.at(nr.req_id);
        const UnfinishedEntry* entry = unfinished_requests_.find(nr.req_id);
        if (entry == nullptr)
            throw UpstreamAssertion("store_new_request_untracked", site("build_connector_meta"),
                                    "assert request.req_id in self._unfinished_requests (" + nr.req_id + ")",
                                    nr.req_id);
        const Request& request = *entry->request;
        RequestTracker& tracker = request_trackers_[nr.req_id];
        tracker = RequestTracker{.req_id = nr.req_id,
                                 .token_len = num_tokens_to_compute,
                                 .allocated_block_ids = GroupBlockIds{nr.block_ids},
                                 .num_saved_tokens = 0,
                                 .has_pending_offload = false,
                                 .prefill_end_tokens = request.num_tokens()};
        add_request(meta, ReqMeta::from_request_tracker(tracker, block_size_, load_spec, is_consumer,
                                                        request.block_hashes()));
    }
}

// MooncakeStoreScheduler.build_connector_meta @ a83dffb9ea007219cd877492e020ec6bee45c6a3: cached requests, running or
// (model runner v1) resumed from preemption.
void MooncakeStoreScheduler::add_cached_requests(StoreMetadata& meta, const SchedulerOutput& output) {
    const CachedRequestData& cached = output.scheduled_cached_reqs;
    for (std::size_t i = 0; i < cached.size(); ++i) {
        const std::string& req_id = cached.req_ids[i];
        // the core's one KV cache group: upstream's new_block_ids tuple of one list
        std::optional<GroupBlockSpan> new_block_ids;
        if (cached.new_block_ids[i]) new_block_ids = GroupBlockSpan(&*cached.new_block_ids[i], 1);
        if (cached.resumed_req_ids.contains(req_id)) {
            if (new_block_ids) add_resumed_request(meta, output, req_id, *new_block_ids);
            continue;
        }
        add_running_request(meta, output, i, new_block_ids);
    }
}

// MooncakeStoreScheduler.build_connector_meta @ a83dffb9ea007219cd877492e020ec6bee45c6a3: a request resumed from preemption.
void MooncakeStoreScheduler::add_resumed_request(StoreMetadata& meta, const SchedulerOutput& output,
                                                 const std::string& req_id, GroupBlockSpan new_block_ids) {
    auto load_spec = pop(load_specs_, req_id);
    const UnfinishedEntry* entry = unfinished_requests_.find(req_id);
    if (entry == nullptr)
        throw UpstreamAssertion("store_resumed_request_untracked", site("build_connector_meta"),
                                "TypeError: 'NoneType' object is not subscriptable (resumed request " + req_id +
                                    " is not in _unfinished_requests)",
                                req_id);
    const Request& request = *entry->request;
    RequestTracker& tracker = request_trackers_[req_id];
    tracker = RequestTracker{.req_id = req_id,
                             .token_len = request.num_computed_tokens + output.num_scheduled_tokens.at(req_id),
                             .allocated_block_ids = GroupBlockIds(new_block_ids.begin(), new_block_ids.end()),
                             .num_saved_tokens = 0,
                             .has_pending_offload = false,
                             .prefill_end_tokens = request.num_tokens()};
    add_request(meta, ReqMeta::from_request_tracker(tracker, block_size_, load_spec,
                                                    spec_.role == KvRole::kv_consumer, request.block_hashes()));
}

// MooncakeStoreScheduler.build_connector_meta @ a83dffb9ea007219cd877492e020ec6bee45c6a3: a running request, the `i`th cached one.
void MooncakeStoreScheduler::add_running_request(StoreMetadata& meta, const SchedulerOutput& output, std::size_t i,
                                                 std::optional<GroupBlockSpan> new_block_ids) {
    const CachedRequestData& cached = output.scheduled_cached_reqs;
    const std::string& req_id = cached.req_ids[i];
    RequestTracker* found = request_trackers_.find(req_id);
    if (found == nullptr)
        throw UpstreamAssertion("store_tracker_missing", site("build_connector_meta"),
                                fmt::format("KeyError: '{}'", req_id), req_id);
    RequestTracker& tracker = *found;
    // The count before this step, so the step that completes the prompt is still prefill.
    const bool is_decode = cached.num_computed_tokens[i] >= tracker.prefill_end_tokens;
    if (is_decode && !spec_.save_decode_cache) return;

    const int num_new_tokens = output.num_scheduled_tokens.at(req_id);
    const UnfinishedEntry* entry = unfinished_requests_.find(req_id);
    if (entry == nullptr)
        throw UpstreamAssertion("store_request_not_unfinished", site("build_connector_meta"),
                                fmt::format("ValueError: Request {} is not in _unfinished_requests", req_id), req_id);
    const Request& request = *entry->request;
    // all_token_ids[token_len : token_len + scheduled]: spec-decode drafts are not in it yet.
    const int end = std::min(tracker.token_len + num_new_tokens, request.num_tokens());
    tracker.token_len += std::max(end - tracker.token_len, 0);
    // A block is usually allocated before the step that fills it.
    if (new_block_ids) tracker.update(*new_block_ids);
    if (spec_.role == KvRole::kv_consumer && !is_decode) return;
    add_request(meta, ReqMeta::from_request_tracker(tracker, block_size_, std::nullopt, false, request.block_hashes()));
}

// MooncakeStoreScheduler.build_connector_meta @ a83dffb9ea007219cd877492e020ec6bee45c6a3: requests with pending load
// specs, scheduled neither as new nor as cached.
void MooncakeStoreScheduler::add_pending_load_requests(StoreMetadata& meta, const SchedulerOutput& output) {
    if (load_specs_.empty()) return;  // every entry below would find no load spec to pop
    const bool is_consumer = spec_.role == KvRole::kv_consumer;
    std::set<std::string> scheduled;
    for (const auto& nr : output.scheduled_new_reqs) scheduled.insert(nr.req_id);
    scheduled.insert(output.scheduled_cached_reqs.req_ids.begin(), output.scheduled_cached_reqs.req_ids.end());
    for (const auto& [req_id, entry] : unfinished_requests_) {
        if (scheduled.contains(req_id)) continue;
        auto load_spec = pop(load_specs_, req_id);
        if (!load_spec) continue;
        // #54643: a LoadSpec this connector does not own a load for is dropped before any tracker exists.
        if (!load_spec->can_load && variant_.flag<&Variant::pending_load_guard>() == PendingLoadGuard::on) continue;
        RequestTracker& tracker = request_trackers_[req_id];
        tracker = RequestTracker{.req_id = req_id,
                                 .token_len = load_spec->kvpool_cached_tokens,
                                 .allocated_block_ids = entry.block_ids,
                                 .num_saved_tokens = 0,
                                 .has_pending_offload = false,
                                 .prefill_end_tokens = 0};
        // Upstream passes skip_save=None here; seed 000's rejected fix passes is_consumer.
        const std::optional<bool> skip_save = variant_.flag<&Variant::pending_skip_save>() == PendingSkipSave::is_consumer
                                                  ? std::optional<bool>(is_consumer)
                                                  : std::nullopt;
        add_request(meta, ReqMeta::from_request_tracker(tracker, block_size_, load_spec, skip_save,
                                                        entry.request->block_hashes()));
    }
}

void MooncakeStoreScheduler::apply_current_save_block_ids(StoreMetadata& meta, const SchedulerOutput& output) {
    // pre-#51358: saves keep the tracker's ids
    if (variant_.flag<&Variant::stale_save>() == StaleSave::tracker_ids) return;
    const bool any_save = std::any_of(meta.requests.begin(), meta.requests.end(),
                                      [](const ReqMeta& m) { return m.can_save; });
    if (!any_save) return;

    const auto& block_state = output.kv_connector_block_state;
    if (variant_.flag<&Variant::stale_save>() == StaleSave::assert_missing) {
        if (!block_state)
            throw UpstreamAssertion("current_block_tables_required", site("_apply_current_save_block_ids"),
                                    "Current block tables are required for Mooncake store jobs");
        for (ReqMeta& m : meta.requests) {
            if (!m.can_save) continue;
            const std::vector<BlockId>* ids = block_state->get_block_ids(m.req_id);
            if (ids == nullptr)
                throw UpstreamAssertion("missing_current_block_table", site("_apply_current_save_block_ids"),
                                        "Missing current block table for store request " + m.req_id, m.req_id);
            assign_single_group(m.block_ids, *ids);
        }
        return;
    }

    // #55066: a save without a current table is dropped, its watermark rolled back for a later retry.
    // (std::erase_if tests the metas once each, in order: the warnings keep their order.)
    std::erase_if(meta.requests, [&](ReqMeta& m) {
        if (!m.can_save) return false;
        const std::vector<BlockId>* ids = block_state ? block_state->get_block_ids(m.req_id) : nullptr;
        if (ids != nullptr) {
            assign_single_group(m.block_ids, *ids);
            return false;
        }
        if (warned_stale_saves_.insert(m.req_id).second)
            log_.event(EventCategory::warn,
                       "Missing current block table for store request {request}; skipping its save this step")
                .request(m.req_id);
        if (RequestTracker* tracker = request_trackers_.find(m.req_id)) tracker->num_saved_tokens = m.token_ids_start;
        return true;
    });
}

void MooncakeStoreScheduler::reference_save_blocks(StoreMetadata& meta) {
    for (ReqMeta& m : meta.requests) {
        if (!m.can_save) continue;
        if (pool_ == nullptr)
            throw UpstreamAssertion("store_block_pool_unbound", site("_reference_save_blocks"),
                                    "GPU block pool must be bound before any store job is emitted");
        const std::int64_t store_job_id = next_store_job_id_++;
        m.store_job_id = store_job_id;
        // Every allocated block, not only the job's range: a rank resumes from its own lagging offset.
        std::vector<BlockId> block_ids;
        block_ids.reserve(m.block_ids.empty() ? 0 : m.block_ids.front().size());
        for (const auto& group : m.block_ids) block_ids.insert(block_ids.end(), group.begin(), group.end());
        pin_repeats_.erase_repeats(block_ids, kNullBlockId);  // a block named by two groups is pinned once
        if (block_ids.empty()) continue;
        pool_->touch(block_ids);
        pinned_saves_[store_job_id] =
            PinnedSave{.req_id = m.req_id, .block_ids = std::move(block_ids), .remaining = num_workers_};
    }
}

void MooncakeStoreScheduler::update_connector_output(const KVConnectorOutput& output) {
    if (output.completed_store_jobs.empty() || variant_.flag<&Variant::save_block_refs>() != SaveBlockRefs::store_job_pins)
        return;
    if (pool_ == nullptr)
        throw UpstreamAssertion("store_block_pool_unbound", site("update_connector_output"),
                                "assert pool is not None");
    for (const auto& [store_job_id, count] : output.completed_store_jobs) {
        auto it = pinned_saves_.find(store_job_id);
        if (it == pinned_saves_.end()) continue;  // the job referenced no blocks
        it->second.remaining -= count;
        if (it->second.remaining > 0) continue;
        if (it->second.remaining != 0)
            throw UpstreamAssertion("store_job_over_reported", site("update_connector_output"),
                                    fmt::format("store job {} reported by too many ranks", store_job_id));
        std::vector<BlockId> reversed(it->second.block_ids.rbegin(), it->second.block_ids.rend());
        pinned_saves_.erase(it);
        // Tail first, so the shared prefix is evicted last.
        pool_->free_blocks(reversed);
    }
}

FinishResult MooncakeStoreScheduler::request_finished(Request& request, const std::vector<BlockId>& block_ids) {
    if (variant_.flag<&Variant::save_block_refs>() == SaveBlockRefs::store_job_pins) return {.delay_free_blocks = false};
    if (spec_.role == KvRole::kv_consumer && !spec_.save_decode_cache) return {.delay_free_blocks = false};
    const RequestTracker* t = tracker(request.id());
    if (t == nullptr || (t->num_saved_tokens <= 0 && !t->has_pending_offload)) return {.delay_free_blocks = false};
    return {.delay_free_blocks = !block_ids.empty()};
}

void MooncakeStoreScheduler::append_pinned_blocks(std::vector<BlockId>& out) const {
    for (const auto& [job, pin] : pinned_saves_) out.insert(out.end(), pin.block_ids.begin(), pin.block_ids.end());
}

}  // namespace kvsim
