#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/common/upstream_assertion.h"
#include "sim/connector/mooncake/store/worker.h"
#include "sim/core/outputs.h"
#include "sim/core/sched/scheduler.h"
#include "sim/engine/engine.h"
#include "sim/environment/worker_env.h"
#include "store_fixture.h"

using namespace kvsim;
using namespace kvsim::store_testing;

namespace {

// The UpstreamAssertion a call throws, or nullopt.
template <class F>
std::optional<UpstreamAssertion> assertion_of(F&& f) {
    try {
        f();
    } catch (const UpstreamAssertion& e) {
        return e;
    }
    return std::nullopt;
}

std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
    return n;
}

const std::string kStaleWarning = "Missing current block table for store request ";

KVCacheBlocks one_group(Ids ids) { return KVCacheBlocks{Groups{std::move(ids)}, Groups{{}}}; }

}  // namespace

// ---- lookup (get_num_new_matched_tokens) ----

// upstream test_full_external_hit_keeps_kvpool_cached_tokens_block_aligned
TEST_CASE("store lookup: an external hit beyond the local hit becomes a LoadSpec", "[store][upstream:test_mooncake_store_scheduler.py::test_full_external_hit_keeps_kvpool_cached_tokens_block_aligned]") {
    StoreFixture f;
    Request& req = f.request("req-0", 48);
    f.store_prefix(req, 2);
    const MatchResult m = f.scheduler->get_num_new_matched_tokens(req, 16);
    CHECK(m.num_tokens == 16);
    CHECK(m.load_async);
    REQUIRE(f.scheduler->load_specs().contains("req-0"));
    CHECK(f.scheduler->load_specs().at("req-0") == LoadSpec{16, 32, false, 0});
}

TEST_CASE("store lookup: a full hit is re-derived below the request end (worker lookup)", "[store][upstream:test_mooncake_store_scheduler.py::test_full_external_hit_keeps_kvpool_cached_tokens_block_aligned]") {
    // MooncakeStoreWorker.lookup: hit_length >= num_tokens -> find again at align(num_tokens - 1).
    CHECK(store_lookup_hit_tokens(KvStore{}, 48, {1, 2, 3}, 16) == 0);
    KvStore store;
    for (BlockHash h : {1, 2, 3}) store.put(h);
    CHECK(store_lookup_hit_tokens(store, 48, {1, 2, 3}, 16) == 32);  // 47 // 16 * 16
    CHECK(store_lookup_hit_tokens(store, 49, {1, 2, 3}, 16) == 48);  // the hit is below the end already
    CHECK(store_lookup_hit_tokens(store, 16, {1}, 16) == 0);         // align(15) == 0
    CHECK(store_lookup_hit_tokens(store, 50, {1, 9, 3}, 16) == 16);  // a prefix, stopping at the first miss

    StoreFixture f;
    Request& req = f.request("req-0", 48);
    f.store_prefix(req, 3);
    const MatchResult m = f.scheduler->get_num_new_matched_tokens(req, 0);
    CHECK(m.num_tokens == 32);
    CHECK(f.scheduler->load_specs().at("req-0") == LoadSpec{0, 32, false, 0});
}

// upstream test_full_external_hit_with_full_local_hit_skips_load
TEST_CASE("store lookup: no remote gain over the local hit writes no LoadSpec", "[store][upstream:test_mooncake_store_scheduler.py::test_full_external_hit_with_full_local_hit_skips_load]") {
    StoreFixture f;
    Request& req = f.request("req-0", 48);
    f.store_prefix(req, 3);  // re-derived to 32
    const MatchResult m = f.scheduler->get_num_new_matched_tokens(req, 32);
    CHECK(m.num_tokens == 0);
    CHECK_FALSE(m.load_async);
    CHECK(f.scheduler->load_specs().empty());
}

// upstream test_sub_block_prompt_not_looked_up_without_fine_grained and
// test_disabled_lookup_reports_no_hit_without_querying_client
TEST_CASE("store lookup: sub-block prompts and enable_lookup=false report no hit", "[store][upstream:test_mooncake_store_scheduler.py::test_sub_block_prompt_not_looked_up_without_fine_grained][upstream:test_mooncake_store_scheduler.py::test_disabled_lookup_reports_no_hit_without_querying_client]") {
    StoreFixture f;
    Request& small = f.request("small", 12);
    CHECK(f.scheduler->get_num_new_matched_tokens(small, 0).num_tokens == 0);

    f.spec.enable_lookup = false;
    MooncakeStoreScheduler off(f.spec, f.engine, f.v, 1, f.store, f.faults, f.log);
    Request& req = f.request("req-0", 48);
    f.store_prefix(req, 3);
    const MatchResult m = off.get_num_new_matched_tokens(req, 0);
    CHECK(m.num_tokens == 0);
    CHECK_FALSE(m.load_async);
    CHECK(off.load_specs().empty());
}

