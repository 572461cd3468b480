#pragma once
// Hand-built SchedulerOutputs and a bare MooncakeStoreScheduler, in the style of upstream's
// tests/v1/kv_connector/unit/test_mooncake_store_scheduler.py (_make_bare_scheduler & co.).
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/connector/mooncake/store/scheduler.h"
#include "sim/core/block_pool.h"
#include "sim/common/event_log.h"
#include "sim/variant/variant.h"
#include "sim/environment/fault_schedule.h"

namespace kvsim {

// Direct access to MooncakeStoreScheduler's dicts (its friend), as upstream's unit tests poke them.
struct StoreSchedulerTestAccess {
    static std::map<std::string, LoadSpec>& load_specs(MooncakeStoreScheduler& s) { return s.load_specs_; }
    // The tracker of `req_id`, created (with its id) when missing.
    static RequestTracker& tracker(MooncakeStoreScheduler& s, const std::string& req_id) {
        RequestTracker& t = s.request_trackers_[req_id];
        t.req_id = req_id;
        return t;
    }
    static void set_unfinished(MooncakeStoreScheduler& s, const Request& request, GroupBlockIds block_ids) {
        s.unfinished_requests_[request.id()] = {.request = &request, .block_ids = std::move(block_ids)};
        s.unfinished_request_ids_.insert(request.id());
    }
};

}  // namespace kvsim

namespace kvsim::store_testing {

using Ids = std::vector<BlockId>;
using Groups = GroupBlockIds;

inline std::vector<TokenId> token_range(int n, int base = 0) {
    std::vector<TokenId> out;
    for (int i = 0; i < n; ++i) out.push_back(base + i);
    return out;
}

using Snapshot = std::map<std::string, Ids>;

inline KVConnectorBlockState block_state(const Snapshot& tables) {
    auto owned = std::make_shared<const Snapshot>(tables);
    KVConnectorBlockState state;
    for (const auto& [id, ids] : *owned) state.block_ids[id] = &ids;
    state.storage = std::move(owned);
    return state;
}

// One cached (running or resumed) request.
inline SchedulerOutput cached_step(const std::string& id, std::optional<Ids> delta, int num_computed, int num_scheduled,
                                   std::optional<Snapshot> snapshot, bool resumed = false) {
    SchedulerOutput out;
    out.scheduled_cached_reqs.req_ids.push_back(id);
    out.scheduled_cached_reqs.new_block_ids.push_back(std::move(delta));
    out.scheduled_cached_reqs.num_computed_tokens.push_back(num_computed);
    out.scheduled_cached_reqs.num_output_tokens.push_back(0);
    if (resumed) out.scheduled_cached_reqs.resumed_req_ids.insert(id);
    out.num_scheduled_tokens[id] = num_scheduled;
    out.total_num_scheduled_tokens = num_scheduled;
    if (snapshot) out.kv_connector_block_state = block_state(*snapshot);
    return out;
}

inline SchedulerOutput new_step(const std::string& id, Ids blocks, int num_computed, int num_scheduled,
                                std::optional<Snapshot> snapshot) {
    SchedulerOutput out;
    out.scheduled_new_reqs.push_back({id, std::move(blocks), num_computed});
    out.num_scheduled_tokens[id] = num_scheduled;
    out.total_num_scheduled_tokens = num_scheduled;
    if (snapshot) out.kv_connector_block_state = block_state(*snapshot);
    return out;
}

// Nothing scheduled (a request parked on a load).
inline SchedulerOutput pending_step(std::optional<Snapshot> snapshot = std::nullopt) {
    SchedulerOutput out;
    if (snapshot) out.kv_connector_block_state = block_state(*snapshot);
    return out;
}

inline SchedulerOutput preemption_step(const std::string& id) {
    SchedulerOutput out;
    out.preempted_req_ids.insert(id);
    return out;
}

struct StoreFixture {
    explicit StoreFixture(const std::string& variant_name = "v0.29.0", KvRole role = KvRole::kv_both,
                          int num_workers = 1, bool save_decode_cache = false)
        : v(require_variant(variant_name)), pool(64, true, FreeOrder::append_all) {
        engine.block_size = 16;
        spec.kind = "store";
        spec.role = role;
        spec.save_decode_cache = save_decode_cache;
        spec.load_async = true;
        scheduler = std::make_unique<MooncakeStoreScheduler>(spec, engine, v, num_workers, store, faults, log);
        scheduler->bind_gpu_block_pool(&pool);
    }

    // A request whose all_token_ids is range(base, base + num_tokens).
    Request& request(const std::string& id, int num_tokens, int base = 0) {
        auto req = std::make_unique<Request>(id, token_range(num_tokens, base), 8, engine.block_size, 0,
                                             KvTransferParams{});
        Request& ref = *req;
        requests[id] = std::move(req);
        return ref;
    }

    // upstream _add_unfinished_request: entry ([0, 1],), tracker 44 tokens / ([0, 1],) / watermark 32.
    Request& running_request(const std::string& id, int num_tokens, int prefill_end_tokens) {
        Request& req = request(id, num_tokens);
        set_unfinished(req, Groups{{0, 1}});
        RequestTracker& t = tracker(id);
        t.token_len = 44;
        t.allocated_block_ids = Groups{{0, 1}};
        t.num_saved_tokens = 32;
        t.prefill_end_tokens = prefill_end_tokens;
        return req;
    }

    // The scheduler's dicts, through StoreSchedulerTestAccess.
    std::map<std::string, LoadSpec>& load_specs() { return StoreSchedulerTestAccess::load_specs(*scheduler); }
    RequestTracker& tracker(const std::string& id) { return StoreSchedulerTestAccess::tracker(*scheduler, id); }
    void set_unfinished(const Request& req, Groups block_ids) {
        StoreSchedulerTestAccess::set_unfinished(*scheduler, req, std::move(block_ids));
    }

    std::shared_ptr<const StoreMetadata> build(const SchedulerOutput& out) {
        auto meta = std::dynamic_pointer_cast<const StoreMetadata>(scheduler->build_connector_meta(out));
        if (!meta) throw std::logic_error("store scheduler built no StoreMetadata");
        return meta;
    }

    void store_prefix(const Request& req, int num_blocks) {
        for (int i = 0; i < num_blocks; ++i) store.put(req.block_hashes().at(static_cast<std::size_t>(i)));
    }

    KVConnectorOutput completions(std::map<std::int64_t, int> jobs) {
        KVConnectorOutput out;
        out.completed_store_jobs = std::move(jobs);
        return out;
    }

    EngineConfig engine;
    Variant v;
    ConnectorSpec spec;
    KvStore store;
    FaultSchedule faults;
    EventLog log;
    BlockPool pool;
    std::map<std::string, std::unique_ptr<Request>> requests;
    std::unique_ptr<MooncakeStoreScheduler> scheduler;
};

}  // namespace kvsim::store_testing
