// Ports of upstream's tests/v1/kv_connector/unit/test_kv_load_failure_recovery.py @
// 0e26f5b67094f05b9993ea9b42f2e99eb962c654, with its Mock connector (a fixed matched-token count per
// request, loaded sync or async) and hand-written model runner outputs. The four tests of async loads
// counting toward max_num_seqs and the token budget run under `+pr42568` (async_load_accounting=counted);
// the release variant, which does not count them, is shown to fail their first assert.
// test_async_load_deadlock_head_of_line_blocking runs under `+pr45406` (blocked_head=skipped_for_holders).
#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scheduler_fixture.h"

using namespace kvsim;
using namespace kvsim::testing;

namespace {

struct EmptyMetadata : ConnectorMetadata {
    std::vector<LogEvent> log_events() const override { return {}; }
};

// The test's `scheduler.connector = Mock()`: get_num_new_matched_tokens answers (hits[id] or 0, load_async) on
// every call (kvsim: "not decided yet" on the first call for an id in `pending`); the calls, the last update_state_after_alloc's num_external_tokens and the request_finished
// calls are recorded.
class MockConnector : public KVConnectorScheduler {
public:
    MockConnector(std::map<std::string, int> matched, bool async) : hits(std::move(matched)), load_async(async) {}
    std::string_view name() const override { return "mock"; }
    MatchResult get_num_new_matched_tokens(Request& request, int /*num_computed_tokens*/) override {
        ++lookups;
        if (pending.erase(request.id()) > 0) return {.num_tokens = std::nullopt};
        const auto it = hits.find(request.id());
        return {.num_tokens = it == hits.end() ? 0 : it->second, .load_async = load_async};
    }
    void update_state_after_alloc(Request&, const KVCacheBlocks&, int num_external_tokens) override {
        last_alloc_external = num_external_tokens;
    }
    std::shared_ptr<const ConnectorMetadata> build_connector_meta(const SchedulerOutput&) override {
        return std::make_shared<EmptyMetadata>();
    }
    void update_connector_output(const KVConnectorOutput&) override {}
    FinishResult request_finished(Request&, const std::vector<BlockId>&) override {
        ++finished_calls;
        return {};
    }

    std::map<std::string, int> hits;
    bool load_async;
    std::set<std::string> pending;
    int lookups = 0;
    std::optional<int> last_alloc_external;
    int finished_calls = 0;
};

// create_vllm_config's defaults (max_num_seqs=16, max_num_batched_tokens=64, block_size=16,
// max_model_len=10000, chunked prefill and prefix caching on) and create_scheduler's num_blocks=10000.
EngineConfig upstream_config(int max_num_seqs = 16, int max_num_batched_tokens = 64, int num_blocks = 10000) {
    EngineConfig cfg;
    cfg.block_size = 16;
    cfg.num_blocks = num_blocks;
    cfg.max_running = max_num_seqs;
    cfg.max_batched_tokens = max_num_batched_tokens;
    cfg.max_model_len = 10000;
    cfg.kv_load_failure_policy = LoadFailurePolicy::recompute;
    return cfg;
}

constexpr int kBs = 16;

// create_model_runner_output(reqs, finished_recving, invalid_block_ids, use_eos=True): an EOS for each of
// `eos_reqs`.
ModelRunnerOutput runner_output(const std::vector<std::string>& eos_reqs, std::set<std::string> finished_recving,
                                std::set<BlockId> invalid_block_ids) {
    ModelRunnerOutput mro;
    for (const auto& id : eos_reqs) mro.sampled_token_ids[id] = {kEosTokenId};
    KVConnectorOutput kv;
    kv.finished_recving = std::move(finished_recving);
    kv.invalid_block_ids = std::move(invalid_block_ids);
    mro.kv_connector_output = std::move(kv);
    return mro;
}

SchedulerOutput schedule(SchedulerHarness& h) {
    h.log.set_step(h.step);
    return h.scheduler.schedule(h.step++);
}

std::set<BlockId> blocks_at(const std::vector<BlockId>& table, const std::vector<int>& idxs) {
    std::set<BlockId> out;
    for (int i : idxs) out.insert(table.at(static_cast<std::size_t>(i)));
    return out;
}

// Three prompts of 2 blocks with one external block each, loaded async (the first two tests' setup).
void add_three_two_block_loads(SchedulerHarness& h) {
    for (const char* id : {"r1", "r2", "r3"}) h.add(id, 2 * kBs, 16);
}

// The first step of the two tests below under #42568: r1 and r2 parked in WAITING_FOR_REMOTE_KVS, nothing
// scheduled, r3 still waiting and never looked up.
void check_two_loads_parked(SchedulerHarness& h, const SchedulerOutput& out, const MockConnector& connector) {
    CHECK(h.scheduler.running().empty());
    CHECK(h.scheduler.skipped_waiting().size() == 2);
    CHECK(h.scheduler.waiting().size() == 1);
    CHECK(out.total_num_scheduled_tokens == 0);
    CHECK(connector.lookups == 2);
    for (const auto& id : h.scheduler.skipped_waiting()) CHECK(h.req(id).status == RequestStatus::waiting_for_remote_kvs);
}

}  // namespace

