#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/common/upstream_assertion.h"
#include "sim/connector/mooncake/store/worker.h"
#include "sim/connector/stand_in_connector.h"
#include "store_fixture.h"

using namespace kvsim;
using namespace kvsim::store_testing;

namespace {

// "()" for zero groups, else the groups joined by "+" (as the store's meta events render them).
std::string group_blocks(const GroupBlockIds& groups) {
    if (groups.empty()) return "()";
    std::string out;
    for (std::size_t g = 0; g < groups.size(); ++g) out += (g == 0 ? "" : "+") + format_blocks(groups[g]);
    return out;
}

struct RecordingObserver : WorkerObserver {
    std::vector<std::string> events;
    void save_emitted(const SaveJob& job) override {
        events.push_back(fmt::format("emit job={} {} {} [{},{})", job.job_id, job.req_id,
                                     group_blocks(job.block_ids), job.token_start, job.token_end));
    }
    void save_read(const SaveJob& job, int rank) override {
        events.push_back(fmt::format("read job={} {} rank={}", job.job_id, job.req_id, rank));
    }
    void send_read(const std::string& req_id, const std::vector<BlockId>& blocks) override {
        events.push_back(fmt::format("send {} {}", req_id, format_blocks(blocks)));
    }
    void load_written(const std::string& req_id, const std::vector<BlockId>& blocks, std::string_view source) override {
        events.push_back(fmt::format("load {} {} {}", req_id, format_blocks(blocks), source));
    }
};

struct WorkerFixture {
    explicit WorkerFixture(const std::string& variant_name = "v0.29.0", int ranks = 1, KvRole role = KvRole::kv_both,
                           bool load_async = true, bool enable_lookup = true)
        : v(require_variant(variant_name)), prng(7) {
        engine.block_size = 16;
        spec.kind = "store";
        spec.role = role;
        spec.load_async = load_async;
        spec.enable_lookup = enable_lookup;
        env.config.ranks = ranks;
        env.prng = &prng;
        env.faults = &faults;
        env.observer = &observer;
        env.log = &log;
        worker = std::make_unique<MooncakeStoreWorker>(spec, engine, v, env, store);
        req = std::make_unique<Request>("req-0", token_range(48), 8, 16, 0, KvTransferParams{});
    }

    ReqMeta save(std::int64_t job, int start, int end, Ids blocks = {1, 2, 3}) const {
        ReqMeta m;
        m.req_id = "req-0";
        m.can_save = true;
        m.store_job_id = job;
        m.token_ids_start = start;
        m.token_len_chunk = end;
        m.block_ids = Groups{std::move(blocks)};
        m.block_hashes = req->block_hashes();
        return m;
    }

    ReqMeta load(const std::string& id, int vllm_cached, int kvpool_cached, Ids blocks) const {
        ReqMeta m;
        m.req_id = id;
        m.load_spec = LoadSpec{vllm_cached, kvpool_cached, true, 0};
        m.token_len_chunk = kvpool_cached;
        m.block_ids = Groups{std::move(blocks)};
        return m;
    }

    void execute(int step, std::vector<ReqMeta> metas, std::set<std::string> preempted = {}) {
        auto meta = std::make_shared<StoreMetadata>();
        meta->requests = std::move(metas);
        meta->preempted_req_ids = std::move(preempted);
        SchedulerOutput out;
        out.step = step;
        out.kv_connector_metadata = meta;
        worker->execute(step, out);
    }

    void fault(FaultKind kind, int rank = 0, int steps = 0, const std::string& request_id = "") {
        FaultEvent e;
        e.kind = kind;
        e.rank = rank;
        e.steps = steps;
        e.request_id = request_id;
        faults.apply(e);
    }

    bool stored(int block_index) const { return store.contains(req->block_hashes().at(static_cast<std::size_t>(block_index))); }

    EngineConfig engine;
    Variant v;
    ConnectorSpec spec;
    KvStore store;
    FaultSchedule faults;
    EventLog log;
    Prng prng;
    RecordingObserver observer;
    WorkerEnv env;
    std::unique_ptr<MooncakeStoreWorker> worker;
    std::unique_ptr<Request> req;
};

using Events = std::vector<std::string>;

}  // namespace

