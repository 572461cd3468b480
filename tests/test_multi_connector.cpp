// MultiConnector against vllm/distributed/kv_transfer/kv_connector/v1/multi_connector.py
// @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1 and @ a4a2a8ee6926f64110185dcf028df78326563436 (older loser blocks), with small fake children.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scheduler_fixture.h"
#include "sim/common/prng.h"
#include "sim/connector/mooncake/mooncake_connector_scheduler.h"
#include "sim/connector/mooncake/mooncake_connector_worker.h"
#include "sim/connector/multi_connector.h"
#include "sim/core/sched/scheduler.h"
#include "sim/common/event_log.h"
#include "sim/variant/variant.h"
#include "sim/environment/fault_schedule.h"
#include "sim/environment/worker_env.h"

using namespace kvsim;

namespace {

struct FakeMeta : ConnectorMetadata {
    explicit FakeMeta(std::string t) : tag(std::move(t)) {}
    std::string tag;
    std::vector<LogEvent> log_events() const override {
        std::vector<LogEvent> events;
        events.push_back(make_event(EventCategory::meta, "{tag}").text("tag", tag).take());
        return events;
    }
};

// A scripted scheduler-side child that records every call.
struct FakeChild : KVConnectorScheduler {
    explicit FakeChild(std::string l) : label(std::move(l)) {}
    struct Alloc {
        std::string req_id;
        KVCacheBlocks blocks;
        int num_external_tokens;
    };
    std::string label;
    MatchResult match{0, false};
    bool delay = false;
    bool push = false;
    std::vector<BlockId> pins;
    int match_calls = 0;
    int builds = 0;
    std::vector<Alloc> allocs;
    std::vector<KVConnectorOutput> outputs;
    std::vector<std::string> finished;
    std::vector<std::vector<BlockId>> finished_blocks;