TEST_CASE("test_async_loads_count_toward_active_request_limit",
          "[upstream:test_kv_load_failure_recovery.py::test_async_loads_count_toward_active_request_limit]") {
    MockConnector connector({{"r1", kBs}, {"r2", kBs}, {"r3", kBs}}, /*load_async=*/true);
    SECTION("+pr42568: the parked loads take both slots of max_num_seqs=2") {
        SchedulerHarness h(upstream_config(2, 64), &connector, "v0.30.0+pr42568");
        add_three_two_block_loads(h);
        const SchedulerOutput out = schedule(h);
        check_two_loads_parked(h, out, connector);

        h.scheduler.update_from_output(out, runner_output({}, {"r1", "r2"}, {}));
        const SchedulerOutput next = schedule(h);
        CHECK(h.scheduler.running().size() == 2);
        CHECK(h.scheduler.skipped_waiting().empty());
        CHECK(h.scheduler.waiting().size() == 1);
        CHECK(next.total_num_scheduled_tokens == 2 * kBs);
        CHECK(connector.lookups == 2);
    }
    SECTION("v0.30.0 (uncounted): all three loads are admitted") {
        SchedulerHarness h(upstream_config(2, 64), &connector, "v0.30.0");
        add_three_two_block_loads(h);
        schedule(h);
        CHECK(h.scheduler.skipped_waiting().size() == 3);
        CHECK(connector.lookups == 3);
    }
}

TEST_CASE("test_async_loads_count_toward_token_budget",
          "[upstream:test_kv_load_failure_recovery.py::test_async_loads_count_toward_token_budget]") {
    MockConnector connector({{"r1", kBs}, {"r2", kBs}, {"r3", kBs}}, true);
    SECTION("+pr42568: two 16-token loads use the budget of 32") {
        SchedulerHarness h(upstream_config(8, 32), &connector, "v0.30.0+pr42568");
        add_three_two_block_loads(h);
        const SchedulerOutput out = schedule(h);
        check_two_loads_parked(h, out, connector);
        for (const auto& id : h.scheduler.skipped_waiting()) CHECK(h.req(id).num_computed_tokens == kBs);
    }
    SECTION("v0.30.0 (uncounted): loads cost no budget") {
        SchedulerHarness h(upstream_config(8, 32), &connector, "v0.30.0");
        add_three_two_block_loads(h);
        schedule(h);
        CHECK(h.scheduler.skipped_waiting().size() == 3);
    }
}

TEST_CASE("test_large_async_load_is_limited_by_token_budget",
          "[upstream:test_kv_load_failure_recovery.py::test_large_async_load_is_limited_by_token_budget]") {
    MockConnector connector({{"r1", 4 * kBs}}, true);
    SECTION("+pr42568: a 64-token hit loads 32 (the budget), the rest is computed") {
        SchedulerHarness h(upstream_config(4, 32), &connector, "v0.30.0+pr42568");
        h.add("r1", 4 * kBs, 16);
        const SchedulerOutput out = schedule(h);
        CHECK(h.scheduler.running().empty());
        REQUIRE(h.scheduler.skipped_waiting().size() == 1);
        CHECK(h.scheduler.skipped_waiting().front() == "r1");
        CHECK(h.req("r1").status == RequestStatus::waiting_for_remote_kvs);
        CHECK(h.req("r1").num_computed_tokens == 2 * kBs);
        CHECK(out.total_num_scheduled_tokens == 0);
        CHECK(connector.last_alloc_external == 2 * kBs);

        h.scheduler.update_from_output(out, runner_output({}, {"r1"}, {}));
        const SchedulerOutput next = schedule(h);
        CHECK(h.scheduler.running().size() == 1);
        CHECK(h.scheduler.skipped_waiting().empty());
        CHECK(next.total_num_scheduled_tokens == 2 * kBs);
        CHECK(connector.lookups == 1);
    }
    SECTION("v0.30.0 (uncounted): the whole prompt is loaded") {
        SchedulerHarness h(upstream_config(4, 32), &connector, "v0.30.0");
        h.add("r1", 4 * kBs, 16);
        schedule(h);
        CHECK(h.req("r1").num_computed_tokens == 4 * kBs);
        CHECK(connector.last_alloc_external == 4 * kBs);
    }
}

