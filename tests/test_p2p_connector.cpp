// MooncakeConnector (P2P): scheduler and worker sides against
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1
// and the shapes of tests/v1/kv_connector/unit/test_mooncake_connector.py.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "scheduler_fixture.h"
#include "sim/common/prng.h"
#include "sim/common/upstream_assertion.h"
#include "sim/connector/mooncake/mooncake_connector_scheduler.h"
#include "sim/connector/mooncake/mooncake_connector_worker.h"
#include "sim/core/sched/scheduler.h"
#include "sim/common/event_log.h"
#include "sim/variant/variant.h"
#include "sim/environment/fault_schedule.h"
#include "sim/environment/worker_env.h"

using namespace kvsim;

namespace {

ConnectorSpec p2p_spec(KvRole role) {
    ConnectorSpec spec;
    spec.kind = "p2p";
    spec.role = role;
    return spec;
}

KvTransferParams d_params() {
    KvTransferParams p;
    p.do_remote_prefill = true;
    return p;
}

KvTransferParams p_params() {
    KvTransferParams p;
    p.do_remote_decode = true;
    return p;
}

std::vector<TokenId> prompt_of(int n, int base = 100) {
    std::vector<TokenId> out;
    for (int i = 0; i < n; ++i) out.push_back(base + i);
    return out;
}

Request make_request(const std::string& id, int prompt_len, KvTransferParams params, int max_tokens = 4) {
    return Request(id, prompt_of(prompt_len), max_tokens, 4, 0, params);
}

KVCacheBlocks blocks_of(std::vector<BlockId> all, std::vector<BlockId> unhashed) {
    return {GroupBlockIds{std::move(all)}, GroupBlockIds{std::move(unhashed)}};
}

// A copy, so callers may pass the temporary build_connector_meta returns.
MooncakeConnectorMetadata as_p2p(const std::shared_ptr<const ConnectorMetadata>& meta) {
    const auto* p = dynamic_cast<const MooncakeConnectorMetadata*>(meta.get());
    REQUIRE(p != nullptr);
    return *p;
}

std::string assertion_id(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const UpstreamAssertion& e) {
        return e.id();
    }
    return "";
}

struct RecordingObserver : WorkerObserver {
    std::vector<std::tuple<std::string, std::vector<BlockId>, std::string>> loads;
    std::vector<std::pair<std::string, std::vector<BlockId>>> sends;
    void save_emitted(const SaveJob&) override {}
    void save_read(const SaveJob&, int) override {}
    void send_read(const std::string& req_id, const std::vector<BlockId>& blocks) override {
        sends.emplace_back(req_id, blocks);
    }
    void load_written(const std::string& req_id, const std::vector<BlockId>& blocks, std::string_view source) override {
        loads.emplace_back(req_id, blocks, std::string(source));
    }
};

// Everything a worker needs, with the pointers wired.
struct WorkerRig {
    explicit WorkerRig(std::uint64_t seed = 7) : prng(seed) {
        env.prng = &prng;
        env.faults = &faults;
        env.observer = &observer;
        env.log = &log;
    }
    Prng prng;
    FaultSchedule faults;
    RecordingObserver observer;
    EventLog log;
    WorkerEnv env;
};

SchedulerOutput output_with(std::shared_ptr<MooncakeConnectorMetadata> meta) {
    SchedulerOutput out;
    out.kv_connector_metadata = std::move(meta);
    return out;
}

std::shared_ptr<MooncakeConnectorMetadata> pulls(std::vector<P2PPullMeta> p) {
    auto meta = std::make_shared<MooncakeConnectorMetadata>();
    meta->reqs_to_recv = std::move(p);
    return meta;
}

std::shared_ptr<MooncakeConnectorMetadata> sends(std::vector<P2PSendMeta> s, std::set<std::string> not_processed = {}) {
    auto meta = std::make_shared<MooncakeConnectorMetadata>();
    meta->reqs_to_send = std::move(s);
    meta->reqs_not_processed = std::move(not_processed);
    return meta;
}

void load_fail(FaultSchedule& faults, const std::string& id) {
    FaultEvent f;
    f.kind = FaultKind::load_fail;
    f.request_id = id;
    faults.apply(f);
}