    std::string_view name() const override { return label; }
    MatchResult get_num_new_matched_tokens(Request&, int) override {
        ++match_calls;
        return match;
    }
    void update_state_after_alloc(Request& request, const KVCacheBlocks& blocks, int n) override {
        allocs.push_back({request.id(), blocks, n});
    }
    std::shared_ptr<const ConnectorMetadata> build_connector_meta(const SchedulerOutput&) override {
        return std::make_shared<FakeMeta>(label + " build " + std::to_string(++builds));
    }
    void update_connector_output(const KVConnectorOutput& output) override { outputs.push_back(output); }
    FinishResult request_finished(Request& request, const std::vector<BlockId>& block_ids) override {
        finished.push_back(request.id());
        finished_blocks.push_back(block_ids);
        return {delay};
    }
    bool has_pending_push_work() const override { return push; }
    void append_pinned_blocks(std::vector<BlockId>& out) const override { out.insert(out.end(), pins.begin(), pins.end()); }
};

// A scripted worker-side child.
struct FakeWorker : KVConnectorWorker {
    std::map<int, KVConnectorOutput> script;  // step -> what get_finished reports
    std::vector<std::pair<int, std::string>> seen;
    bool is_busy = false;
    void bind_and_start(int step, const ConnectorMetadata* metadata) override {
        const auto* m = dynamic_cast<const FakeMeta*>(metadata);
        seen.emplace_back(step, m != nullptr ? m->tag : std::string("none"));
    }
    KVConnectorOutput get_finished(int step, const std::set<std::string>&) override {
        auto it = script.find(step);
        return it == script.end() ? KVConnectorOutput{} : it->second;
    }
    bool busy() const override { return is_busy; }
};

Variant empty_loser_variant() {
    Variant v = require_variant("v0.29.0");
    v.name = "v0.29.0 with empty loser blocks";
    v.multi_loser_blocks = MultiLoserBlocks::empty;
    return v;
}

std::vector<TokenId> prompt_of(int n, int base = 100) {
    std::vector<TokenId> out;
    for (int i = 0; i < n; ++i) out.push_back(base + i);
    return out;
}

Request make_request(const std::string& id, int prompt_len = 10, KvTransferParams params = {}) {
    return Request(id, prompt_of(prompt_len), 4, 4, 0, params);
}

KVCacheBlocks blocks_of(std::vector<BlockId> all, std::vector<BlockId> unhashed) {
    return {GroupBlockIds{std::move(all)}, GroupBlockIds{std::move(unhashed)}};
}

// Builds a Multi over fakes and keeps raw pointers for inspection.
struct MultiRig {
    explicit MultiRig(std::size_t n, const Variant& variant = require_variant("v0.29.0")) {
        std::vector<std::unique_ptr<KVConnectorScheduler>> children;
        for (std::size_t i = 0; i < n; ++i) {
            auto c = std::make_unique<FakeChild>("c" + std::to_string(i));
            fakes.push_back(c.get());
            children.push_back(std::move(c));
        }
        multi = std::make_unique<MultiConnectorScheduler>(std::move(children), variant);
    }
    FakeChild& operator[](std::size_t i) { return *fakes.at(i); }
    std::vector<FakeChild*> fakes;
    std::unique_ptr<MultiConnectorScheduler> multi;
};

struct MultiWorkerRig {
    explicit MultiWorkerRig(std::size_t n) {
        std::vector<std::unique_ptr<KVConnectorWorker>> children;
        for (std::size_t i = 0; i < n; ++i) {
            auto c = std::make_unique<FakeWorker>();
            fakes.push_back(c.get());
            children.push_back(std::move(c));
        }
        multi = std::make_unique<MultiConnectorWorker>(std::move(children), require_variant("v0.29.0"));
    }
    FakeWorker& operator[](std::size_t i) { return *fakes.at(i); }
    std::vector<FakeWorker*> fakes;
    std::unique_ptr<MultiConnectorWorker> multi;
};

KVConnectorOutput sending(std::set<std::string> ids) {
    KVConnectorOutput out;
    out.finished_sending = std::move(ids);
    return out;
}

// A copy (the children's metadata stay shared), so callers may pass a temporary.
MultiKVConnectorMetadata as_multi(const std::shared_ptr<const ConnectorMetadata>& meta) {
    const auto* m = dynamic_cast<const MultiKVConnectorMetadata*>(meta.get());
    REQUIRE(m != nullptr);
    return *m;
}

SchedulerOutput output_with(std::shared_ptr<const ConnectorMetadata> meta) {
    SchedulerOutput out;
    out.kv_connector_metadata = std::move(meta);
    return out;
}

}  // namespace

// ---------------------------------------------------------------- scheduler side

TEST_CASE("multi first child with a match wins and every child is asked", "[multi][upstream:test_multi_connector.py::test_multi_example_connector_consistency]") {
    MultiRig rig(3);
    rig[0].match = {0, false};
    rig[1].match = {5, true};
    rig[2].match = {7, false};
    Request r = make_request("r");
    const MatchResult m = rig.multi->get_num_new_matched_tokens(r, 0);
    CHECK(m.num_tokens == 5);
    CHECK(m.load_async);  // the chosen child's own flag
    CHECK(rig[0].match_calls == 1);
    CHECK(rig[1].match_calls == 1);
    CHECK(rig[2].match_calls == 1);  // asked although it cannot win
    CHECK(rig.multi->requests_to_connector() == std::map<std::string, int>{{"r", 1}});
    CHECK(rig.multi->name() == "multi");
}

TEST_CASE("multi no match returns zero and chooses no child", "[multi]") {
    MultiRig rig(2);
    Request r = make_request("r");
    const MatchResult m = rig.multi->get_num_new_matched_tokens(r, 0);
    CHECK(m.num_tokens == 0);
    CHECK_FALSE(m.load_async);
    CHECK(rig.multi->requests_to_connector().empty());
}