TEST_CASE("store lookup: an async lookup stays pending under the fault and answers from submission time", "[store]") {
    StoreFixture f;
    f.spec.lookup_async = true;
    MooncakeStoreScheduler sched(f.spec, f.engine, f.v, 1, f.store, f.faults, f.log);
    Request& req = f.request("req-0", 48);
    f.store_prefix(req, 1);
    f.faults.set_step(0);
    FaultEvent pending;
    pending.kind = FaultKind::lookup_pending;
    pending.steps = 2;
    pending.request_id = "req-0";
    f.faults.apply(pending);

    CHECK_FALSE(sched.get_num_new_matched_tokens(req, 0).num_tokens.has_value());
    f.store_prefix(req, 2);  // the store grows while the lookup is in flight
    f.faults.set_step(1);
    CHECK_FALSE(sched.get_num_new_matched_tokens(req, 0).num_tokens.has_value());
    f.faults.set_step(2);
    const MatchResult m = sched.get_num_new_matched_tokens(req, 0);
    CHECK(m.num_tokens == 16);
    // The next lookup is a fresh one.
    CHECK(sched.get_num_new_matched_tokens(req, 0).num_tokens == 32);

    // A blocking lookup ignores the fault.
    f.spec.lookup_async = false;
    MooncakeStoreScheduler blocking(f.spec, f.engine, f.v, 1, f.store, f.faults, f.log);
    f.faults.apply(pending);
    CHECK(blocking.get_num_new_matched_tokens(req, 0).num_tokens == 32);
}

// ---- update_state_after_alloc ----

TEST_CASE("store update_state_after_alloc: the winner records its blocks and a loser records ()", "[store]") {
    StoreFixture f;
    Request& req = f.request("req-0", 48);
    f.load_specs()["req-0"] = LoadSpec{0, 48, false, 0};
    f.scheduler->update_state_after_alloc(req, one_group({1, 2, 3}), 48);
    CHECK(f.scheduler->unfinished_entry("req-0")->block_ids == Groups{{1, 2, 3}});
    CHECK(f.scheduler->load_specs().at("req-0").can_load);

    f.scheduler->update_state_after_alloc(req, one_group({1, 2, 3}), 0);
    CHECK(f.scheduler->unfinished_entry("req-0")->block_ids.empty());
    CHECK_FALSE(f.scheduler->load_specs().at("req-0").can_load);
    CHECK(f.scheduler->unfinished_request_ids().contains("req-0"));

    f.load_specs()["req-0"] = LoadSpec{0, 48, false, 0};
    const auto e = assertion_of([&] { f.scheduler->update_state_after_alloc(req, one_group({1, 2, 3}), 16); });
    REQUIRE(e);
    CHECK(e->id() == "store_load_token_mismatch");
    CHECK(std::string(e->what()) == "Mismatch in number of tokens: 16 vs 48 - 0 for request req-0");
}

// ---- the pending-load branch (seed 000) ----

// upstream test_pending_load_for_non_chosen_connector_is_dropped (#54643)
TEST_CASE("store pending branch: a MultiConnector loser's LoadSpec is dropped under #54643", "[store][upstream:test_mooncake_store_scheduler.py::test_pending_load_for_non_chosen_connector_is_dropped]") {
    StoreFixture f("v0.30.0");
    Request& req = f.request("req-0", 48);
    f.load_specs()["req-0"] = LoadSpec{0, 48, false, 0};
    f.scheduler->update_state_after_alloc(req, one_group({1, 2}), 0);
    auto meta = f.build(pending_step());
    CHECK(f.scheduler->unfinished_entry("req-0")->block_ids.empty());
    CHECK(meta->requests.empty());
    CHECK_FALSE(f.scheduler->load_specs().contains("req-0"));
    CHECK(f.scheduler->tracker("req-0") == nullptr);
}

TEST_CASE("store pending branch: the seed 000 table for kv_consumer and kv_both", "[store]") {
    struct Row {
        const char* variant;
        bool consumer_crashes;
        bool both_crashes;
    };
    const std::vector<Row> table = {
        {"v0.29.0", true, true},
        {"v0.29.0+003", false, false},
        {"v0.29.0+skip_save_is_consumer", false, true},
        {"v0.30.0", false, false},
    };
    for (const Row& row : table) {
        for (KvRole role : {KvRole::kv_consumer, KvRole::kv_both}) {
            INFO(row.variant << " " << to_string(role));
            StoreFixture f(row.variant, role);
            Request& req = f.request("req-0", 48);
            f.load_specs()["req-0"] = LoadSpec{0, 48, false, 0};
            f.scheduler->update_state_after_alloc(req, one_group({1, 2, 3}), 0);
            // The block state the core builds while req-0 waits for the other connector's load: no entry.
            const SchedulerOutput out = pending_step(Snapshot{{"other", {9}}});
            const bool crashes = role == KvRole::kv_consumer ? row.consumer_crashes : row.both_crashes;
            std::shared_ptr<const StoreMetadata> meta;
            const auto e = assertion_of([&] { meta = f.build(out); });
            if (crashes) {
                REQUIRE(e);
                CHECK(e->id() == "missing_current_block_table");
                CHECK(std::string(e->what()) == "Missing current block table for store request req-0");
                continue;
            }
            REQUIRE_FALSE(e);
            for (const ReqMeta& m : meta->requests) CHECK_FALSE(m.can_save);
            CHECK(f.scheduler->pinned_saves().empty());
        }
    }
}