// A real Scheduler wired to the P2P connector pair, stepped by hand like the engine.
struct EngineRig {
    EngineRig(KvRole role, WorkerConfig workers = {}, const std::string& variant = "v0.29.0")
        : connector(p2p_spec(role), log), worker(p2p_spec(role), env_rig.env),
          scheduler(engine_config(), require_variant(variant), &connector, log) {
        env_rig.env.config = workers;
    }
    static EngineConfig engine_config() {
        EngineConfig cfg;
        cfg.block_size = 4;
        cfg.num_blocks = 32;
        cfg.max_batched_tokens = 64;
        cfg.max_model_len = 256;
        return cfg;
    }
    void add(const std::string& id, int prompt_len, int max_tokens, KvTransferParams params) {
        scheduler.add_request(std::make_unique<Request>(id, prompt_of(prompt_len, 1000 * ++added), max_tokens, 4,
                                                        step, params));
    }
    SchedulerOutput run_step() { return testing::step_engine(scheduler, log, step++, &worker); }
    const Request& req(const std::string& id) const { return *scheduler.requests().at(id); }

    EventLog log;
    WorkerRig env_rig;
    MooncakeConnectorScheduler connector;
    MooncakeConnectorWorker worker;
    Scheduler scheduler;
    int step = 0;
    int added = 0;
};

}  // namespace

// ---------------------------------------------------------------- scheduler side

TEST_CASE("p2p role flags are strict equality", "[p2p]") {
    EventLog log;
    MooncakeConnectorScheduler consumer(p2p_spec(KvRole::kv_consumer), log);
    MooncakeConnectorScheduler producer(p2p_spec(KvRole::kv_producer), log);
    MooncakeConnectorScheduler both(p2p_spec(KvRole::kv_both), log);
    CHECK(consumer.is_kv_consumer());
    CHECK_FALSE(consumer.is_kv_producer());
    CHECK(producer.is_kv_producer());
    CHECK_FALSE(producer.is_kv_consumer());
    CHECK_FALSE(both.is_kv_producer());  // kv_both sets neither: both paths are active
    CHECK_FALSE(both.is_kv_consumer());
    CHECK(consumer.name() == "p2p");
}

TEST_CASE("p2p get_num_new_matched_tokens without params is zero", "[p2p]") {
    EventLog log;
    for (KvRole role : {KvRole::kv_consumer, KvRole::kv_producer, KvRole::kv_both}) {
        MooncakeConnectorScheduler s(p2p_spec(role), log);
        Request r = make_request("r", 10, {});
        const MatchResult m = s.get_num_new_matched_tokens(r, 0);
        CHECK(m.num_tokens == 0);
        CHECK_FALSE(m.load_async);
    }
}

TEST_CASE("p2p get_num_new_matched_tokens loads the uncomputed prompt asynchronously", "[p2p]") {
    EventLog log;
    for (KvRole role : {KvRole::kv_consumer, KvRole::kv_both}) {
        MooncakeConnectorScheduler s(p2p_spec(role), log);
        Request r = make_request("d", 10, d_params());
        MatchResult m = s.get_num_new_matched_tokens(r, 0);
        CHECK(m.num_tokens == 10);
        CHECK(m.load_async);
        m = s.get_num_new_matched_tokens(r, 8);  // local prefix hit of two blocks
        CHECK(m.num_tokens == 2);
        CHECK(m.load_async);
        m = s.get_num_new_matched_tokens(r, 10);  // nothing left to load
        CHECK(m.num_tokens == 0);
        CHECK_FALSE(m.load_async);
        // Side-effect free: the flag is still set.
        CHECK(r.kv_transfer_params.do_remote_prefill);
    }
}

TEST_CASE("p2p get_num_new_matched_tokens asserts on a producer asked to remote prefill", "[p2p]") {
    EventLog log;
    MooncakeConnectorScheduler s(p2p_spec(KvRole::kv_producer), log);
    Request r = make_request("d", 10, d_params());
    CHECK(assertion_id([&] { s.get_num_new_matched_tokens(r, 0); }) == "p2p_remote_prefill_on_producer");
    try {
        s.get_num_new_matched_tokens(r, 0);
    } catch (const UpstreamAssertion& e) {
        CHECK(std::string(e.what()) == "assert not self.is_kv_producer");
        CHECK(e.site().find("MooncakeConnectorScheduler.get_num_new_matched_tokens") != std::string::npos);
    }
    // A P request on the producer is not a load.
    Request p = make_request("p", 10, p_params());
    CHECK(s.get_num_new_matched_tokens(p, 0).num_tokens == 0);
}

