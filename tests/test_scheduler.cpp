#include <catch2/catch.hpp>

#include "scheduler_fixture.h"

using namespace kvsim;
using namespace kvsim::testing;

namespace {
EngineConfig small_engine(int num_blocks, int block_size = 4) {
    EngineConfig cfg;
    cfg.block_size = block_size;
    cfg.num_blocks = num_blocks;
    cfg.max_batched_tokens = 64;
    cfg.max_running = 8;
    cfg.max_model_len = 256;
    return cfg;
}
}  // namespace

TEST_CASE("FCFS preemption takes the last running request and skips the waiting phase", "[scheduler]") {
    SchedulerHarness h(small_engine(5));  // 4 usable blocks of 4 tokens
    h.add("r1", 7, 10);
    h.add("r2", 7, 10);
    auto out0 = h.run_step();
    REQUIRE(new_ids(out0) == std::vector<std::string>{"r1", "r2"});
    REQUIRE(h.scheduler.kv_cache_manager().block_pool().num_free_blocks() == 0);

    h.run_step();  // decode slot 8: both still fit in their 2 blocks
    REQUIRE(h.req("r1").num_tokens() == 9);

    h.add("r3", 3, 1);  // would fit in one freed block
    auto out2 = h.run_step();
    // r1 needs a third block; the victim is the last running request, r2.
    REQUIRE(out2.preempted_req_ids == std::set<std::string>{"r2"});
    REQUIRE(out2.num_scheduled_tokens.contains("r1"));
    REQUIRE_FALSE(out2.num_scheduled_tokens.contains("r2"));
    // Nothing was admitted from the waiting queue in a step that preempted.
    REQUIRE(out2.scheduled_new_reqs.empty());
    REQUIRE_FALSE(out2.num_scheduled_tokens.contains("r3"));
    REQUIRE(h.req("r2").status == RequestStatus::preempted);
    REQUIRE(h.req("r2").num_computed_tokens == 0);
    REQUIRE(h.req("r2").num_preemptions == 1);
    REQUIRE(h.blocks("r2").empty());
    REQUIRE(h.scheduler.waiting().front() == "r2");  // preempted go to the head
    REQUIRE(h.blocks("r1").size() == 3);
}

TEST_CASE("a preempted request at the head blocks later admissions (head-of-line)", "[scheduler]") {
    SchedulerHarness h(small_engine(5));
    h.add("r1", 7, 10);
    h.add("r2", 7, 10);
    h.run_step();
    h.run_step();
    h.add("r3", 3, 1);
    h.run_step();  // preempts r2
    REQUIRE(h.scheduler.kv_cache_manager().block_pool().num_free_blocks() == 1);
    auto out3 = h.run_step();
    // r2 (9 tokens, 3 blocks for the full sequence) does not fit into 1 free block,
    // so the waiting phase stops there and r3 behind it is not admitted either.
    REQUIRE(out3.scheduled_new_reqs.empty());
    REQUIRE(h.req("r3").status == RequestStatus::waiting);
    REQUIRE(h.scheduler.waiting() == std::deque<std::string>{"r2", "r3"});
}

TEST_CASE("chunked prefill splits a prompt by the token budget", "[scheduler]") {
    EngineConfig cfg = small_engine(64);
    cfg.max_batched_tokens = 16;
    SchedulerHarness h(cfg);
    h.add("r1", 40, 2);
    auto out0 = h.run_step();
    REQUIRE(out0.num_scheduled_tokens.at("r1") == 16);
    REQUIRE(h.req("r1").num_computed_tokens == 16);
    REQUIRE(h.req("r1").num_output_tokens() == 0);  // partial prefill samples nothing
    auto out1 = h.run_step();
    REQUIRE(out1.num_scheduled_tokens.at("r1") == 16);
    REQUIRE(out1.scheduled_cached_reqs.req_ids == std::vector<std::string>{"r1"});
    auto out2 = h.run_step();
    REQUIRE(out2.num_scheduled_tokens.at("r1") == 8);
    REQUIRE(h.req("r1").num_output_tokens() == 1);
}