TEST_CASE("store worker: every rank reads the job's blocks when its copy completes and then the store grows", "[store]") {
    WorkerFixture f("v0.29.0", 2);
    f.execute(5, {f.save(0, 16, 48)});
    CHECK(f.observer.events == Events{"emit job=0 req-0 [1,2,3] [16,48)"});
    CHECK(f.worker->busy());

    KVConnectorOutput early = f.worker->get_finished(5, {});
    CHECK(early.empty());
    CHECK(f.observer.events.size() == 1);

    KVConnectorOutput out = f.worker->get_finished(6, {});
    CHECK(out.completed_store_jobs == std::map<std::int64_t, int>{{0, 2}});
    CHECK(out.finished_sending.empty());
    CHECK(f.observer.events ==
          Events{"emit job=0 req-0 [1,2,3] [16,48)", "read job=0 req-0 rank=0", "read job=0 req-0 rank=1"});
    CHECK_FALSE(f.stored(0));
    CHECK(f.stored(1));
    CHECK(f.stored(2));
    CHECK(f.store.size() == 2);
    CHECK_FALSE(f.worker->busy());
}

TEST_CASE("store worker: a failed rank copy still reports and nothing is stored", "[store]") {
    WorkerFixture f("v0.29.0", 2);
    f.fault(FaultKind::store_fail, 1);
    f.execute(0, {f.save(0, 0, 48)});
    KVConnectorOutput out = f.worker->get_finished(1, {});
    CHECK(out.completed_store_jobs == std::map<std::int64_t, int>{{0, 2}});
    CHECK(f.store.size() == 0);
    CHECK_FALSE(f.faults.active());  // the failure was consumed

    f.execute(1, {f.save(1, 0, 48)});  // the next job on rank 1 succeeds
    f.worker->get_finished(2, {});
    CHECK(f.store.size() == 3);
}

TEST_CASE("store worker: a delayed rank reports later and the store waits for it", "[store]") {
    WorkerFixture f("v0.29.0", 2);
    f.fault(FaultKind::store_delay, 1, 3);
    f.execute(0, {f.save(0, 0, 32)});
    KVConnectorOutput first = f.worker->get_finished(1, {});
    CHECK(first.completed_store_jobs == std::map<std::int64_t, int>{{0, 1}});
    CHECK(f.store.size() == 0);
    CHECK(f.worker->get_finished(3, {}).empty());
    KVConnectorOutput second = f.worker->get_finished(4, {});
    CHECK(second.completed_store_jobs == std::map<std::int64_t, int>{{0, 1}});
    CHECK(f.store.size() == 2);
}

TEST_CASE("store worker: one send thread per rank completes its jobs in order", "[store]") {
    WorkerFixture f("v0.29.0", 2);
    f.fault(FaultKind::store_delay, 0, 5);
    f.execute(0, {f.save(0, 0, 16)});  // rank 0 done at 6, rank 1 at 1
    f.fault(FaultKind::store_delay, 0, 0);
    f.execute(1, {f.save(1, 16, 32)});  // rank 0 queued behind job 0: done at 6; rank 1 at 2
    CHECK(f.worker->get_finished(2, {}).completed_store_jobs == std::map<std::int64_t, int>{{0, 1}, {1, 1}});
    CHECK(f.worker->get_finished(5, {}).empty());
    CHECK(f.worker->get_finished(6, {}).completed_store_jobs == std::map<std::int64_t, int>{{0, 1}, {1, 1}});
    const Events reads(f.observer.events.begin() + 2, f.observer.events.end());
    CHECK(reads == Events{"read job=0 req-0 rank=1", "read job=1 req-0 rank=1", "read job=0 req-0 rank=0",
                          "read job=1 req-0 rank=0"});
}

TEST_CASE("store worker: a save whose blocks do not cover its range writes nothing", "[store]") {
    WorkerFixture f;
    f.execute(0, {f.save(0, 0, 48, {})});
    f.worker->get_finished(1, {});
    CHECK(f.store.size() == 0);
    CHECK(f.log.text().find("failed (no block for its range)") != std::string::npos);
}

TEST_CASE("store worker: an async load writes blocks from vllm_cached to kvpool_cached and finishes receiving", "[store]") {
    WorkerFixture f;
    f.env.config.load_delay_min = 2;
    f.env.config.load_delay_max = 2;
    f.execute(3, {f.load("req-1", 16, 48, {4, 5, 6})});
    CHECK(f.worker->busy());
    CHECK(f.worker->get_finished(4, {}).empty());
    KVConnectorOutput out = f.worker->get_finished(5, {});
    CHECK(out.finished_recving == std::set<std::string>{"req-1"});
    CHECK(out.invalid_block_ids.empty());
    CHECK(f.observer.events == Events{"load req-1 [5,6] store"});
    CHECK_FALSE(f.worker->busy());
}

TEST_CASE("store worker: a failed async load reports its blocks invalid and still finishes", "[store]") {
    WorkerFixture f;
    f.fault(FaultKind::load_fail, 0, 0, "req-1");
    f.execute(0, {f.load("req-1", 0, 32, {4, 5, 6})});
    KVConnectorOutput out = f.worker->get_finished(1, {});
    CHECK(out.finished_recving == std::set<std::string>{"req-1"});
    CHECK(out.invalid_block_ids == std::set<BlockId>{4, 5});
}