TEST_CASE("p2p update_state_after_alloc queues a pull of the unhashed blocks and clears the flag", "[p2p]") {
    EventLog log;
    MooncakeConnectorScheduler s(p2p_spec(KvRole::kv_consumer), log);
    Request r = make_request("d", 10, d_params());
    s.update_state_after_alloc(r, blocks_of({5, 6, 7}, {6, 7}), 6);
    CHECK_FALSE(r.kv_transfer_params.do_remote_prefill);
    REQUIRE(s.reqs_need_recv().contains("d"));
    CHECK(s.reqs_need_recv().at("d") == GroupBlockIds{{6, 7}});
    const auto& meta = as_p2p(s.build_connector_meta(SchedulerOutput{}));
    REQUIRE(meta.reqs_to_recv.size() == 1);
    CHECK(meta.reqs_to_recv[0].req_id == "d");
    CHECK(meta.reqs_to_recv[0].local_block_ids == GroupBlockIds{{6, 7}});
    CHECK(meta.reqs_to_send.empty());
    CHECK(meta.describe() == std::vector<std::string>{"p2p pull d [6,7]"});
}

TEST_CASE("p2p update_state_after_alloc called twice pulls once", "[p2p]") {
    // SCHED: the async load is allocated with the real count, and after promotion the
    // scheduler calls update_state_after_alloc again with 0 external tokens.
    EventLog log;
    MooncakeConnectorScheduler s(p2p_spec(KvRole::kv_consumer), log);
    Request r = make_request("d", 10, d_params());
    s.update_state_after_alloc(r, blocks_of({1, 2, 3}, {1, 2, 3}), 10);
    CHECK(as_p2p(s.build_connector_meta(SchedulerOutput{})).reqs_to_recv.size() == 1);
    s.update_state_after_alloc(r, blocks_of({1, 2, 3}, {}), 0);
    const auto& second = as_p2p(s.build_connector_meta(SchedulerOutput{}));
    CHECK(second.reqs_to_recv.empty());
    CHECK(second.describe().empty());
}

TEST_CASE("p2p update_state_after_alloc with zero external tokens queues a notify-only pull", "[p2p]") {
    // Full local hit, or a MultiConnector sibling won the load: P must still be told to free.
    EventLog log;
    MooncakeConnectorScheduler s(p2p_spec(KvRole::kv_consumer), log);
    Request r = make_request("d", 10, d_params());
    s.update_state_after_alloc(r, blocks_of({1, 2, 3}, {3}), 0);
    CHECK_FALSE(r.kv_transfer_params.do_remote_prefill);
    const auto& meta = as_p2p(s.build_connector_meta(SchedulerOutput{}));
    REQUIRE(meta.reqs_to_recv.size() == 1);
    CHECK(meta.reqs_to_recv[0].local_block_ids.empty());  // upstream `()`
    CHECK(meta.describe() == std::vector<std::string>{"p2p pull d ()"});
}

TEST_CASE("p2p update_state_after_alloc pre-registers a send on the producer side", "[p2p]") {
    EventLog log;
    for (KvRole role : {KvRole::kv_producer, KvRole::kv_both}) {
        MooncakeConnectorScheduler s(p2p_spec(role), log);
        Request p = make_request("p", 10, p_params());
        s.update_state_after_alloc(p, blocks_of({1, 2, 3}, {1, 2, 3}), 0);
        CHECK(p.kv_transfer_params.do_remote_decode);  // stays set: request_finished reads it
        const auto& meta = as_p2p(s.build_connector_meta(SchedulerOutput{}));
        REQUIRE(meta.reqs_to_send.size() == 1);
        CHECK(meta.reqs_to_send[0].req_id == "p");
        CHECK(meta.reqs_to_send[0].block_ids.empty());
        CHECK(meta.describe() == std::vector<std::string>{"p2p send p pre-register"});
    }
}

TEST_CASE("p2p update_state_after_alloc role assertions", "[p2p]") {
    EventLog log;
    MooncakeConnectorScheduler consumer(p2p_spec(KvRole::kv_consumer), log);
    Request p = make_request("p", 10, p_params());
    CHECK(assertion_id([&] { consumer.update_state_after_alloc(p, blocks_of({1}, {1}), 0); }) ==
          "p2p_remote_decode_on_consumer");
    MooncakeConnectorScheduler producer(p2p_spec(KvRole::kv_producer), log);
    Request d = make_request("d", 10, d_params());
    CHECK(assertion_id([&] { producer.update_state_after_alloc(d, blocks_of({1}, {1}), 4); }) ==
          "p2p_remote_prefill_on_producer");
    // Without params nothing happens on any role.
    Request plain = make_request("x", 10, {});
    consumer.update_state_after_alloc(plain, blocks_of({1}, {1}), 0);
    producer.update_state_after_alloc(plain, blocks_of({1}, {1}), 0);
    CHECK(consumer.reqs_need_recv().empty());
    CHECK(producer.reqs_need_send().empty());
}