TEST_CASE("with chunked prefill off a prompt larger than the budget waits", "[scheduler]") {
    EngineConfig cfg = small_engine(64);
    cfg.max_batched_tokens = 32;
    cfg.max_model_len = 32;
    cfg.chunked_prefill = false;
    SchedulerHarness h(cfg);
    h.add("r1", 20, 1);
    h.add("r2", 20, 1);
    auto out0 = h.run_step();
    REQUIRE(new_ids(out0) == std::vector<std::string>{"r1"});  // r2 breaks the loop: 20 > 12 left
    REQUIRE(h.req("r2").status == RequestStatus::waiting);
}

TEST_CASE("max_running caps admissions", "[scheduler]") {
    EngineConfig cfg = small_engine(64);
    cfg.max_running = 2;
    SchedulerHarness h(cfg);
    h.add("r1", 4, 5);
    h.add("r2", 4, 5);
    h.add("r3", 4, 5);
    auto out0 = h.run_step();
    REQUIRE(new_ids(out0) == std::vector<std::string>{"r1", "r2"});
    REQUIRE(h.scheduler.waiting().front() == "r3");
}

TEST_CASE("a request finishes at max_tokens and its blocks return to the pool", "[scheduler]") {
    SchedulerHarness h(small_engine(8));
    h.add("r1", 5, 2);
    h.run_step();
    REQUIRE(h.req("r1").num_output_tokens() == 1);
    auto out1 = h.run_step();
    REQUIRE_FALSE(h.alive("r1"));
    REQUIRE(h.scheduler.kv_cache_manager().block_pool().num_free_blocks() == 7);
    auto out2 = h.run_step();
    REQUIRE(out2.finished_req_ids == std::set<std::string>{"r1"});
    (void)out1;
}

TEST_CASE("abort in WAITING / RUNNING and after finishing", "[scheduler][abort]") {
    SchedulerHarness h(small_engine(8));
    h.add("r1", 5, 10);
    h.run_step();
    h.add("r2", 5, 10);
    SECTION("waiting: removed from the queue, nothing to free") {
        // r2 has not been scheduled yet
        auto finished = h.scheduler.finish_requests({"r2"}, RequestStatus::finished_aborted);
        REQUIRE(finished == std::vector<std::string>{"r2"});
        REQUIRE_FALSE(h.alive("r2"));
        REQUIRE(h.scheduler.waiting().empty());
    }
    SECTION("running: blocks freed at once") {
        const auto free_before = h.scheduler.kv_cache_manager().block_pool().num_free_blocks();
        h.scheduler.finish_requests({"r1"}, RequestStatus::finished_aborted);
        REQUIRE_FALSE(h.alive("r1"));
        REQUIRE(h.scheduler.running().empty());
        REQUIRE(h.scheduler.kv_cache_manager().block_pool().num_free_blocks() == free_before + 2);
        auto out = h.run_step();
        REQUIRE(out.finished_req_ids.contains("r1"));
    }
    SECTION("already gone: ignored") {
        h.scheduler.finish_requests({"r1"}, RequestStatus::finished_aborted);
        auto again = h.scheduler.finish_requests({"r1"}, RequestStatus::finished_aborted);
        REQUIRE(again.empty());
    }
}

TEST_CASE("async load: park / promote after finished_recving / recompute the last token", "[scheduler][async]") {
    ConnectorSpec spec;
    spec.kind = "stand_in";
    StandInConnectorScheduler connector(spec);
    SchedulerHarness h(small_engine(16), &connector);
    h.add("r1", 10, 3, /*remote_prefill=*/true);

    auto out0 = h.run_step();
    REQUIRE(out0.num_scheduled_tokens.empty());
    REQUIRE(h.req("r1").status == RequestStatus::waiting_for_remote_kvs);
    REQUIRE(h.req("r1").num_computed_tokens == 10);
    REQUIRE(h.blocks("r1").size() == 3);
    REQUIRE(h.scheduler.skipped_waiting().front() == "r1");
    const auto* meta = dynamic_cast<const StandInMetadata*>(out0.kv_connector_metadata.get());
    REQUIRE(meta != nullptr);
    REQUIRE(meta->loads.size() == 1);
    REQUIRE(meta->loads[0].second == h.blocks("r1"));

    KVConnectorOutput done;
    done.finished_recving.insert("r1");
    auto out1 = h.run_step(done);  // not promoted in the same step
    REQUIRE(out1.num_scheduled_tokens.empty());
    REQUIRE(h.scheduler.finished_recving_kv_req_ids().contains("r1"));

    auto out2 = h.run_step();
    REQUIRE(new_ids(out2) == std::vector<std::string>{"r1"});
    REQUIRE(out2.scheduled_new_reqs[0].num_computed_tokens == 9);  // full hit: the last token is recomputed
    REQUIRE(out2.num_scheduled_tokens.at("r1") == 1);
    REQUIRE(h.req("r1").num_output_tokens() == 1);
}