TEST_CASE("store pending branch: a 48-token prompt fully in the store crashes v0.29.0 through the lookup", "[store]") {
    StoreFixture f("v0.29.0", KvRole::kv_consumer);
    Request& req = f.request("req-0", 48);
    f.store_prefix(req, 3);
    REQUIRE(f.scheduler->get_num_new_matched_tokens(req, 0).num_tokens == 32);
    f.scheduler->update_state_after_alloc(req, one_group({1, 2, 3}), 0);  // MultiConnector loser
    const auto e = assertion_of([&] { f.build(pending_step(Snapshot{})); });
    REQUIRE(e);
    CHECK(e->id() == "missing_current_block_table");
    CHECK(f.scheduler->tracker("req-0")->token_len == 32);
    CHECK(f.scheduler->tracker("req-0")->num_saved_tokens == 32);
}

TEST_CASE("store v0.29.0: a save in a step without any block state asserts", "[store]") {
    StoreFixture f("v0.29.0");
    Request& req = f.request("req-0", 48);
    f.load_specs()["req-0"] = LoadSpec{0, 48, false, 0};
    f.scheduler->update_state_after_alloc(req, one_group({1, 2, 3}), 0);
    const auto e = assertion_of([&] { f.build(pending_step()); });
    REQUIRE(e);
    CHECK(e->id() == "current_block_tables_required");
    CHECK(std::string(e->what()) == "Current block tables are required for Mooncake store jobs");
}

TEST_CASE("store v0.27.1: the loser's pending save keeps the tracker's () ids", "[store]") {
    StoreFixture f("v0.27.1");
    Request& req = f.request("req-0", 48);
    f.load_specs()["req-0"] = LoadSpec{0, 48, false, 0};
    f.scheduler->update_state_after_alloc(req, one_group({1, 2, 3}), 0);
    auto meta = f.build(pending_step());
    REQUIRE(meta->requests.size() == 1);
    const ReqMeta& m = meta->requests[0];
    CHECK(m.can_save);
    CHECK(m.block_ids.empty());
    CHECK(m.token_len_chunk == 48);
    CHECK_FALSE(m.store_job_id);  // no pins before #52372
    CHECK(meta->describe() == std::vector<std::string>{"store save req-0 tokens=[0,48) blocks=()"});
}

// upstream test_pending_load_does_not_co_queue_save
TEST_CASE("store pending branch: a pending load does not co-queue a save", "[store][upstream:test_mooncake_store_scheduler.py::test_pending_load_does_not_co_queue_save]") {
    StoreFixture f;
    Request& req = f.request("req-0", 48);
    f.set_unfinished(req, Groups{{0, 1, 2}});
    f.load_specs()["req-0"] = LoadSpec{0, 48, true, 0};
    auto meta = f.build(pending_step());
    REQUIRE(meta->requests.size() == 1);
    const ReqMeta& m = meta->requests[0];
    CHECK(m.req_id == "req-0");
    CHECK_FALSE(m.can_save);
    REQUIRE(m.load_spec);
    CHECK(m.load_spec->can_load);
    CHECK(f.scheduler->tracker("req-0")->num_saved_tokens == 0);
    CHECK(meta->describe() == std::vector<std::string>{"store load req-0 tokens=[0,48) blocks=[0,1,2]"});
}

// ---- new and cached requests ----

// upstream test_cached_request_without_spec_decode_keeps_current_step_save_overlap and
// test_running_request_not_in_resumed_req_ids_appends_blocks
TEST_CASE("store cached step: a running request saves the block it completes", "[store][upstream:test_mooncake_store_scheduler.py::test_cached_request_without_spec_decode_keeps_current_step_save_overlap][upstream:test_mooncake_store_scheduler.py::test_running_request_not_in_resumed_req_ids_appends_blocks]") {
    StoreFixture f;
    f.running_request("req-0", 48, 48);
    auto meta = f.build(cached_step("req-0", Ids{2}, 44, 4, Snapshot{{"req-0", {0, 1, 2}}}));
    REQUIRE(meta->requests.size() == 1);
    const ReqMeta& m = meta->requests[0];
    CHECK(m.req_id == "req-0");
    CHECK(m.can_save);
    CHECK(m.token_len_chunk == 48);
    CHECK(m.token_ids_start == 32);
    CHECK(m.block_ids == Groups{{0, 1, 2}});
    CHECK(m.store_job_id == 0);
    const RequestTracker* t = f.scheduler->tracker("req-0");
    CHECK(t->token_len == 48);
    CHECK(t->num_saved_tokens == 48);
    CHECK(t->allocated_block_ids == Groups{{0, 1, 2}});
    CHECK(meta->describe() == std::vector<std::string>{"store save req-0 tokens=[32,48) blocks=[0,1,2] job=0"});
}

// upstream test_cached_request_with_spec_decode_does_not_save_scheduled_drafts
TEST_CASE("store cached step: scheduled drafts do not advance token_len", "[store][upstream:test_mooncake_store_scheduler.py::test_cached_request_with_spec_decode_does_not_save_scheduled_drafts]") {
    StoreFixture f;
    f.running_request("req-0", 44, 48);
    auto meta = f.build(cached_step("req-0", Ids{2}, 44, 4, Snapshot{{"req-0", {0, 1, 2}}}));
    CHECK(meta->requests.empty());
    const RequestTracker* t = f.scheduler->tracker("req-0");
    CHECK(t->token_len == 44);
    CHECK(t->num_saved_tokens == 32);
    CHECK(t->allocated_block_ids == Groups{{0, 1, 2}});
}