TEST_CASE("p2p build_connector_meta fills the sections of its role and resets", "[p2p]") {
    EventLog log;
    MooncakeConnectorScheduler both(p2p_spec(KvRole::kv_both), log);
    Request d = make_request("d", 10, d_params());
    Request p = make_request("p", 10, p_params());
    Request q = make_request("q", 10, p_params());
    both.update_state_after_alloc(d, blocks_of({1, 2, 3}, {1, 2, 3}), 10);
    both.update_state_after_alloc(p, blocks_of({4, 5, 6}, {4, 5, 6}), 0);
    q.status = RequestStatus::finished_aborted;
    both.request_finished(q, {7, 8});
    const auto& meta = as_p2p(both.build_connector_meta(SchedulerOutput{}));
    CHECK(meta.reqs_to_recv.size() == 1);
    CHECK(meta.reqs_to_send.size() == 1);
    CHECK(meta.reqs_not_processed == std::set<std::string>{"q"});
    CHECK(meta.describe() ==
          std::vector<std::string>{"p2p pull d [1,2,3]", "p2p send p pre-register", "p2p not_processed q"});
    const auto& next = as_p2p(both.build_connector_meta(SchedulerOutput{}));
    CHECK(next.reqs_to_recv.empty());
    CHECK(next.reqs_to_send.empty());
    CHECK(next.reqs_not_processed.empty());

    // A producer hands over not-processed ids; a consumer never builds a send section.
    MooncakeConnectorScheduler producer(p2p_spec(KvRole::kv_producer), log);
    Request a = make_request("a", 10, p_params());
    a.status = RequestStatus::finished_stopped;
    producer.request_finished(a, {1});
    const auto& pm = as_p2p(producer.build_connector_meta(SchedulerOutput{}));
    CHECK(pm.reqs_not_processed == std::set<std::string>{"a"});
    CHECK(producer.reqs_not_processed().empty());

    MooncakeConnectorScheduler consumer(p2p_spec(KvRole::kv_consumer), log);
    const auto& cm = as_p2p(consumer.build_connector_meta(SchedulerOutput{}));
    CHECK(cm.reqs_to_recv.empty());
    CHECK(cm.reqs_to_send.empty());
    CHECK(cm.reqs_not_processed.empty());
}

TEST_CASE("p2p request_finished length capped with blocks delays and queues the send", "[p2p][upstream:test_mooncake_connector.py::test_scheduler_request_finished]") {
    // test_scheduler_request_finished @ d52c7b50f0c58f80d666bbac65dc3eb6c2d22a97: blocks [10,11] -> delay, send [[10,11]].
    EventLog log;
    MooncakeConnectorScheduler s(p2p_spec(KvRole::kv_producer), log);
    Request p = make_request("p", 10, p_params());
    p.status = RequestStatus::finished_length_capped;
    CHECK(s.request_finished(p, {10, 11}).delay_free_blocks);
    REQUIRE(s.reqs_need_send().contains("p"));
    CHECK(s.reqs_need_send().at("p") == GroupBlockIds{{10, 11}});
    CHECK(s.reqs_not_processed().empty());
    const auto& meta = as_p2p(s.build_connector_meta(SchedulerOutput{}));
    CHECK(meta.describe() == std::vector<std::string>{"p2p send p [10,11]"});
}

TEST_CASE("p2p request_finished length capped without blocks frees at once", "[p2p]") {
    EventLog log;
    MooncakeConnectorScheduler s(p2p_spec(KvRole::kv_producer), log);
    Request p = make_request("p", 10, p_params());
    p.status = RequestStatus::finished_length_capped;
    CHECK_FALSE(s.request_finished(p, {}).delay_free_blocks);
    CHECK(s.reqs_need_send().empty());
    CHECK(s.reqs_not_processed().empty());
}