TEST_CASE("store worker: a sync load asserts, as upstream's worker does on every step", "[store]") {
    WorkerFixture f("v0.29.0", 1, KvRole::kv_both, false);
    CHECK_THROWS_AS(f.execute(0, {f.load("req-1", 0, 32, {4, 5, 6})}), UpstreamAssertion);
    // a kv_consumer that neither looks up nor saves decode blocks returns before the assertion
    WorkerFixture capacity("v0.29.0", 1, KvRole::kv_consumer, false, false);
    CHECK_NOTHROW(capacity.execute(0, {}));
}

TEST_CASE("store worker, downstream hotfix: a sync load lands at execute and a failed one raises", "[store]") {
    WorkerFixture f("v0.29.0+sync_store_load_hotfix", 1, KvRole::kv_both, false);
    f.execute(0, {f.load("req-1", 0, 32, {4, 5, 6})});
    CHECK(f.observer.events == Events{"load req-1 [4,5] store"});
    CHECK(f.worker->get_finished(0, {}).empty());
    f.fault(FaultKind::load_fail, 0, 0, "req-2");
    try {
        f.execute(1, {f.load("req-2", 16, 48, {7, 8, 9})});
        FAIL("a failed synchronous load under the hotfix did not raise");
    } catch (const UpstreamAssertion& a) {
        CHECK(a.id() == "sync_store_load_failed");
        CHECK_THAT(a.what(), Catch::StartsWith("RuntimeError: Mooncake synchronous SSD load did not complete safely"));
    }
}

TEST_CASE("store worker, downstream hotfix: an async load completes in the step that issues it", "[store]") {
    WorkerFixture f("v0.29.0+sync_store_load_hotfix");
    f.execute(0, {f.load("req-1", 0, 32, {4, 5, 6})});
    CHECK(f.worker->get_finished(0, {}).finished_recving == std::set<std::string>{"req-1"});
}

TEST_CASE("store worker: a kv_consumer without save_decode_cache has no send thread", "[store]") {
    WorkerFixture f("v0.29.0", 2, KvRole::kv_consumer);
    CHECK_FALSE(f.worker->can_put());
    f.execute(0, {f.save(0, 0, 48)});
    CHECK(f.observer.events == Events{"emit job=0 req-0 [1,2,3] [0,48)"});
    CHECK_FALSE(f.worker->busy());
    CHECK(f.worker->get_finished(5, {}).empty());
    CHECK(f.store.size() == 0);
}

TEST_CASE("store worker delay_free: finished_sending once the request finished and every rank's jobs are done", "[store]") {
    {
        WorkerFixture f("v0.27.1", 2);
        f.execute(0, {f.save(0, 0, 48)});
        CHECK(f.observer.events.front() == "emit job=-1 req-0 [1,2,3] [0,48)");
        CHECK(f.worker->get_finished(0, {}).empty());
        KVConnectorOutput out = f.worker->get_finished(1, {"req-0"});
        CHECK(out.completed_store_jobs.empty());
        CHECK(out.finished_sending == std::set<std::string>{"req-0"});
    }
    {
        WorkerFixture f("v0.27.1", 2);
        f.fault(FaultKind::store_delay, 1, 2);
        f.execute(0, {f.save(0, 0, 48)});
        CHECK(f.worker->get_finished(0, {"req-0"}).empty());  // finished while its job is in flight
        CHECK(f.worker->get_finished(1, {}).finished_sending.empty());  // rank 1 still copying
        CHECK(f.worker->get_finished(3, {}).finished_sending == std::set<std::string>{"req-0"});
    }
    {
        WorkerFixture f("v0.27.1", 1);
        CHECK(f.worker->get_finished(0, {"never-saved"}).empty());  // no stored entry: never reported
    }
}

TEST_CASE("store worker: other connectors' metadata is ignored", "[store]") {
    WorkerFixture f;
    SchedulerOutput out;
    out.kv_connector_metadata = std::make_shared<StandInMetadata>();
    f.worker->execute(0, out);
    CHECK_FALSE(f.worker->busy());
    CHECK(f.observer.events.empty());
}

TEST_CASE("store worker: the same seed replays the same completions", "[store]") {
    auto run = [] {
        WorkerFixture f("v0.29.0", 3);
        f.env.config.store_delay_min = 1;
        f.env.config.store_delay_max = 4;
        f.execute(0, {f.save(0, 0, 16), f.save(1, 16, 32)});
        std::vector<std::map<std::int64_t, int>> per_step;
        for (int step = 0; step <= 10; ++step) per_step.push_back(f.worker->get_finished(step, {}).completed_store_jobs);
        return std::pair{per_step, f.log.text()};
    };
    CHECK(run() == run());
}