TEST_CASE("test_in_flight_async_loads_limit_later_async_admission",
          "[upstream:test_kv_load_failure_recovery.py::test_in_flight_async_loads_limit_later_async_admission]") {
    MockConnector connector({{"loading", 2 * kBs}}, true);
    const bool counted = GENERATE(true, false);
    INFO((counted ? "+pr42568" : "v0.30.0 (uncounted)"));
    SchedulerHarness h(upstream_config(8, 32), &connector, counted ? "v0.30.0+pr42568" : "v0.30.0");
    h.add("loading", 2 * kBs, 16);
    const SchedulerOutput out = schedule(h);
    CHECK(h.scheduler.running().empty());
    CHECK(h.scheduler.skipped_waiting().size() == 1);
    CHECK(h.req("loading").status == RequestStatus::waiting_for_remote_kvs);
    CHECK(h.req("loading").num_computed_tokens == 2 * kBs);
    CHECK(out.total_num_scheduled_tokens == 0);

    h.add("local", 2 * kBs, 16);
    connector.hits = {{"local", kBs}};
    const SchedulerOutput next = schedule(h);
    if (counted) {  // the load in flight holds the whole max_num_batched_tokens: "local" computes its prompt
        CHECK(h.scheduler.running() == std::vector<std::string>{"local"});
        REQUIRE(h.scheduler.skipped_waiting().size() == 1);
        CHECK(h.scheduler.skipped_waiting().front() == "loading");
        CHECK(h.req("local").status == RequestStatus::running);
        CHECK(next.total_num_scheduled_tokens == 2 * kBs);
        CHECK(connector.last_alloc_external == 0);
    } else {  // "local" parks with an async load of its own
        CHECK(h.scheduler.running().empty());
        CHECK(h.req("local").status == RequestStatus::waiting_for_remote_kvs);
        CHECK(connector.last_alloc_external == kBs);
    }
}

TEST_CASE("test_async_load_failure", "[upstream:test_kv_load_failure_recovery.py::test_async_load_failure]") {
    const std::vector<int> invalid_idxs = GENERATE(std::vector<int>{0, 98}, std::vector<int>{50, 98}, std::vector<int>{98});
    const std::string variant = GENERATE(std::string("v0.30.0"), std::string("v0.30.0+pr42568"));
    INFO("invalid_block_idxs=" << Catch::Detail::stringify(invalid_idxs) << " variant=" << variant);
    constexpr int kExternal = 99 * kBs;
    MockConnector connector({{"r1", kExternal}, {"r2", kExternal}, {"r3", kExternal}}, true);
    SchedulerHarness h(upstream_config(16, kExternal * 3), &connector, variant);
    for (const char* id : {"r1", "r2", "r3"}) h.add(id, 100 * kBs, 16);
    const SchedulerOutput out = schedule(h);
    CHECK(h.scheduler.waiting().empty());
    CHECK(h.scheduler.skipped_waiting().size() == 3);
    for (const auto& id : h.scheduler.skipped_waiting()) {
        CHECK(h.req(id).num_computed_tokens == kExternal);
        CHECK(h.req(id).status == RequestStatus::waiting_for_remote_kvs);
    }
    CHECK(connector.lookups == 3);

    const std::set<BlockId> invalid = blocks_at(h.blocks("r2"), invalid_idxs);
    h.scheduler.update_from_output(out, runner_output({}, {"r1", "r3"}, invalid));
    CHECK(h.scheduler.waiting().empty());
    CHECK(h.scheduler.skipped_waiting().size() == 3);
    for (const auto& id : h.scheduler.skipped_waiting()) {
        INFO(id);
        CHECK(h.req(id).num_computed_tokens == (id == "r2" ? invalid_idxs.front() * kBs : kExternal));
        CHECK(h.req(id).status == RequestStatus::waiting_for_remote_kvs);
    }
    CHECK(h.scheduler.failed_recving_kv_req_ids() == std::set<std::string>{"r2"});
    CHECK(connector.lookups == 3);
}