// upstream test_decode_tracking_is_skipped_by_default[kv_consumer|kv_both]
TEST_CASE("store cached step: decode tracking is skipped without save_decode_cache", "[store][upstream:test_mooncake_store_scheduler.py::test_decode_tracking_is_skipped_by_default]") {
    for (KvRole role : {KvRole::kv_consumer, KvRole::kv_both}) {
        INFO(to_string(role));
        StoreFixture f("v0.29.0", role);
        f.running_request("req-0", 48, 32);
        RequestTracker& t = f.tracker("req-0");
        t.token_len = 47;
        t.allocated_block_ids = Groups{{0, 1, 2}};
        auto meta = f.build(cached_step("req-0", std::nullopt, 47, 1, Snapshot{{"req-0", {0, 1, 2}}}));
        CHECK(meta->requests.empty());
        CHECK(t.token_len == 47);
        CHECK(t.num_saved_tokens == 32);
        CHECK(t.allocated_block_ids == Groups{{0, 1, 2}});
    }
}

// upstream test_consumer_saves_only_full_decode_blocks[46-32, 47-48]
TEST_CASE("store cached step: a consumer with save_decode_cache saves only full decode blocks", "[store][upstream:test_mooncake_store_scheduler.py::test_consumer_saves_only_full_decode_blocks]") {
    for (auto [token_len, saved] : {std::pair{46, 32}, std::pair{47, 48}}) {
        INFO(token_len);
        StoreFixture f("v0.29.0", KvRole::kv_consumer, 1, true);
        f.running_request("req-0", token_len + 1, 32);
        RequestTracker& t = f.tracker("req-0");
        t.token_len = token_len;
        t.allocated_block_ids = Groups{{0, 1, 2}};
        auto meta = f.build(cached_step("req-0", std::nullopt, token_len, 1, Snapshot{{"req-0", {0, 1, 2}}}));
        CHECK(t.token_len == token_len + 1);
        CHECK(t.num_saved_tokens == saved);
        if (saved == 32) {
            CHECK(meta->requests.empty());
        } else {
            REQUIRE(meta->requests.size() == 1);
            CHECK(meta->requests[0].can_save);
            CHECK(meta->requests[0].token_len_chunk == 48);
            CHECK(meta->requests[0].block_ids == Groups{{0, 1, 2}});
            CHECK(meta->requests[0].token_ids_start == 32);
        }
    }
}

// upstream test_fresh_consumer_first_decode_save_can_backfill_missing_prompt (without token ids)
TEST_CASE("store cached step: a fresh consumer's first decode save backfills the prompt", "[store][upstream:test_mooncake_store_scheduler.py::test_fresh_consumer_first_decode_save_can_backfill_missing_prompt]") {
    StoreFixture f("v0.29.0", KvRole::kv_consumer, 1, true);
    Request& req = f.request("req-0", 32);
    f.scheduler->update_state_after_alloc(req, one_group({1, 2, 3}), 0);
    const Snapshot table{{"req-0", {1, 2, 3}}};
    CHECK(f.build(new_step("req-0", {1, 2, 3}, 0, 32, table))->requests.empty());
    const RequestTracker* t = f.scheduler->tracker("req-0");
    CHECK(t->num_saved_tokens == 0);
    CHECK(t->prefill_end_tokens == 32);

    req.append_output_token(7);
    auto first = f.build(cached_step("req-0", std::nullopt, 32, 1, table));
    REQUIRE(first->requests.size() == 1);
    CHECK(first->requests[0].token_len_chunk == 32);
    CHECK(first->requests[0].token_ids_start == 0);

    std::shared_ptr<const StoreMetadata> meta;
    for (int computed = 33; computed < 48; ++computed) {
        req.append_output_token(7);
        meta = f.build(cached_step("req-0", std::nullopt, computed, 1, table));
        if (computed < 47) CHECK(meta->requests.empty());
    }
    REQUIRE(meta->requests.size() == 1);
    CHECK(meta->requests[0].token_len_chunk == 48);
    CHECK(meta->requests[0].token_ids_start == 32);
    CHECK(t->num_saved_tokens == 48);
}

TEST_CASE("store new step: a kv_both request saves its prompt but a consumer's prefill does not", "[store]") {
    for (KvRole role : {KvRole::kv_both, KvRole::kv_consumer}) {
        INFO(to_string(role));
        StoreFixture f("v0.29.0", role);
        Request& req = f.request("req-0", 40);
        f.scheduler->update_state_after_alloc(req, one_group({4, 5, 6}), 0);
        auto meta = f.build(new_step("req-0", {4, 5, 6}, 0, 40, Snapshot{{"req-0", {4, 5, 6}}}));
        if (role == KvRole::kv_consumer) {
            CHECK(meta->requests.empty());
            continue;
        }
        REQUIRE(meta->requests.size() == 1);
        CHECK(meta->requests[0].token_len_chunk == 32);
        CHECK(meta->requests[0].block_ids == Groups{{4, 5, 6}});
        CHECK(meta->requests[0].num_prompt_tokens == 40);
    }
}

// ---- preemption and resumption ----