TEST_CASE("abort while WAITING_FOR_REMOTE_KVS holds blocks until the load reports", "[scheduler][abort][async][upstream:test_scheduler.py::test_abort_request_waiting_for_remote_kvs]") {
    ConnectorSpec spec;
    spec.kind = "stand_in";
    StandInConnectorScheduler connector(spec);
    SchedulerHarness h(small_engine(16), &connector);
    h.add("r1", 10, 3, true);
    h.run_step();
    const auto held = h.blocks("r1");
    REQUIRE(held.size() == 3);

    h.scheduler.finish_requests({"r1"}, RequestStatus::finished_aborted);
    REQUIRE(h.alive("r1"));  // the request object stays for the delayed free
    REQUIRE(h.req("r1").status == RequestStatus::finished_aborted);
    REQUIRE(h.blocks("r1") == held);
    REQUIRE(h.scheduler.skipped_waiting().empty());
    // A second abort of a finished request changes nothing.
    REQUIRE(h.scheduler.finish_requests({"r1"}, RequestStatus::finished_aborted).empty());
    REQUIRE(h.blocks("r1") == held);

    KVConnectorOutput done;
    done.finished_recving.insert("r1");
    h.run_step(done);
    REQUIRE_FALSE(h.alive("r1"));
    REQUIRE(h.scheduler.kv_cache_manager().block_pool().num_free_blocks() == 15);
}

TEST_CASE("abort after the load reported but before promotion frees at once", "[scheduler][abort][async][upstream:test_scheduler.py::test_abort_request_finished_recving]") {
    ConnectorSpec spec;
    spec.kind = "stand_in";
    StandInConnectorScheduler connector(spec);
    SchedulerHarness h(small_engine(16), &connector);
    h.add("r1", 10, 3, true);
    h.run_step();
    KVConnectorOutput done;
    done.finished_recving.insert("r1");
    h.run_step(done);
    REQUIRE(h.scheduler.finished_recving_kv_req_ids().contains("r1"));
    h.scheduler.finish_requests({"r1"}, RequestStatus::finished_aborted);
    REQUIRE_FALSE(h.alive("r1"));
    REQUIRE(h.scheduler.finished_recving_kv_req_ids().empty());
}

TEST_CASE("a finished_recving for a running request is an upstream assertion", "[scheduler][async]") {
    SchedulerHarness h(small_engine(16));
    h.add("r1", 5, 5);
    h.run_step();
    KVConnectorOutput bogus;
    bogus.finished_recving.insert("r1");
    REQUIRE_THROWS_WITH(h.run_step(bogus), Catch::Contains("assert RequestStatus.is_finished(req.status)"));
}

TEST_CASE("a resumed request's own cached blocks give prefix hits", "[scheduler]") {
    SchedulerHarness h(small_engine(5));
    h.add("r1", 8, 10);
    h.add("r2", 7, 10);
    h.run_step();
    h.run_step();
    h.run_step();  // r1 grows to a third block: r2 preempted; r2's first block is hashed and cached
    REQUIRE(h.req("r2").status == RequestStatus::preempted);
    REQUIRE(h.scheduler.kv_cache_manager().block_pool().get_cached_block(h.req("r2").block_hashes()[0]).has_value());
}