TEST_CASE("multi a pending child short-circuits the lookup", "[multi]") {
    MultiRig rig(3);
    rig[0].match = {4, true};
    rig[1].match = {std::nullopt, false};
    rig[2].match = {9, false};
    Request r = make_request("r");
    const MatchResult m = rig.multi->get_num_new_matched_tokens(r, 0);
    CHECK_FALSE(m.num_tokens.has_value());
    CHECK_FALSE(m.load_async);
    CHECK(rig[0].match_calls == 1);
    CHECK(rig[1].match_calls == 1);
    CHECK(rig[2].match_calls == 0);  // not asked in this pass
    // Derived (notes 1.1): the index written before the None stays.
    CHECK(rig.multi->requests_to_connector() == std::map<std::string, int>{{"r", 0}});
}

TEST_CASE("multi update_state_after_alloc losers get the real blocks with variant real", "[multi][upstream:test_multi_connector.py::test_multi_example_connector_consistency]") {
    MultiRig rig(3, require_variant("v0.29.0"));
    rig[1].match = {6, true};
    Request r = make_request("r");
    rig.multi->get_num_new_matched_tokens(r, 4);
    const KVCacheBlocks blocks = blocks_of({1, 2, 3}, {2, 3});
    rig.multi->update_state_after_alloc(r, blocks, 6);
    for (std::size_t i = 0; i < 3; ++i) {
        REQUIRE(rig[i].allocs.size() == 1);
        CHECK(rig[i].allocs[0].blocks.block_ids == blocks.block_ids);
        CHECK(rig[i].allocs[0].blocks.unhashed_block_ids == blocks.unhashed_block_ids);
        CHECK(rig[i].allocs[0].num_external_tokens == (i == 1 ? 6 : 0));
    }
}

TEST_CASE("multi update_state_after_alloc losers get empty blocks with variant empty", "[multi]") {
    MultiRig rig(3, empty_loser_variant());
    rig[1].match = {6, true};
    Request r = make_request("r");
    rig.multi->get_num_new_matched_tokens(r, 4);
    const KVCacheBlocks blocks = blocks_of({1, 2, 3}, {2, 3});
    rig.multi->update_state_after_alloc(r, blocks, 6);
    CHECK(rig[1].allocs.at(0).blocks.block_ids == blocks.block_ids);
    CHECK(rig[1].allocs.at(0).num_external_tokens == 6);
    for (std::size_t i : {0u, 2u}) {
        const auto& a = rig[i].allocs.at(0);
        CHECK(a.blocks.block_ids == GroupBlockIds(1));  // new_empty(): same group structure, no blocks
        CHECK(a.blocks.unhashed_block_ids == GroupBlockIds(1));
        CHECK(a.num_external_tokens == 0);
    }
}

TEST_CASE("multi update_state_after_alloc without a chosen child treats all as losers", "[multi]") {
    for (const Variant& v : {require_variant("v0.29.0"), empty_loser_variant()}) {
        MultiRig rig(2, v);
        Request r = make_request("r");
        rig.multi->get_num_new_matched_tokens(r, 0);
        const KVCacheBlocks blocks = blocks_of({1, 2}, {1, 2});
        rig.multi->update_state_after_alloc(r, blocks, 0);
        for (std::size_t i = 0; i < 2; ++i) {
            const auto& a = rig[i].allocs.at(0);
            CHECK(a.num_external_tokens == 0);
            CHECK(a.blocks.block_ids ==
                  (v.multi_loser_blocks == MultiLoserBlocks::real ? blocks.block_ids : GroupBlockIds(1)));
        }
    }
}

TEST_CASE("multi second pass gives the chosen child zero tokens too", "[multi]") {
    MultiRig rig(2);
    rig[0].match = {8, true};
    Request r = make_request("r");
    rig.multi->get_num_new_matched_tokens(r, 0);
    const KVCacheBlocks blocks = blocks_of({1, 2, 3}, {1, 2, 3});
    rig.multi->update_state_after_alloc(r, blocks, 8);
    rig.multi->update_state_after_alloc(r, blocks, 0);  // after promotion (SCHED rule 5)
    CHECK(rig[0].allocs.at(0).num_external_tokens == 8);
    CHECK(rig[0].allocs.at(1).num_external_tokens == 0);
    CHECK(rig[0].allocs.at(1).blocks.block_ids == blocks.block_ids);
    CHECK(rig[1].allocs.at(0).num_external_tokens == 0);
    CHECK(rig[1].allocs.at(1).num_external_tokens == 0);
}