// upstream test_preemption_resets_tracker
TEST_CASE("store preemption resets the tracker and keeps the id unfinished", "[store][upstream:test_mooncake_store_scheduler.py::test_preemption_resets_tracker]") {
    StoreFixture f;
    f.running_request("req-0", 44, 48);
    f.tracker("req-0").has_pending_offload = true;
    f.build(preemption_step("req-0"));
    const RequestTracker* t = f.scheduler->tracker("req-0");
    REQUIRE(t != nullptr);
    CHECK(t->token_len == 0);
    CHECK(t->allocated_block_ids.empty());
    CHECK(t->num_saved_tokens == 0);
    CHECK_FALSE(t->has_pending_offload);
    CHECK(t->prefill_end_tokens == 0);
    CHECK(f.scheduler->unfinished_request_ids().contains("req-0"));
}

// upstream test_preemption_clears_stale_load_state
TEST_CASE("store preemption clears stale load state", "[store][upstream:test_mooncake_store_scheduler.py::test_preemption_clears_stale_load_state]") {
    StoreFixture f;
    Request& req = f.request("req-0", 48);
    f.set_unfinished(req, Groups{{10, 11, 12}});
    f.load_specs()["req-0"] = LoadSpec{0, 48, true, 0};
    auto meta = f.build(preemption_step("req-0"));
    CHECK(meta->requests.empty());
    CHECK_FALSE(f.scheduler->load_specs().contains("req-0"));
    CHECK(f.scheduler->unfinished_entry("req-0") == nullptr);
}

// upstream test_resumed_from_preemption_with_load_skips_save / ..._without_load_still_saves
TEST_CASE("store resumed step: a load skips the save and no load saves", "[store][upstream:test_mooncake_store_scheduler.py::test_resumed_from_preemption_with_load_skips_save][upstream:test_mooncake_store_scheduler.py::test_resumed_from_preemption_without_load_still_saves]") {
    for (bool with_load : {true, false}) {
        INFO(with_load);
        StoreFixture f;
        Request& req = f.request("req-0", 48);
        f.set_unfinished(req, Groups{{0, 1}});
        if (with_load) f.load_specs()["req-0"] = LoadSpec{0, 48, true, 0};
        auto meta = f.build(cached_step("req-0", Ids{0, 1, 2}, 0, 48, Snapshot{{"req-0", {0, 1, 2}}}, true));
        REQUIRE(meta->requests.size() == 1);
        const ReqMeta& m = meta->requests[0];
        CHECK(m.req_id == "req-0");
        CHECK(m.can_save == !with_load);
        CHECK(m.load_spec.has_value() == with_load);
        CHECK(f.scheduler->tracker("req-0")->num_saved_tokens == (with_load ? 0 : 48));
    }
}

// upstream test_resumed_request_in_resumed_req_ids_replaces_blocks
TEST_CASE("store resumed step: the full table replaces a stale tracker", "[store][upstream:test_mooncake_store_scheduler.py::test_resumed_request_in_resumed_req_ids_replaces_blocks]") {
    StoreFixture f;
    Request& req = f.request("req-0", 48);
    f.set_unfinished(req, Groups{{0, 1}});
    RequestTracker& stale = f.tracker("req-0");
    stale.token_len = 99;
    stale.allocated_block_ids = Groups{{7, 8, 9}};
    f.build(cached_step("req-0", Ids{0, 1, 2}, 0, 48, Snapshot{{"req-0", {0, 1, 2}}}, true));
    const RequestTracker* t = f.scheduler->tracker("req-0");
    CHECK(t->allocated_block_ids == Groups{{0, 1, 2}});
    CHECK(t->token_len == 48);
    CHECK(t->prefill_end_tokens == 48);
}

// upstream test_preempted_request_readmitted_in_same_step[new|resumed] and
// ..._with_pending_load_in_same_step expect the LATEST scheduler (it keeps entries allocated
// this step). The modelled scheduler (@ a83dffb9ea007219cd877492e020ec6bee45c6a3) pops the entry on preemption first.
TEST_CASE("store preempted and re-admitted in one step: the modelled scheduler loses the entry", "[store][upstream:test_mooncake_store_scheduler.py::test_preempted_request_readmitted_in_same_step][upstream:test_mooncake_store_scheduler.py::test_preempted_request_readmitted_with_pending_load_in_same_step]") {
    {
        StoreFixture f;
        Request& req = f.request("req-0", 48);
        f.scheduler->update_state_after_alloc(req, KVCacheBlocks{}, 0);
        SchedulerOutput out = new_step("req-0", {1, 2, 3}, 0, 48, Snapshot{{"req-0", {1, 2, 3}}});
        out.preempted_req_ids.insert("req-0");
        const auto e = assertion_of([&] { f.build(out); });
        REQUIRE(e);
        CHECK(e->id() == "store_new_request_untracked");
    }
    {
        StoreFixture f;
        Request& req = f.request("req-0", 48);
        f.scheduler->update_state_after_alloc(req, KVCacheBlocks{}, 0);
        SchedulerOutput out = cached_step("req-0", Ids{0, 1, 2}, 0, 48, Snapshot{{"req-0", {0, 1, 2}}}, true);
        out.preempted_req_ids.insert("req-0");
        const auto e = assertion_of([&] { f.build(out); });
        REQUIRE(e);
        CHECK(e->id() == "store_resumed_request_untracked");
    }
    {
        StoreFixture f;
        Request& req = f.request("req-0", 48);
        f.load_specs()["req-0"] = LoadSpec{0, 48, false, 0};
        f.scheduler->update_state_after_alloc(req, one_group({10, 11, 12}), 48);
        SchedulerOutput out = pending_step();
        out.preempted_req_ids.insert("req-0");
        CHECK(f.build(out)->requests.empty());  // LATEST: one meta carrying the load
    }
}

