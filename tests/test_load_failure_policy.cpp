// kv_load_failure_policy: the trace key, the variant default, and the scheduler's two policies for
// a load that reports invalid blocks (Scheduler._handle_invalid_blocks). Upstream tests transcribed
// here: tests/v1/kv_connector/unit/test_invalid_blocks_correctness.py @
// fb259d206840b391450454203e229668bd264861, test_kv_load_failure_recovery.py @
// c30af8668c06a53ca6757f992f8bf9125e3fdd41.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "properties/harness/run_trace.h"
#include "scheduler_fixture.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"

using namespace kvsim;
using namespace kvsim::testing;

namespace {

struct EmptyMetadata : ConnectorMetadata {
    std::vector<LogEvent> log_events() const override { return {}; }
};

// The upstream tests' Mock connector: a fixed external hit per request, loaded sync or async, and a
// record of every request_finished call (the request's status then, and the blocks it was given).
class RecordingConnector : public KVConnectorScheduler {
public:
    struct Finished {
        std::string req_id;
        RequestStatus status;
        std::vector<BlockId> blocks;
    };
    RecordingConnector(std::map<std::string, int> hits, bool load_async) : hits_(std::move(hits)), async_(load_async) {}
    std::string_view name() const override { return "recording"; }
    MatchResult get_num_new_matched_tokens(Request& request, int num_computed_tokens) override {
        const auto it = hits_.find(request.id());
        if (it == hits_.end() || num_computed_tokens > 0 || asked_.contains(request.id())) return {.num_tokens = 0};
        asked_.insert(request.id());
        return {.num_tokens = it->second, .load_async = async_};
    }
    void update_state_after_alloc(Request&, const KVCacheBlocks&, int) override {}
    std::shared_ptr<const ConnectorMetadata> build_connector_meta(const SchedulerOutput&) override {
        return std::make_shared<EmptyMetadata>();
    }
    void update_connector_output(const KVConnectorOutput&) override {}
    FinishResult request_finished(Request& request, const std::vector<BlockId>& block_ids) override {
        finished.push_back({request.id(), request.status, block_ids});
        return {};
    }
    std::vector<Finished> finished;

private:
    std::map<std::string, int> hits_;
    std::set<std::string> asked_;
    bool async_;
};

EngineConfig engine(std::optional<LoadFailurePolicy> policy, int block_size = 4) {
    EngineConfig cfg;
    cfg.block_size = block_size;
    cfg.num_blocks = 64;
    cfg.max_batched_tokens = 2048;
    cfg.max_model_len = 1024;
    cfg.kv_load_failure_policy = policy;
    return cfg;
}

// The model runner's output for one step: a sampled token for every request whose prefill completed,
// and the connector output `kv`.
ModelRunnerOutput runner_output(const SchedulerHarness& h, const SchedulerOutput& out, KVConnectorOutput kv) {
    ModelRunnerOutput mro;
    for (const auto& [id, n] : out.num_scheduled_tokens) {
        auto& sampled = mro.sampled_token_ids[id];
        const auto* slot = h.scheduler.requests().find(id);
        if (slot != nullptr && (*slot)->num_computed_tokens >= (*slot)->num_tokens())
            sampled.push_back(sampled_token(id, (*slot)->num_tokens()));
    }
    mro.kv_connector_output = std::move(kv);
    return mro;
}

using Transition = std::pair<std::optional<RequestStatus>, std::optional<RequestStatus>>;

std::vector<Transition> transitions_of(const Scheduler& s, const std::string& id) {
    std::vector<Transition> out;
    for (const StatusTransition& t : s.transitions())
        if (t.req_id == id) out.emplace_back(t.from, t.to);
    return out;
}

const Transition kNewToWaiting{std::nullopt, RequestStatus::waiting};

bool hashed(const Scheduler& s, BlockId id) { return s.kv_cache_manager().block_pool().block(id).hash.has_value(); }

constexpr int kPromptBlocks = 10;
constexpr int kExternalBlocks = 9;
constexpr int kInvalidIdx = 5;
constexpr int kBs = 4;

// One request r1 of kPromptBlocks blocks with kExternalBlocks of them loaded by the connector: the
// first step's output and the block table it got.
struct LoadedRequest {
    SchedulerOutput out;
    std::vector<BlockId> table;
};
LoadedRequest schedule_loaded_request(SchedulerHarness& h) {
    h.add("r1", kPromptBlocks * kBs, 4);
    h.log.set_step(0);
    LoadedRequest r{.out = h.scheduler.schedule(0), .table = {}};
    r.table = h.blocks("r1");
    return r;
}

}  // namespace