TEST_CASE("p2p request_finished other finishes mark the transfer not processed", "[p2p][upstream:test_mooncake_connector.py::test_scheduler_request_finished]") {
    EventLog log;
    for (RequestStatus status : {RequestStatus::finished_aborted, RequestStatus::finished_stopped,
                                 RequestStatus::finished_ignored, RequestStatus::finished_error}) {
        MooncakeConnectorScheduler s(p2p_spec(KvRole::kv_producer), log);
        Request p = make_request("p", 10, p_params());
        p.status = status;
        CHECK_FALSE(s.request_finished(p, {10, 11}).delay_free_blocks);
        CHECK(s.reqs_not_processed() == std::set<std::string>{"p"});
        CHECK(s.reqs_need_send().empty());
    }
}

TEST_CASE("p2p request_finished before alloc queues an empty pull", "[p2p]") {
    EventLog log;
    for (KvRole role : {KvRole::kv_consumer, KvRole::kv_both}) {
        MooncakeConnectorScheduler s(p2p_spec(role), log);
        Request d = make_request("d", 10, d_params());
        d.status = RequestStatus::finished_aborted;
        CHECK_FALSE(s.request_finished(d, {}).delay_free_blocks);
        CHECK_FALSE(d.kv_transfer_params.do_remote_prefill);
        REQUIRE(s.reqs_need_recv().contains("d"));
        CHECK(s.reqs_need_recv().at("d").empty());
        CHECK(s.reqs_not_processed().empty());
    }
    MooncakeConnectorScheduler producer(p2p_spec(KvRole::kv_producer), log);
    Request d = make_request("d", 10, d_params());
    d.status = RequestStatus::finished_aborted;
    CHECK(assertion_id([&] { producer.request_finished(d, {}); }) == "p2p_remote_prefill_on_producer");
}

TEST_CASE("p2p request_finished on the decode side after the load does nothing", "[p2p]") {
    EventLog log;
    MooncakeConnectorScheduler s(p2p_spec(KvRole::kv_consumer), log);
    Request d = make_request("d", 10, d_params());
    s.update_state_after_alloc(d, blocks_of({1, 2, 3}, {1, 2, 3}), 10);
    s.build_connector_meta(SchedulerOutput{});
    d.status = RequestStatus::finished_length_capped;
    CHECK_FALSE(s.request_finished(d, {1, 2, 3}).delay_free_blocks);
    CHECK(s.reqs_need_recv().empty());
    CHECK(s.reqs_need_send().empty());
    CHECK(s.reqs_not_processed().empty());
    Request plain = make_request("x", 10, {});
    plain.status = RequestStatus::finished_length_capped;
    CHECK_FALSE(s.request_finished(plain, {1}).delay_free_blocks);
}

TEST_CASE("p2p request_finished asserts on a consumer asked to remote decode", "[p2p]") {
    EventLog log;
    MooncakeConnectorScheduler s(p2p_spec(KvRole::kv_consumer), log);
    Request p = make_request("p", 10, p_params());
    p.status = RequestStatus::finished_length_capped;
    CHECK(assertion_id([&] { s.request_finished(p, {1}); }) == "p2p_remote_decode_on_consumer");
}

// ---------------------------------------------------------------- worker side

TEST_CASE("p2p worker pull completes after the drawn load delay", "[p2p]") {
    WorkerRig rig(11);
    rig.env.config.load_delay_min = 1;
    rig.env.config.load_delay_max = 4;
    MooncakeConnectorWorker w(p2p_spec(KvRole::kv_consumer), rig.env);
    Prng expected(11);
    const int d1 = static_cast<int>(expected.between(1, 4));  // metadata order: a then b
    const int d2 = static_cast<int>(expected.between(1, 4));
    w.execute(5, output_with(pulls({{"a", {{1, 2}}}, {"b", {{3}}}})));
    REQUIRE(w.pulls().size() == 2);
    CHECK(w.pulls()[0].done_step == 5 + d1);
    CHECK(w.pulls()[1].done_step == 5 + d2);
    CHECK(w.busy());
    std::map<std::string, int> reported;
    for (int step = 5; step <= 10; ++step) {
        const KVConnectorOutput out = w.get_finished(step, {});
        CHECK(out.finished_sending.empty());
        CHECK(out.invalid_block_ids.empty());
        for (const auto& id : out.finished_recving) reported[id] = step;
    }
    CHECK(reported == std::map<std::string, int>{{"a", 5 + d1}, {"b", 5 + d2}});
    CHECK_FALSE(w.busy());
    REQUIRE(rig.observer.loads.size() == 2);
    for (const auto& [id, blocks, source] : rig.observer.loads) {
        CHECK(source == "p2p");
        CHECK(blocks == (id == "a" ? std::vector<BlockId>{1, 2} : std::vector<BlockId>{3}));
    }
}