TEST_CASE("store finished ids drop every piece of per-request state", "[store]") {
    StoreFixture f;
    f.running_request("req-0", 48, 48);
    f.load_specs()["req-0"] = LoadSpec{0, 48, false, 0};
    SchedulerOutput out;
    out.finished_req_ids.insert("req-0");
    CHECK(f.build(out)->requests.empty());
    CHECK(f.scheduler->tracker("req-0") == nullptr);
    CHECK(f.scheduler->unfinished_entry("req-0") == nullptr);
    CHECK_FALSE(f.scheduler->unfinished_request_ids().contains("req-0"));
    CHECK(f.scheduler->load_specs().empty());
}

// ---- store-job pins (#52372) ----

// upstream test_store_job_blocks_are_released_once_every_rank_reports
TEST_CASE("store pins: blocks are released once every rank reports", "[store][upstream:test_mooncake_store_scheduler.py::test_store_job_blocks_are_released_once_every_rank_reports]") {
    StoreFixture f("v0.29.0", KvRole::kv_both, 2);
    f.running_request("req-0", 48, 48);
    CHECK_FALSE(f.scheduler->has_pending_push_work());
    auto meta = f.build(cached_step("req-0", Ids{2}, 44, 4, Snapshot{{"req-0", {0, 1, 2}}}));
    const std::int64_t job = *meta->requests.at(0).store_job_id;
    CHECK(f.pool.block(2).ref_cnt == 1);
    CHECK(f.pool.block(1).ref_cnt == 1);
    CHECK(f.pool.block(0).ref_cnt == 0);  // the null block is never pinned
    CHECK(f.scheduler->pinned_blocks() == Ids{1, 2});
    CHECK(f.scheduler->has_pending_push_work());

    f.scheduler->update_connector_output(f.completions({{job, 1}}));
    CHECK(f.pool.block(2).ref_cnt == 1);
    CHECK(f.scheduler->has_pending_push_work());

    f.scheduler->update_connector_output(f.completions({{job, 1}}));
    CHECK(f.pool.block(2).ref_cnt == 0);
    CHECK_FALSE(f.scheduler->has_pending_push_work());
    CHECK(f.scheduler->pinned_blocks().empty());
    // Tail first: free_blocks got [2, 1], so 1 is the newest tail entry (evicted last).
    const Ids queue = f.pool.free_queue().to_vector();
    REQUIRE(queue.size() >= 2);
    CHECK(Ids(queue.end() - 2, queue.end()) == Ids{2, 1});
}

TEST_CASE("store pins: over-reporting asserts and unknown jobs are ignored", "[store]") {
    StoreFixture f;
    f.running_request("req-0", 48, 48);
    f.build(cached_step("req-0", Ids{2}, 44, 4, Snapshot{{"req-0", {0, 1, 2}}}));
    f.scheduler->update_connector_output(f.completions({{7, 1}}));
    CHECK(f.scheduler->has_pending_push_work());
    const auto e = assertion_of([&] { f.scheduler->update_connector_output(f.completions({{0, 2}})); });
    REQUIRE(e);
    CHECK(e->id() == "store_job_over_reported");
    CHECK(std::string(e->what()) == "store job 0 reported by too many ranks");
}

TEST_CASE("store pins: blocks deduplicated and null skipped and a job id consumed even without a pin", "[store]") {
    StoreFixture f;
    f.running_request("req-0", 64, 64);
    auto first = f.build(cached_step("req-0", Ids{2}, 44, 4, Snapshot{{"req-0", {0, 0, 0}}}));
    CHECK(first->requests.at(0).store_job_id == 0);
    CHECK(f.scheduler->pinned_saves().empty());
    CHECK(f.scheduler->next_store_job_id() == 1);

    auto second = f.build(cached_step("req-0", Ids{3}, 48, 16, Snapshot{{"req-0", {0, 3, 3, 4}}}));
    REQUIRE(second->requests.size() == 1);
    CHECK(second->requests[0].store_job_id == 1);
    CHECK(f.scheduler->pinned_saves().at(1).block_ids == Ids{3, 4});
    CHECK(f.pool.block(3).ref_cnt == 1);
}

TEST_CASE("store pins: pinned_blocks lists a shared block once per pin", "[store]") {
    StoreFixture f;
    f.running_request("a", 48, 48);
    f.running_request("b", 48, 48);
    SchedulerOutput out = cached_step("a", Ids{2}, 44, 4, Snapshot{{"a", {1, 2, 3}}, {"b", {1, 2, 4}}});
    out.scheduled_cached_reqs.req_ids.push_back("b");
    out.scheduled_cached_reqs.new_block_ids.push_back(Ids{4});
    out.scheduled_cached_reqs.num_computed_tokens.push_back(44);
    out.scheduled_cached_reqs.num_output_tokens.push_back(0);
    out.num_scheduled_tokens["b"] = 4;
    auto meta = f.build(out);
    REQUIRE(meta->requests.size() == 2);
    CHECK(f.scheduler->pinned_blocks() == Ids{1, 2, 3, 1, 2, 4});
    CHECK(f.pool.block(1).ref_cnt == 2);
    Request& a = *f.requests.at("a");
    CHECK_FALSE(f.scheduler->request_finished(a, {1, 2, 3}).delay_free_blocks);
}