TEST_CASE("test_sync_load_failure", "[upstream:test_kv_load_failure_recovery.py::test_sync_load_failure]") {
    const std::vector<int> invalid_idxs = GENERATE(std::vector<int>{0, 98}, std::vector<int>{50, 98}, std::vector<int>{98});
    INFO("invalid_block_idxs=" << Catch::Detail::stringify(invalid_idxs));
    constexpr int kExternal = 99 * kBs;
    MockConnector connector({{"r1", kExternal}, {"r2", kExternal}, {"r3", kExternal}}, false);
    SchedulerHarness h(upstream_config(), &connector);
    for (const char* id : {"r1", "r2", "r3"}) h.add(id, 100 * kBs, 16);
    const SchedulerOutput out = schedule(h);
    CHECK(h.scheduler.running().size() == 3);
    REQUIRE(out.scheduled_new_reqs.size() == 3);
    for (const auto& nr : out.scheduled_new_reqs) CHECK(nr.num_computed_tokens == kExternal);
    CHECK(connector.lookups == 3);

    const std::set<BlockId> invalid = blocks_at(out.scheduled_new_reqs[1].block_ids, invalid_idxs);
    h.scheduler.update_from_output(out, runner_output({"r1", "r2", "r3"}, {}, invalid));
    REQUIRE(h.scheduler.running().size() == 1);
    CHECK(h.scheduler.running()[0] == "r2");
    CHECK(h.req("r2").num_computed_tokens == invalid_idxs.front() * kBs);
    CHECK(connector.lookups == 3);
    CHECK(connector.finished_calls == 2);
}

TEST_CASE("test_sync_load_failure_with_shared_blocks",
          "[upstream:test_kv_load_failure_recovery.py::test_sync_load_failure_with_shared_blocks]") {
    const std::vector<int> invalid_idxs = GENERATE(std::vector<int>{0, 49}, std::vector<int>{25, 49}, std::vector<int>{49});
    INFO("invalid_block_idxs=" << Catch::Detail::stringify(invalid_idxs));
    constexpr int kExternal = 99 * kBs;
    constexpr int kCommonPrefix = 50 * kBs;
    MockConnector connector({{"r1", kExternal}}, false);
    SchedulerHarness h(upstream_config(), &connector);
    // create_request(common_prefix_len=...): a shared prefix, then a suffix of the request's own.
    for (const auto& [id, base] : {std::pair{"r1", 100000}, std::pair{"r2", 200000}}) {
        std::vector<TokenId> prompt = tokens(kCommonPrefix, 1);
        const auto suffix = tokens(100 * kBs - kCommonPrefix, base);
        prompt.insert(prompt.end(), suffix.begin(), suffix.end());
        h.scheduler.add_request(std::make_unique<Request>(id, prompt, 16, kBs, 0, KvTransferParams{}));
    }
    const SchedulerOutput out = schedule(h);
    CHECK(h.scheduler.running().size() == 2);
    REQUIRE(out.scheduled_new_reqs.size() == 2);
    const std::map<std::string, int> before = {{"r1", kExternal}, {"r2", kCommonPrefix}};
    for (const auto& nr : out.scheduled_new_reqs) CHECK(nr.num_computed_tokens == before.at(nr.req_id));
    CHECK(connector.lookups == 2);

    const std::set<BlockId> invalid = blocks_at(out.scheduled_new_reqs[0].block_ids, invalid_idxs);
    h.scheduler.update_from_output(out, runner_output({"r1", "r2"}, {}, invalid));
    // All the common prefix blocks will be computed by r1.
    const std::map<std::string, int> after = {{"r1", invalid_idxs.front() * kBs}, {"r2", kCommonPrefix}};
    CHECK(h.scheduler.running().size() == 2);
    for (const auto& id : h.scheduler.running()) CHECK(h.req(id).num_computed_tokens == after.at(id));
    CHECK(connector.lookups == 2);
}