TEST_CASE("multi build_connector_meta is the tuple of children in order", "[multi]") {
    MultiRig rig(2);
    const auto meta = rig.multi->build_connector_meta(SchedulerOutput{});
    const auto& m = as_multi(meta);
    REQUIRE(m.metadata.size() == 2);
    CHECK(dynamic_cast<const FakeMeta*>(m.metadata[0].get())->tag == "c0 build 1");
    CHECK(dynamic_cast<const FakeMeta*>(m.metadata[1].get())->tag == "c1 build 1");
    CHECK(m.extra_async_saves.empty());
    CHECK(m.describe() == std::vector<std::string>{"c0 c0 build 1", "c1 c1 build 1"});
}

TEST_CASE("multi request_finished counts delaying children into extra_async_saves", "[multi]") {
    MultiRig rig(3);
    rig[0].delay = true;
    rig[2].delay = true;
    rig[0].match = {3, true};
    Request r = make_request("r");
    rig.multi->get_num_new_matched_tokens(r, 0);
    r.status = RequestStatus::finished_length_capped;
    CHECK(rig.multi->request_finished(r, {4, 5}).delay_free_blocks);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(rig[i].finished == std::vector<std::string>{"r"});  // every child, once
        CHECK(rig[i].finished_blocks.at(0) == std::vector<BlockId>{4, 5});
    }
    CHECK(rig.multi->requests_to_connector().empty());  // popped
    CHECK(rig.multi->extra_async_saves() == std::map<std::string, int>{{"r", 1}});
    const auto meta = rig.multi->build_connector_meta(SchedulerOutput{});
    CHECK(as_multi(meta).extra_async_saves == std::map<std::string, int>{{"r", 1}});
    CHECK(as_multi(meta).describe().back() == "multi extra_async_saves r:1");
    CHECK(rig.multi->extra_async_saves().empty());  // moved and reset
    CHECK(as_multi(rig.multi->build_connector_meta(SchedulerOutput{})).extra_async_saves.empty());
}

TEST_CASE("multi request_finished with one or no delaying child", "[multi]") {
    MultiRig rig(2);
    Request r = make_request("r");
    r.status = RequestStatus::finished_aborted;
    CHECK_FALSE(rig.multi->request_finished(r, {1}).delay_free_blocks);
    rig[1].delay = true;
    Request s = make_request("s");
    s.status = RequestStatus::finished_length_capped;
    CHECK(rig.multi->request_finished(s, {1}).delay_free_blocks);
    CHECK(rig.multi->extra_async_saves().empty());
}

TEST_CASE("multi update_connector_output reaches every child", "[multi][upstream:test_multi_connector.py::test_multi_connector_worker_metadata]") {
    MultiRig rig(2);
    KVConnectorOutput out;
    out.finished_recving = {"a"};
    out.finished_sending = {"b"};
    out.completed_store_jobs = {{7, 2}};
    rig.multi->update_connector_output(out);
    for (std::size_t i = 0; i < 2; ++i) {
        REQUIRE(rig[i].outputs.size() == 1);
        CHECK(rig[i].outputs[0].finished_recving == out.finished_recving);
        CHECK(rig[i].outputs[0].finished_sending == out.finished_sending);
        CHECK(rig[i].outputs[0].completed_store_jobs == out.completed_store_jobs);
    }
}

TEST_CASE("multi pending push work is any child and pins are concatenated", "[multi]") {
    MultiRig rig(3);
    CHECK_FALSE(rig.multi->has_pending_push_work());
    rig[2].push = true;
    CHECK(rig.multi->has_pending_push_work());
    rig[0].pins = {3, 4};
    rig[2].pins = {4, 9};
    CHECK(rig.multi->pinned_blocks() == std::vector<BlockId>{3, 4, 4, 9});
}