TEST_CASE("fail policy, sync load: FINISHED_ERROR, invalid and later blocks evicted, connector told, blocks freed",
          "[load_failure][upstream:test_invalid_blocks_correctness.py::test_sync_fail_invalid_blocks_evicted]") {
    RecordingConnector connector({{"r1", kExternalBlocks * kBs}}, /*load_async=*/false);
    SchedulerHarness h(engine(LoadFailurePolicy::fail, kBs), &connector);
    const LoadedRequest r = schedule_loaded_request(h);
    REQUIRE(h.scheduler.running() == std::vector<std::string>{"r1"});
    REQUIRE(h.req("r1").status == RequestStatus::running);
    REQUIRE(r.table.size() == static_cast<std::size_t>(kPromptBlocks));
    REQUIRE(r.out.scheduled_new_reqs.at(0).block_ids == r.table);
    const BlockId invalid = r.table[kInvalidIdx];
    REQUIRE(hashed(h.scheduler, invalid));  // a sync load's blocks are cached when allocated

    KVConnectorOutput kv;
    kv.invalid_block_ids = {invalid};
    h.scheduler.update_from_output(r.out, runner_output(h, r.out, kv));

    // The request ended FINISHED_ERROR and is gone: no longer tracked, not running, its blocks freed.
    CHECK(transitions_of(h.scheduler, "r1") ==
          std::vector<Transition>{kNewToWaiting, {RequestStatus::waiting, RequestStatus::running},
                                  {RequestStatus::running, RequestStatus::finished_error},
                                  {RequestStatus::finished_error, std::nullopt}});
    CHECK_FALSE(h.alive("r1"));
    CHECK(h.scheduler.running().empty());
    CHECK_FALSE(h.scheduler.kv_cache_manager().has_blocks("r1"));
    CHECK(h.scheduler.kv_cache_manager().block_pool().num_free_blocks() == 63);
    // The invalid block and every block after it lost their hash; the valid prefix keeps its own.
    for (int i = 0; i < kPromptBlocks; ++i) {
        INFO("block index " << i);
        CHECK(hashed(h.scheduler, r.table[static_cast<std::size_t>(i)]) == (i < kInvalidIdx));
    }
    // The connector was told once, with the blocks of the valid prefix (num_computed_tokens rewound).
    REQUIRE(connector.finished.size() == 1);
    CHECK(connector.finished[0].req_id == "r1");
    CHECK(connector.finished[0].status == RequestStatus::finished_error);
    CHECK(connector.finished[0].blocks == std::vector<BlockId>(r.table.begin(), r.table.begin() + kInvalidIdx));

    // A later request with the same prompt hits only the valid prefix.
    h.step = 1;
    h.add("r2", kPromptBlocks * kBs, 4, false, 1000);
    const SchedulerOutput next = h.run_step();
    REQUIRE(next.scheduled_new_reqs.size() == 1);
    CHECK(next.scheduled_new_reqs[0].num_computed_tokens == kInvalidIdx * kBs);
}

TEST_CASE("recompute policy, sync load: the request keeps running from the valid prefix with its blocks",
          "[load_failure][upstream:test_invalid_blocks_correctness.py::test_sync_recompute_blocks_not_freed_for_running_requests]") {
    RecordingConnector connector({{"r1", kExternalBlocks * kBs}}, false);
    SchedulerHarness h(engine(LoadFailurePolicy::recompute, kBs), &connector);
    const LoadedRequest r = schedule_loaded_request(h);
    const std::size_t before = connector.finished.size();
    KVConnectorOutput kv;
    kv.invalid_block_ids = {r.table[kInvalidIdx]};
    h.scheduler.update_from_output(r.out, runner_output(h, r.out, kv));

    CHECK(h.req("r1").status == RequestStatus::running);
    CHECK(h.req("r1").num_computed_tokens == kInvalidIdx * kBs);
    CHECK(h.req("r1").num_output_tokens() == 0);  // skipped in the output loop: no token sampled
    CHECK(h.scheduler.running() == std::vector<std::string>{"r1"});
    CHECK(h.blocks("r1") == r.table);  // not freed
    CHECK(connector.finished.size() == before);
    CHECK(hashed(h.scheduler, r.table[kInvalidIdx]));  // recompute evicts nothing
    h.step = 1;
    const SchedulerOutput again = h.run_step();
    CHECK(again.num_scheduled_tokens.contains("r1"));
}