TEST_CASE("p2p worker fixed load delay reports on the step after start plus delay", "[p2p]") {
    WorkerRig rig;
    rig.env.config.load_delay_min = 2;
    rig.env.config.load_delay_max = 2;
    MooncakeConnectorWorker w(p2p_spec(KvRole::kv_both), rig.env);
    w.execute(0, output_with(pulls({{"a", {{4, 5}}}})));
    CHECK(w.get_finished(0, {}).finished_recving.empty());
    CHECK(w.get_finished(1, {}).finished_recving.empty());
    CHECK(w.get_finished(2, {}).finished_recving == std::set<std::string>{"a"});
    CHECK(w.get_finished(3, {}).finished_recving.empty());
}

TEST_CASE("p2p worker load failure reports invalid blocks and finished_recving", "[p2p][upstream:test_mooncake_connector_hma.py::test_worker_failed_recv_reports_block_ids_without_hma]") {
    WorkerRig rig;
    load_fail(rig.faults, "a");
    MooncakeConnectorWorker w(p2p_spec(KvRole::kv_consumer), rig.env);
    w.execute(0, output_with(pulls({{"a", {{4, 5}}}, {"b", {{6}}}})));
    CHECK_FALSE(rig.faults.active());  // taken at start
    const KVConnectorOutput out = w.get_finished(1, {});
    CHECK(out.finished_recving == std::set<std::string>{"a", "b"});
    CHECK(out.invalid_block_ids == std::set<BlockId>{4, 5});
    REQUIRE(rig.observer.loads.size() == 1);  // only b was written
    CHECK(std::get<0>(rig.observer.loads[0]) == "b");
}

TEST_CASE("p2p worker notify-only pull is reported on success but not on failure", "[p2p]") {
    // Upstream @ 00f4240ee6458263d76cf51ca7901ce1350bb4d1: process_pulling_result reports every ok pull, blocks or not;
    // _handle_failed_recv skips a pull without local blocks.
    WorkerRig rig;
    MooncakeConnectorWorker w(p2p_spec(KvRole::kv_consumer), rig.env);
    w.execute(0, output_with(pulls({{"e", {}}})));
    KVConnectorOutput out = w.get_finished(1, {});
    CHECK(out.finished_recving == std::set<std::string>{"e"});
    CHECK(rig.observer.loads.empty());

    load_fail(rig.faults, "f");
    w.execute(2, output_with(pulls({{"f", {}}})));
    out = w.get_finished(3, {});
    CHECK(out.finished_recving.empty());
    CHECK(out.invalid_block_ids.empty());
    CHECK_FALSE(w.busy());

    MooncakeConnectorWorker quiet(p2p_spec(KvRole::kv_consumer), rig.env, {.report_empty_pulls = false});
    quiet.execute(4, output_with(pulls({{"g", {}}})));
    CHECK(quiet.get_finished(5, {}).finished_recving.empty());
    CHECK_FALSE(quiet.busy());
}

TEST_CASE("p2p fix patches: pulls nobody awaits are queued with notify_scheduler off", "[p2p][patch]") {
    EventLog log;
    auto abort_pull = [&](const char* variant) {
        MooncakeConnectorScheduler s(p2p_spec(KvRole::kv_consumer), log, require_variant(variant));
        Request d = make_request("d", 10, d_params());
        d.status = RequestStatus::finished_aborted;
        s.request_finished(d, {});
        const auto meta = as_p2p(s.build_connector_meta(SchedulerOutput{}));
        REQUIRE(meta.reqs_to_recv.size() == 1);
        return meta.reqs_to_recv[0].notify_scheduler;
    };
    CHECK(abort_pull("v0.30.0"));
    CHECK_FALSE(abort_pull("v0.30.0+pr50565"));
    CHECK_FALSE(abort_pull("v0.30.0+p2p_pull_only_when_loading"));

    auto alloc_pull = [&](const char* variant, int num_external) {
        MooncakeConnectorScheduler s(p2p_spec(KvRole::kv_consumer), log, require_variant(variant));
        Request r = make_request("d", 10, d_params());
        s.update_state_after_alloc(r, blocks_of({1, 2, 3}, {3}), num_external);
        const auto meta = as_p2p(s.build_connector_meta(SchedulerOutput{}));
        REQUIRE(meta.reqs_to_recv.size() == 1);
        return meta.reqs_to_recv[0].notify_scheduler;
    };
    CHECK(alloc_pull("v0.30.0", 0));
    CHECK(alloc_pull("v0.30.0+pr50565", 0));  // #50565 leaves the sibling-won pull alone
    CHECK_FALSE(alloc_pull("v0.30.0+p2p_pull_only_when_loading", 0));
    CHECK(alloc_pull("v0.30.0+p2p_pull_only_when_loading", 4));  // a real load is awaited
}