// ---------------------------------------------------------------- worker side

TEST_CASE("multi worker dispatches each child its metadata element", "[multi]") {
    MultiRig sched(2);
    MultiWorkerRig rig(2);
    rig.multi->execute(3, output_with(sched.multi->build_connector_meta(SchedulerOutput{})));
    CHECK(rig[0].seen == std::vector<std::pair<int, std::string>>{{3, "c0 build 1"}});
    CHECK(rig[1].seen == std::vector<std::pair<int, std::string>>{{3, "c1 build 1"}});
    rig.multi->execute(4, SchedulerOutput{});  // no metadata at all
    CHECK(rig[0].seen.back() == std::pair<int, std::string>{4, "none"});
}

TEST_CASE("multi worker reports a send only after the last delaying child", "[multi]") {
    MultiRig sched(2);
    sched[0].delay = true;
    sched[1].delay = true;
    Request r = make_request("r");
    r.status = RequestStatus::finished_length_capped;
    sched.multi->request_finished(r, {1, 2});
    MultiWorkerRig rig(2);
    rig[0].script[1] = sending({"r"});
    rig[1].script[3] = sending({"r"});
    rig.multi->execute(1, output_with(sched.multi->build_connector_meta(SchedulerOutput{})));
    CHECK(rig.multi->extra_async_saves() == std::map<std::string, int>{{"r", 1}});
    CHECK(rig.multi->get_finished(1, {}).finished_sending.empty());  // first child swallowed
    CHECK(rig.multi->extra_async_saves().empty());
    CHECK(rig.multi->get_finished(2, {}).finished_sending.empty());
    CHECK(rig.multi->get_finished(3, {}).finished_sending == std::set<std::string>{"r"});
}

TEST_CASE("multi worker both children finishing in one step report once", "[multi]") {
    MultiWorkerRig rig(3);
    auto meta = std::make_shared<MultiKVConnectorMetadata>();
    meta->metadata.resize(3);
    meta->extra_async_saves = {{"r", 2}};
    rig.multi->execute(0, output_with(meta));
    for (std::size_t i = 0; i < 3; ++i) rig[i].script[1] = sending({"r"});
    CHECK(rig.multi->get_finished(1, {}).finished_sending == std::set<std::string>{"r"});
    CHECK(rig.multi->extra_async_saves().empty());
}

TEST_CASE("multi worker aggregates recving invalid blocks and store jobs", "[multi][upstream:test_multi_connector.py::test_multi_connector_worker_metadata]") {
    MultiWorkerRig rig(2);
    KVConnectorOutput a;
    a.finished_recving = {"x"};
    a.invalid_block_ids = {4};
    a.completed_store_jobs = {{1, 1}, {2, 1}};
    a.finished_sending = {"s"};
    KVConnectorOutput b;
    b.finished_recving = {"x", "y"};
    b.invalid_block_ids = {5};
    b.completed_store_jobs = {{2, 2}};
    rig[0].script[0] = a;
    rig[1].script[0] = b;
    const KVConnectorOutput out = rig.multi->get_finished(0, {});
    CHECK(out.finished_recving == std::set<std::string>{"x", "y"});  // union, no de-duplication across steps
    CHECK(out.invalid_block_ids == std::set<BlockId>{4, 5});
    CHECK(out.completed_store_jobs == std::map<std::int64_t, int>{{1, 1}, {2, 3}});
    CHECK(out.finished_sending == std::set<std::string>{"s"});  // no extra count: reported at once
}

TEST_CASE("multi worker is busy while any child is", "[multi]") {
    MultiWorkerRig rig(2);
    CHECK_FALSE(rig.multi->busy());
    rig[1].is_busy = true;
    CHECK(rig.multi->busy());
}

// ---------------------------------------------------------------- seed 000 shape