// ---- delay_free (pre-#52372, v0.27.1) ----

TEST_CASE("store delay_free: request_finished delays only a request with something saved", "[store]") {
    {
        StoreFixture f("v0.27.1");
        Request& req = f.running_request("req-0", 48, 48);
        CHECK(f.scheduler->request_finished(req, {1, 2}).delay_free_blocks);  // watermark 32
        CHECK_FALSE(f.scheduler->request_finished(req, {}).delay_free_blocks);
        f.tracker("req-0").num_saved_tokens = 0;
        CHECK_FALSE(f.scheduler->request_finished(req, {1, 2}).delay_free_blocks);
        f.tracker("req-0").has_pending_offload = true;
        CHECK(f.scheduler->request_finished(req, {1, 2}).delay_free_blocks);
        Request& other = f.request("other", 48);
        CHECK_FALSE(f.scheduler->request_finished(other, {1, 2}).delay_free_blocks);  // no tracker

        auto meta = f.build(cached_step("req-0", Ids{2}, 44, 4, std::nullopt));
        REQUIRE(meta->requests.size() == 1);
        CHECK_FALSE(meta->requests[0].store_job_id);
        CHECK(meta->requests[0].block_ids == Groups{{0, 1, 2}});  // tracker ids, no snapshot needed
        CHECK_FALSE(f.scheduler->has_pending_push_work());
    }
    {
        StoreFixture f("v0.27.1", KvRole::kv_consumer);
        Request& req = f.running_request("req-0", 48, 48);
        CHECK_FALSE(f.scheduler->request_finished(req, {1, 2}).delay_free_blocks);
    }
}

// ---- #55066 (seed 001): drop, warn once, roll back ----

TEST_CASE("store #55066: a save without any block state is dropped while load-only metadata survives", "[store]") {
    StoreFixture f("v0.29.0+pr55066");
    f.running_request("req-a", 48, 48);
    Request& b = f.request("req-b", 48, 500);
    f.set_unfinished(b, Groups{{5, 6, 7}});
    f.load_specs()["req-b"] = LoadSpec{0, 48, true, 0};

    auto meta = f.build(cached_step("req-a", Ids{2}, 44, 4, std::nullopt));
    REQUIRE(meta->requests.size() == 1);
    CHECK(meta->requests[0].req_id == "req-b");
    CHECK(meta->requests[0].load_spec);
    CHECK_FALSE(meta->requests[0].can_save);
    CHECK(f.scheduler->pinned_saves().empty());
    CHECK(f.scheduler->next_store_job_id() == 0);
    const RequestTracker* t = f.scheduler->tracker("req-a");
    CHECK(t->num_saved_tokens == 32);  // rolled back to the meta's token_ids_start
    CHECK(t->token_len == 48);
    CHECK(f.log.text() ==
          "    0 warn      Missing current block table for store request req-a; skipping its save this step\n");
}

TEST_CASE("store #55066: a save whose request has no entry is dropped while load-only metadata survives", "[store]") {
    StoreFixture f("v0.29.0+pr55066");
    f.running_request("req-a", 48, 48);
    Request& b = f.request("req-b", 48, 500);
    f.set_unfinished(b, Groups{{5, 6, 7}});
    f.load_specs()["req-b"] = LoadSpec{0, 48, true, 0};

    auto meta = f.build(cached_step("req-a", Ids{2}, 44, 4, Snapshot{{"other", {9}}}));
    REQUIRE(meta->requests.size() == 1);
    CHECK(meta->requests[0].req_id == "req-b");
    CHECK(meta->requests[0].load_spec);
    CHECK(f.scheduler->tracker("req-a")->num_saved_tokens == 32);
    CHECK(count_of(f.log.text(), kStaleWarning + "req-a;") == 1);
}

TEST_CASE("store #55066: one warning per request id", "[store]") {
    StoreFixture f("v0.29.0+pr55066");
    for (const char* id : {"req-a", "req-b"}) {
        Request& req = f.request(id, 48);
        f.load_specs()[id] = LoadSpec{0, 48, false, 0};
        f.scheduler->update_state_after_alloc(req, one_group({1, 2, 3}), 0);
    }
    f.build(pending_step());
    for (const char* id : {"req-a", "req-b"}) {
        f.load_specs()[id] = LoadSpec{0, 48, false, 0};
    }
    f.build(pending_step());  // the same stale saves again
    CHECK(count_of(f.log.text(), kStaleWarning + "req-a;") == 1);
    CHECK(count_of(f.log.text(), kStaleWarning + "req-b;") == 1);
    CHECK(f.log.lines() == 2);
    CHECK(f.scheduler->tracker("req-a")->num_saved_tokens == 0);
}