TEST_CASE("p2p worker does not report an ok pull queued with notify_scheduler off", "[p2p][patch]") {
    WorkerRig rig;
    MooncakeConnectorWorker w(p2p_spec(KvRole::kv_consumer), rig.env);
    w.execute(0, output_with(pulls({{"e", {}, false}, {"f", {}, true}})));
    CHECK(w.get_finished(1, {}).finished_recving == std::set<std::string>{"f"});
    CHECK_FALSE(w.busy());
}

TEST_CASE("p2p worker producer sends after the pull delay", "[p2p]") {
    WorkerRig rig;
    rig.env.config.pull_delay = 3;
    MooncakeConnectorWorker w(p2p_spec(KvRole::kv_producer), rig.env);
    w.execute(0, output_with(sends({{"p", {}}})));  // pre-registration
    REQUIRE(w.send_slots().contains("p"));
    CHECK_FALSE(w.send_slots().at("p").ready);
    CHECK_FALSE(w.busy());
    CHECK(w.get_finished(0, {}).empty());
    w.execute(2, output_with(sends({{"p", {{7, 8}}}})));
    CHECK(w.busy());
    CHECK(w.get_finished(2, {}).finished_sending.empty());
    CHECK(w.get_finished(4, {}).finished_sending.empty());
    CHECK(rig.observer.sends.empty());
    const KVConnectorOutput out = w.get_finished(5, {});
    CHECK(out.finished_sending == std::set<std::string>{"p"});
    CHECK(out.finished_recving.empty());
    REQUIRE(rig.observer.sends.size() == 1);
    CHECK(rig.observer.sends[0] == std::pair<std::string, std::vector<BlockId>>{"p", {7, 8}});
    CHECK(w.send_slots().empty());
    CHECK_FALSE(w.busy());
}

TEST_CASE("p2p worker not processed ids drop the send slot", "[p2p]") {
    WorkerRig rig;
    MooncakeConnectorWorker w(p2p_spec(KvRole::kv_producer), rig.env);
    w.execute(0, output_with(sends({{"p", {}}, {"q", {}}})));
    w.execute(1, output_with(sends({}, {"p"})));
    CHECK_FALSE(w.send_slots().contains("p"));
    CHECK(w.send_slots().contains("q"));
    CHECK(w.get_finished(5, {}).empty());
    // A transfer id without a slot (P aborted before it was allocated): upstream KeyError in
    // the sender loop, swallowed; the engine lives on.
    CHECK_NOTHROW(w.execute(2, output_with(sends({}, {"never"}))));
    CHECK(rig.log.text().find("KeyError never") != std::string::npos);
}

TEST_CASE("p2p worker ignores the sections of the other role", "[p2p]") {
    WorkerRig rig;
    auto meta = pulls({{"a", {{1}}}});
    meta->reqs_to_send = {{"p", {{2}}}};
    const std::uint64_t before = rig.prng.state();
    MooncakeConnectorWorker producer(p2p_spec(KvRole::kv_producer), rig.env);
    producer.execute(0, output_with(meta));
    CHECK(producer.pulls().empty());
    CHECK(rig.prng.state() == before);  // no delay drawn for a pull it does not run

    MooncakeConnectorWorker consumer(p2p_spec(KvRole::kv_consumer), rig.env);
    consumer.execute(0, output_with(meta));
    CHECK(consumer.send_slots().empty());
    CHECK(consumer.pulls().size() == 1);
}