TEST_CASE("test_async_progressive_load_failure",
          "[upstream:test_kv_load_failure_recovery.py::test_async_progressive_load_failure]") {
    // The parametrisations' sets {0, 50, 98} and {98, 50, 0} iterate (CPython) as 0, 50, 98 and 0, 98, 50.
    const std::vector<int> invalid_idxs = GENERATE(std::vector<int>{0, 50, 98}, std::vector<int>{0, 98, 50});
    const std::string variant = GENERATE(std::string("v0.30.0"), std::string("v0.30.0+pr42568"));
    INFO("invalid_block_idxs=" << Catch::Detail::stringify(invalid_idxs) << " variant=" << variant);
    constexpr int kExternal = 99 * kBs;
    MockConnector connector({{"r1", kExternal}}, true);
    SchedulerHarness h(upstream_config(16, kExternal), &connector, variant);
    h.add("r1", 100 * kBs, 16);
    const SchedulerOutput out = schedule(h);
    CHECK(h.scheduler.waiting().empty());
    REQUIRE(h.scheduler.skipped_waiting().size() == 1);
    CHECK(h.scheduler.skipped_waiting().front() == "r1");
    CHECK(h.req("r1").num_computed_tokens == kExternal);
    CHECK(h.req("r1").status == RequestStatus::waiting_for_remote_kvs);
    CHECK(connector.lookups == 1);

    int min_invalid_idx = 100;
    for (int idx : invalid_idxs) {
        INFO("invalid block index " << idx);
        h.scheduler.update_from_output(out, runner_output({}, {}, blocks_at(h.blocks("r1"), {idx})));
        min_invalid_idx = std::min(min_invalid_idx, idx);
        CHECK(h.scheduler.waiting().empty());
        REQUIRE(h.scheduler.skipped_waiting().size() == 1);
        CHECK(h.scheduler.skipped_waiting().front() == "r1");
        CHECK(h.req("r1").num_computed_tokens == min_invalid_idx * kBs);
        CHECK(h.req("r1").status == RequestStatus::waiting_for_remote_kvs);
        CHECK(h.scheduler.failed_recving_kv_req_ids() == std::set<std::string>{"r1"});
        CHECK(connector.lookups == 1);
    }
}

// Partial: upstream hand-makes its state (B set PREEMPTED, its blocks freed, prepended to skipped_waiting ahead of
// A's async load). Here B reaches the head of skipped_waiting holding no blocks through a pending lookup, A parks
// behind it, and upstream's final assert (A runs) is checked.
TEST_CASE("test_async_load_deadlock_head_of_line_blocking: a finished load behind a blockless head that cannot be admitted",
          "[upstream:test_kv_load_failure_recovery.py::test_async_load_deadlock_head_of_line_blocking]") {
    const std::string variant = GENERATE(std::string("v0.30.0+pr45406"), std::string("v0.30.0+pr42568+pr45406"),
                                         std::string("v0.30.0"));
    INFO(variant);
    MockConnector connector({{"A", 16 * kBs}, {"B", 16 * kBs}}, true);
    connector.pending = {"B"};
    SchedulerHarness h(upstream_config(1, 512, 24), &connector, variant);
    h.add("B", 16 * kBs, 16);
    h.add("A", 16 * kBs, 16);
    const SchedulerOutput out = schedule(h);
    CHECK(h.req("A").status == RequestStatus::waiting_for_remote_kvs);
    CHECK(h.scheduler.skipped_waiting() == std::deque<std::string>{"B", "A"});
    CHECK_FALSE(h.scheduler.kv_cache_manager().has_blocks("B"));

    h.scheduler.update_from_output(out, runner_output({}, {"A"}, {}));
    schedule(h);  // B's lookup answers 16 blocks, which do not fit beside A's
    if (variant == "v0.30.0") {  // the scan stops at B every step
        CHECK(h.scheduler.running().empty());
        CHECK(h.scheduler.skipped_waiting() == std::deque<std::string>{"B", "A"});
    } else {
        REQUIRE(h.scheduler.running().size() == 1);
        CHECK(h.scheduler.running()[0] == "A");
    }
}