TEST_CASE("store #55066: a present table replaces the tracker's stale ids without a warning", "[store]") {
    StoreFixture f("v0.29.0+pr55066");
    f.running_request("req-0", 48, 48);
    auto meta = f.build(cached_step("req-0", Ids{2}, 44, 4, Snapshot{{"req-0", {7, 8, 9}}}));
    REQUIRE(meta->requests.size() == 1);
    CHECK(meta->requests[0].block_ids == Groups{{7, 8, 9}});
    CHECK(f.scheduler->tracker("req-0")->allocated_block_ids == Groups{{0, 1, 2}});
    CHECK(f.log.text().empty());
}

TEST_CASE("store #55066: the rolled-back watermark saves the chunk again on a later step", "[store]") {
    StoreFixture f("v0.29.0+pr55066");
    f.running_request("req-0", 64, 64);
    CHECK(f.build(cached_step("req-0", Ids{2}, 44, 4, std::nullopt))->requests.empty());
    CHECK(f.scheduler->tracker("req-0")->num_saved_tokens == 32);

    auto meta = f.build(cached_step("req-0", Ids{3}, 48, 4, Snapshot{{"req-0", {0, 1, 2, 3}}}));
    REQUIRE(meta->requests.size() == 1);
    CHECK(meta->requests[0].token_ids_start == 32);
    CHECK(meta->requests[0].token_len_chunk == 48);
    CHECK(f.scheduler->tracker("req-0")->num_saved_tokens == 48);

    // v0.29.0 dies on the first of these steps.
    StoreFixture g("v0.29.0");
    g.running_request("req-0", 64, 64);
    const auto e = assertion_of([&] { g.build(cached_step("req-0", Ids{2}, 44, 4, std::nullopt)); });
    REQUIRE(e);
    CHECK(e->id() == "current_block_tables_required");
}

// ---- with the core scheduler and the store worker ----

namespace {

struct LoadObserver : WorkerObserver {
    std::vector<std::pair<std::string, Ids>> loads;
    std::vector<std::string> reads;
    void save_emitted(const SaveJob&) override {}
    void save_read(const SaveJob& job, int rank) override {
        reads.push_back(job.req_id + "@" + std::to_string(job.job_id) + "/" + std::to_string(rank));
    }
    void send_read(const std::string&, const std::vector<BlockId>&) override {}
    void load_written(const std::string& req_id, const std::vector<BlockId>& blocks, std::string_view) override {
        loads.emplace_back(req_id, blocks);
    }
};

}  // namespace

TEST_CASE("store with the core scheduler: a partial store hit loads then saves and unpins once ranks report", "[store]") {
    EngineConfig engine;
    engine.block_size = 16;
    engine.num_blocks = 64;
    const Variant v = require_variant("v0.29.0");
    ConnectorSpec spec;
    spec.kind = "store";
    spec.role = KvRole::kv_both;
    KvStore store;
    FaultSchedule faults;
    EventLog log;
    MooncakeStoreScheduler connector(spec, engine, v, 2, store, faults, log);
    Scheduler core(engine, v, &connector, log);
    Prng prng(3);
    LoadObserver observer;
    WorkerEnv env;
    env.config.ranks = 2;
    env.prng = &prng;
    env.faults = &faults;
    env.observer = &observer;
    env.log = &log;
    MooncakeStoreWorker worker(spec, engine, v, env, store);

    core.add_request(std::make_unique<Request>("r", token_range(50, 100), 2, 16, 0, KvTransferParams{}));
    const Request& r = *core.requests().at("r");
    store.put(r.block_hashes().at(0));
    store.put(r.block_hashes().at(1));

    std::vector<std::vector<std::string>> metas;
    for (int step = 0; step < 8 && (core.has_requests() || worker.busy() || connector.has_pending_push_work()); ++step) {
        log.set_step(step);
        faults.set_step(step);
        SchedulerOutput out = core.schedule(step);
        metas.push_back(out.kv_connector_metadata ? out.kv_connector_metadata->describe() : std::vector<std::string>{});
        worker.execute(step, out);
        ModelRunnerOutput mro;
        mro.kv_connector_output = worker.get_finished(step, out.finished_req_ids);
        for (const auto& [id, n] : out.num_scheduled_tokens) {
            auto& sampled = mro.sampled_token_ids[id];
            const auto* slot = core.requests().find(id);
            if (slot != nullptr && (*slot)->num_computed_tokens >= (*slot)->num_tokens())
                sampled.push_back(sampled_token(id, (*slot)->num_tokens()));
        }
        core.update_from_output(out, mro);
    }
    INFO(log.text());
    REQUIRE(metas.size() >= 3);
    CHECK(metas[0] == std::vector<std::string>{"store load r tokens=[0,32) blocks=[1,2]"});
    REQUIRE(observer.loads.size() == 1);
    CHECK(observer.loads[0] == std::pair<std::string, Ids>{"r", Ids{1, 2}});
    CHECK(metas[2] == std::vector<std::string>{"store save r tokens=[0,48) blocks=[1,2,3,4] job=0"});
    CHECK(observer.reads == std::vector<std::string>{"r@0/0", "r@0/1"});
    CHECK(store.size() == 3);
    CHECK_FALSE(connector.has_pending_push_work());
    CHECK_FALSE(core.has_requests());
    CHECK(core.kv_cache_manager().block_pool().num_free_blocks() == 63);
}