TEST_CASE("p2p worker without an observer still completes", "[p2p]") {
    WorkerRig rig;
    rig.env.observer = nullptr;
    MooncakeConnectorWorker w(p2p_spec(KvRole::kv_both), rig.env);
    w.execute(0, output_with(pulls({{"a", {{1}}}})));
    w.execute(0, output_with(sends({{"p", {}}})));
    w.execute(0, output_with(sends({{"p", {{2}}}})));
    const KVConnectorOutput out = w.get_finished(1, {});
    CHECK(out.finished_recving == std::set<std::string>{"a"});
    CHECK(out.finished_sending == std::set<std::string>{"p"});
}

// ---------------------------------------------------------------- with the core scheduler

TEST_CASE("p2p decode request loads asynchronously then runs without a second pull", "[p2p][upstream:test_mooncake_connector.py::test_basic_interface]") {
    EngineRig rig(KvRole::kv_consumer);
    rig.add("d", 10, 2, d_params());
    SchedulerOutput out0 = rig.run_step();
    CHECK(out0.scheduled_new_reqs.empty());  // parked in WAITING_FOR_REMOTE_KVS
    CHECK(rig.req("d").status == RequestStatus::waiting_for_remote_kvs);
    const auto blocks = rig.scheduler.kv_cache_manager().get_block_ids("d");
    REQUIRE(blocks.size() == 3);
    const auto& meta0 = as_p2p(out0.kv_connector_metadata);
    REQUIRE(meta0.reqs_to_recv.size() == 1);
    CHECK(meta0.reqs_to_recv[0].local_block_ids == GroupBlockIds{blocks});

    rig.run_step();  // the pull answers at step 1: finished_recving
    REQUIRE(rig.env_rig.observer.loads.size() == 1);
    CHECK(std::get<1>(rig.env_rig.observer.loads[0]) == blocks);
    CHECK(rig.scheduler.finished_recving_kv_req_ids().contains("d"));

    SchedulerOutput out2 = rig.run_step();  // promoted, scheduled, update_state_after_alloc(.., 0)
    REQUIRE(out2.scheduled_new_reqs.size() == 1);
    CHECK(out2.num_scheduled_tokens.at("d") == 1);
    CHECK(as_p2p(out2.kv_connector_metadata).reqs_to_recv.empty());
    CHECK(rig.req("d").status == RequestStatus::running);
    for (int i = 0; i < 3; ++i) rig.run_step();
    CHECK_FALSE(rig.scheduler.has_requests());
    CHECK_FALSE(rig.worker.busy());
}

TEST_CASE("p2p prefill request holds its blocks until the decode side pulled", "[p2p]") {
    WorkerConfig workers;
    workers.pull_delay = 2;
    EngineRig rig(KvRole::kv_producer, workers);
    rig.add("p", 6, 1, p_params());
    SchedulerOutput out0 = rig.run_step();  // prefill + one token: length capped at once
    CHECK(as_p2p(out0.kv_connector_metadata).describe() == std::vector<std::string>{"p2p send p pre-register"});
    REQUIRE(rig.scheduler.requests().contains("p"));
    CHECK(rig.req("p").status == RequestStatus::finished_length_capped);
    const auto blocks = rig.scheduler.kv_cache_manager().get_block_ids("p");
    REQUIRE(blocks.size() == 2);
    SchedulerOutput out1 = rig.run_step();
    CHECK(as_p2p(out1.kv_connector_metadata).reqs_to_send.size() == 1);
    CHECK(rig.scheduler.requests().contains("p"));
    rig.run_step();
    CHECK(rig.scheduler.requests().contains("p"));
    CHECK(rig.worker.busy());
    rig.run_step();  // step 3 = 1 + pull_delay: read, finished_sending, freed
    CHECK_FALSE(rig.scheduler.requests().contains("p"));
    REQUIRE(rig.env_rig.observer.sends.size() == 1);
    CHECK(rig.env_rig.observer.sends[0].second == blocks);
    CHECK_FALSE(rig.worker.busy());
}

TEST_CASE("p2p aborted prefill request is not processed and frees at once", "[p2p]") {
    EngineRig rig(KvRole::kv_producer);
    rig.add("p", 40, 4, p_params());
    rig.run_step();
    rig.run_step();
    rig.scheduler.finish_requests({"p"}, RequestStatus::finished_aborted);
    CHECK_FALSE(rig.scheduler.requests().contains("p"));
    SchedulerOutput out = rig.run_step();
    CHECK(as_p2p(out.kv_connector_metadata).reqs_not_processed == std::set<std::string>{"p"});
    CHECK(rig.worker.send_slots().empty());
}