TEST_CASE("fail policy, async load: the failed load ends FINISHED_ERROR and frees when the load reports",
          "[load_failure][async]") {
    RecordingConnector connector({{"r1", kExternalBlocks * kBs}}, /*load_async=*/true);
    SchedulerHarness h(engine(LoadFailurePolicy::fail, kBs), &connector);
    const LoadedRequest r = schedule_loaded_request(h);
    REQUIRE(h.req("r1").status == RequestStatus::waiting_for_remote_kvs);
    REQUIRE_FALSE(hashed(h.scheduler, r.table[0]));  // async blocks are cached only after the load

    SECTION("invalid blocks and finished_recving in one output") {
        KVConnectorOutput kv;
        kv.invalid_block_ids = {r.table[2]};
        kv.finished_recving = {"r1"};
        h.scheduler.update_from_output(r.out, runner_output(h, r.out, kv));
        CHECK_FALSE(h.alive("r1"));
        CHECK(h.scheduler.skipped_waiting().empty());
        CHECK(h.scheduler.finished_recving_kv_req_ids().empty());
    }
    SECTION("invalid blocks first: the blocks stay held until the load reports") {
        KVConnectorOutput kv;
        kv.invalid_block_ids = {r.table[2]};
        h.scheduler.update_from_output(r.out, runner_output(h, r.out, kv));
        REQUIRE(h.alive("r1"));
        CHECK(h.req("r1").status == RequestStatus::finished_error);
        CHECK(h.blocks("r1") == r.table);
        CHECK(h.scheduler.skipped_waiting().empty());
        KVConnectorOutput done;
        done.finished_recving = {"r1"};
        h.step = 1;
        h.run_step(done);
        CHECK_FALSE(h.alive("r1"));
    }
    CHECK(transitions_of(h.scheduler, "r1") ==
          std::vector<Transition>{kNewToWaiting, {RequestStatus::waiting, RequestStatus::waiting_for_remote_kvs},
                                  {RequestStatus::waiting_for_remote_kvs, RequestStatus::finished_error},
                                  {RequestStatus::finished_error, std::nullopt}});
    CHECK(h.scheduler.kv_cache_manager().block_pool().num_free_blocks() == 63);
    for (BlockId b : r.table) CHECK_FALSE(hashed(h.scheduler, b));  // never cached
    REQUIRE(connector.finished.size() == 1);
    CHECK(connector.finished[0].status == RequestStatus::finished_error);
    CHECK(connector.finished[0].blocks == std::vector<BlockId>(r.table.begin(), r.table.begin() + 2));
}

TEST_CASE("recompute policy, async load: marked for retry, nothing evicted",
          "[load_failure][async][upstream:test_invalid_blocks_correctness.py::test_async_recompute_blocks_not_cached_when_invalid]") {
    RecordingConnector connector({{"r1", kExternalBlocks * kBs}}, true);
    SchedulerHarness h(engine(LoadFailurePolicy::recompute, kBs), &connector);
    const LoadedRequest r = schedule_loaded_request(h);
    KVConnectorOutput kv;
    kv.invalid_block_ids = {r.table[kInvalidIdx]};
    h.scheduler.update_from_output(r.out, runner_output(h, r.out, kv));
    CHECK(h.req("r1").status == RequestStatus::waiting_for_remote_kvs);
    CHECK(h.req("r1").num_computed_tokens == kInvalidIdx * kBs);
    CHECK_FALSE(hashed(h.scheduler, r.table[kInvalidIdx]));
    KVConnectorOutput done;
    done.finished_recving = {"r1"};
    h.step = 1;
    h.run_step(done);
    CHECK(h.scheduler.finished_recving_kv_req_ids().contains("r1"));
    CHECK_FALSE(hashed(h.scheduler, r.table[kInvalidIdx]));
    h.run_step();  // promoted: only the valid prefix is cached, then it runs
    CHECK(h.req("r1").status == RequestStatus::running);
    CHECK(h.req("r1").num_computed_tokens >= kInvalidIdx * kBs);
    CHECK(hashed(h.scheduler, r.table[kInvalidIdx - 1]));
    CHECK(h.scheduler.finished_recving_kv_req_ids().empty());
    CHECK(connector.finished.empty());
}