namespace {

// Multi(P2P kv_consumer, store-like fake) on a real Scheduler, stepped like the engine.
struct Seed000Rig {
    explicit Seed000Rig(const Variant& v) : prng(5), variant(v) {
        env.prng = &prng;
        env.faults = &faults;
        env.log = &log;
        ConnectorSpec p2p;
        p2p.kind = "p2p";
        p2p.role = KvRole::kv_consumer;
        std::vector<std::unique_ptr<KVConnectorScheduler>> children;
        children.push_back(std::make_unique<MooncakeConnectorScheduler>(p2p, log));
        auto s = std::make_unique<FakeChild>("store");
        store = s.get();
        store->match = {12, true};  // the prefill side already wrote the prompt to the store
        children.push_back(std::move(s));
        connector = std::make_unique<MultiConnectorScheduler>(std::move(children), variant);
        std::vector<std::unique_ptr<KVConnectorWorker>> workers;
        workers.push_back(std::make_unique<MooncakeConnectorWorker>(p2p, env));
        workers.push_back(std::make_unique<FakeWorker>());
        worker = std::make_unique<MultiConnectorWorker>(std::move(workers), variant);
        EngineConfig cfg;
        cfg.block_size = 4;
        cfg.num_blocks = 32;
        cfg.max_batched_tokens = 64;
        cfg.max_model_len = 256;
        scheduler = std::make_unique<Scheduler>(cfg, variant, connector.get(), log);
    }
    SchedulerOutput run_step() { return testing::step_engine(*scheduler, log, step++, worker.get()); }

    Prng prng;
    FaultSchedule faults;
    EventLog log;
    WorkerEnv env;
    Variant variant;
    FakeChild* store = nullptr;
    std::unique_ptr<MultiConnectorScheduler> connector;
    std::unique_ptr<MultiConnectorWorker> worker;
    std::unique_ptr<Scheduler> scheduler;
    int step = 0;
};

}  // namespace

TEST_CASE("multi seed 000 shape gives the store child zero external tokens", "[multi]") {
    for (const Variant& v : {require_variant("v0.29.0"), empty_loser_variant()}) {
        Seed000Rig rig(v);
        KvTransferParams params;
        params.do_remote_prefill = true;
        rig.scheduler->add_request(std::make_unique<Request>("d", prompt_of(12), 2, 4, 0, params));
        SchedulerOutput out0 = rig.run_step();
        // P2P is first and matched: it owns the load; the store was still asked.
        CHECK(rig.store->match_calls == 1);
        CHECK(rig.connector->requests_to_connector() == std::map<std::string, int>{{"d", 0}});
        CHECK(rig.scheduler->requests().at("d")->status == RequestStatus::waiting_for_remote_kvs);
        const auto blocks = rig.scheduler->kv_cache_manager().get_block_ids("d");
        REQUIRE(rig.store->allocs.size() == 1);
        CHECK(rig.store->allocs[0].req_id == "d");
        CHECK(rig.store->allocs[0].num_external_tokens == 0);
        CHECK(rig.store->allocs[0].blocks.block_ids ==
              (v.multi_loser_blocks == MultiLoserBlocks::real ? GroupBlockIds{blocks} : GroupBlockIds(1)));
        const auto& meta0 = as_multi(out0.kv_connector_metadata);
        CHECK(meta0.describe().front() == "c0 p2p pull d " + format_blocks(blocks));

        rig.run_step();                          // pull answers: finished_recving
        SchedulerOutput out2 = rig.run_step();   // promoted and scheduled: second update_state_after_alloc
        CHECK(out2.scheduled_new_reqs.size() == 1);
        REQUIRE(rig.store->allocs.size() == 2);
        CHECK(rig.store->allocs[1].num_external_tokens == 0);
        CHECK(rig.store->match_calls == 1);  // not re-queried once tokens are computed
        for (int i = 0; i < 3; ++i) rig.run_step();
        CHECK_FALSE(rig.scheduler->has_requests());
        CHECK(rig.store->finished == std::vector<std::string>{"d"});
        CHECK(rig.connector->requests_to_connector().empty());
    }
}