TEST_CASE("the policy in force: the trace's, else the variant's release default", "[load_failure][variant]") {
    for (const auto& p : variant_presets()) CHECK(require_variant(p.name).load_failure_policy_default == LoadFailurePolicy::fail);
    CHECK(variant_flag_value(require_variant("v0.27.1"), "load_failure_policy_default") == "fail");
    Variant older = require_variant("v0.30.0");
    REQUIRE(set_variant_flag(older, "load_failure_policy_default", "recompute"));
    EventLog log;
    CHECK(Scheduler(engine(std::nullopt), require_variant("v0.30.0"), nullptr, log).load_failure_policy() ==
          LoadFailurePolicy::fail);
    CHECK(Scheduler(engine(std::nullopt), older, nullptr, log).load_failure_policy() == LoadFailurePolicy::recompute);
    CHECK(Scheduler(engine(LoadFailurePolicy::fail), older, nullptr, log).load_failure_policy() ==
          LoadFailurePolicy::fail);
    CHECK(Scheduler(engine(LoadFailurePolicy::recompute), require_variant("v0.30.0"), nullptr, log)
              .load_failure_policy() == LoadFailurePolicy::recompute);
}

TEST_CASE("kv_load_failure_policy: parse, print only when stated, round trip, bad value", "[load_failure][trace]") {
    const std::string base = "kvsim-trace 1\nengine block_size=4 num_blocks=8 max_model_len=28";
    const Trace unstated = parse_trace(base + "\n", "t.trace");
    CHECK_FALSE(unstated.engine.kv_load_failure_policy);
    CHECK(print_trace(unstated).find("kv_load_failure_policy") == std::string::npos);
    for (const char* value : {"fail", "recompute"}) {
        INFO(value);
        const Trace t = parse_trace(base + " kv_load_failure_policy=" + value + "\n", "t.trace");
        REQUIRE(t.engine.kv_load_failure_policy);
        CHECK(to_string(*t.engine.kv_load_failure_policy) == value);
        const std::string printed = print_trace(t);
        CHECK(printed.find(std::string("kv_load_failure_policy=") + value) != std::string::npos);
        CHECK(parse_trace(printed, "t.trace") == t);
    }
    CHECK_THROWS_WITH(parse_trace(base + " kv_load_failure_policy=retry\n", "t.trace"),
                      "t.trace:2: engine.kv_load_failure_policy: expected one of recompute, fail, got 'retry'");
}

TEST_CASE("a p2p load failure under each policy: the whole run", "[load_failure][trace]") {
    const std::string text =
        "kvsim-trace 1\n"
        "engine block_size=4 num_blocks=32 max_model_len=124 POLICY\n"
        "run max_steps=40\n"
        "connector p2p role=kv_consumer\n"
        "segment s len=12\n"
        "@0 arrive r1 prompt=s max_tokens=2 remote_prefill=on\n"
        "@0 fault load_fail request=r1\n";
    auto run = [&](const std::string& policy) {
        std::string t = text;
        t.replace(t.find("POLICY"), 6, policy);
        return run_trace(parse_trace(t, "t.trace"), require_variant("v0.30.0"));
    };
    auto statuses = [](const RunResult& r) {
        std::vector<std::string> out;
        for (const LogEvent& e : r.events)
            if (e.category == EventCategory::finish) out.emplace_back(e.text("status"));
        return out;
    };
    const RunResult failed = run("kv_load_failure_policy=fail");
    const RunResult unstated = run("");
    const RunResult recomputed = run("kv_load_failure_policy=recompute");
    for (const RunResult* r : {&failed, &unstated, &recomputed}) CHECK(r->verdict == Verdict::pass);
    CHECK(statuses(failed) == std::vector<std::string>{"FINISHED_ERROR"});
    CHECK(statuses(unstated) == statuses(failed));  // v0.30.0's default is fail
    CHECK(statuses(recomputed) == std::vector<std::string>{"FINISHED_LENGTH_CAPPED"});
}
