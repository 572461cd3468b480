// Ports of tests/v1/kv_connector/unit/test_remote_prefill_lifecycle.py @ 00a1bcb0b182449d102666f0ace6fda282d60df9
// with upstream's values. A remote prefill is the stand-in connector's request with remote_prefill on (its whole
// uncached prompt loads asynchronously); the KV transfer's finished_recving is fed back by hand, as upstream's
// create_model_runner_output does. Upstream ends requests with EOS; here they end at max_tokens in the same step,
// so the finish reason (STOP) is not replayed.
#include <catch2/catch.hpp>

#include "scheduler_fixture.h"

using namespace kvsim;
using namespace kvsim::testing;

namespace {

// tests/v1/kv_connector/unit/utils.py create_vllm_config / create_scheduler defaults.
EngineConfig lifecycle_engine(int num_blocks = 10000) {
    EngineConfig cfg;
    cfg.block_size = 16;
    cfg.num_blocks = num_blocks;
    cfg.max_batched_tokens = 64;
    cfg.max_running = 16;
    cfg.max_model_len = 10000;
    return cfg;
}

ConnectorSpec remote_prefill_spec() {
    ConnectorSpec spec;
    spec.kind = "stand_in";
    return spec;
}

KVConnectorOutput recving(const std::string& id) {
    KVConnectorOutput out;
    out.finished_recving.insert(id);
    return out;
}

std::size_t num_waiting(const SchedulerHarness& h) {
    return h.scheduler.waiting().size() + h.scheduler.skipped_waiting().size();
}

const BlockPool& pool(const SchedulerHarness& h) { return h.scheduler.kv_cache_manager().block_pool(); }

int num_hashed(const SchedulerHarness& h, const std::string& id) {
    int n = 0;
    for (BlockId b : h.blocks(id)) n += pool(h).block(b).hash.has_value() ? 1 : 0;
    return n;
}

// utils.py assert_scheduler_empty: no request, queue or held block is left.
void check_scheduler_empty(const SchedulerHarness& h) {
    CHECK_FALSE(h.scheduler.has_requests());
    CHECK(num_waiting(h) == 0);
    CHECK(h.scheduler.running().empty());
    CHECK(pool(h).num_free_blocks() == static_cast<std::uint32_t>(h.config.num_blocks - 1));
    int referenced = 0;
    for (BlockId b = 0; b < static_cast<BlockId>(h.config.num_blocks); ++b) referenced += pool(h).block(b).ref_cnt != 0;
    CHECK(referenced == 0);
}

}  // namespace

TEST_CASE("remote prefill lifecycle: park / receive / run / finish",
          "[scheduler][upstream:test_remote_prefill_lifecycle.py::test_basic_lifecycle]") {
    StandInConnectorScheduler connector(remote_prefill_spec());
    SchedulerHarness h(lifecycle_engine(), &connector);
    const std::uint32_t start_free = pool(h).num_free_blocks();
    h.add("1", 40, 2, /*remote_prefill=*/true);  // 2 full blocks and a half

    SchedulerOutput out = h.run_step();
    CHECK(h.scheduler.running().empty());
    CHECK(out.scheduled_new_reqs.empty());
    CHECK(out.scheduled_cached_reqs.size() == 0);
    CHECK(out.num_scheduled_tokens.empty());
    CHECK(out.total_num_scheduled_tokens == 0);
    CHECK(num_waiting(h) == 1);
    CHECK(h.req("1").status == RequestStatus::waiting_for_remote_kvs);
    // Upstream here asserts num_computed_tokens == 0; the scheduler kvsim follows
    // (@ 003df2961dd8830c317a61f9745ccd557da9fa06) counts the external tokens at allocation, as
    // test_kv_load_failure_recovery.py @ 0e26f5b67094f05b9993ea9b42f2e99eb962c654 asserts: not replayed.
    CHECK(pool(h).num_free_blocks() < start_free);
    CHECK(pool(h).cached_blocks().empty());
    CHECK(num_hashed(h, "1") == 0);

    h.run_step(recving("1"));  // nothing scheduled; the receive finishes
    CHECK(num_waiting(h) == 1);
    CHECK(h.scheduler.running().empty());
    CHECK(h.scheduler.finished_recving_kv_req_ids().contains("1"));

    out = h.run_step();
    CHECK(h.scheduler.running().size() == 1);
    for (BlockId b : h.blocks("1")) CHECK(pool(h).block(b).ref_cnt == 1);
    CHECK(num_hashed(h, "1") == 2);
    REQUIRE(out.scheduled_new_reqs.size() == 1);
    CHECK(out.num_scheduled_tokens.at("1") == 40 - out.scheduled_new_reqs[0].num_computed_tokens);

    h.run_step();  // the second token ends it
    h.run_step();
    check_scheduler_empty(h);
}

TEST_CASE("remote prefill lifecycle: a remote prefill interleaves with local requests",
          "[scheduler][upstream:test_remote_prefill_lifecycle.py::test_interleaved_lifecycle]") {
    StandInConnectorScheduler connector(remote_prefill_spec());
    SchedulerHarness h(lifecycle_engine(), &connector);
    h.add("local_a", 40, 6);  // runs steps 1..6
    SchedulerOutput out = h.run_step();
    CHECK(h.scheduler.running().size() == 1);

    h.add("local_b", 40, 5);  // runs steps 2..6
    h.add("remote", 40, 2, true);
    out = h.run_step();
    CHECK(h.scheduler.running().size() == 2);
    CHECK(num_waiting(h) == 1);
    CHECK(out.scheduled_new_reqs.size() == 1);
    CHECK(out.scheduled_cached_reqs.size() == 1);

    out = h.run_step();  // KVs not arrived yet
    CHECK(h.scheduler.running().size() == 2);
    CHECK(num_waiting(h) == 1);
    CHECK(out.scheduled_new_reqs.empty());
    CHECK(out.scheduled_cached_reqs.size() == 2);

    out = h.run_step(recving("remote"));  // KVs arrive
    CHECK(h.scheduler.running().size() == 2);
    CHECK(num_waiting(h) == 1);
    CHECK(out.scheduled_new_reqs.empty());
    CHECK(out.scheduled_cached_reqs.size() == 2);

    out = h.run_step();  // the received request runs
    CHECK(h.scheduler.running().size() == 3);
    CHECK(num_waiting(h) == 0);
    CHECK(out.scheduled_new_reqs.size() == 1);
    CHECK(out.scheduled_cached_reqs.size() == 2);

    h.run_step();  // every request ends
    h.run_step();
    check_scheduler_empty(h);
}

TEST_CASE("remote prefill lifecycle: blocks of a pending receive give no prefix hit",
          "[scheduler][upstream:test_remote_prefill_lifecycle.py::test_no_spurious_prefix_caching]") {
    StandInConnectorScheduler connector(remote_prefill_spec());
    SchedulerHarness h(lifecycle_engine(), &connector);
    h.add("remote", 40, 16, true, /*base=*/1);  // both prompts hold the same tokens
    h.run_step();
    CHECK(num_waiting(h) == 1);

    h.add("local", 40, 16, false, 1);
    h.run_step();
    CHECK(h.scheduler.running().size() == 1);
    CHECK(num_waiting(h) == 1);
    for (BlockId b : h.blocks("local")) CHECK(pool(h).block(b).ref_cnt == 1);
    CHECK(num_hashed(h, "local") > 0);
    for (BlockId b : h.blocks("remote")) {
        CHECK(pool(h).block(b).ref_cnt == 1);
        CHECK_FALSE(pool(h).block(b).hash.has_value());
    }
}

TEST_CASE("remote prefill lifecycle: a full-block prompt recomputes its last token without a new block",
          "[scheduler][upstream:test_remote_prefill_lifecycle.py::test_full_block_prompt]") {
    StandInConnectorScheduler connector(remote_prefill_spec());
    SchedulerHarness h(lifecycle_engine(), &connector);
    h.add("1", 32, 2, true);

    h.run_step();
    CHECK(h.blocks("1").size() == 2);

    h.run_step(recving("1"));
    CHECK(num_waiting(h) == 1);
    CHECK(h.scheduler.finished_recving_kv_req_ids().contains("1"));

    const SchedulerOutput out = h.run_step();
    CHECK(h.blocks("1").size() == 2);
    REQUIRE(out.scheduled_new_reqs.size() == 1);
    CHECK(out.scheduled_new_reqs[0].num_computed_tokens == 31);
    CHECK(out.num_scheduled_tokens.at("1") == 1);

    h.run_step();
    h.run_step();
    check_scheduler_empty(h);
}

TEST_CASE("remote prefill lifecycle: a received request preempted for lack of blocks resumes from its cached blocks",
          "[scheduler][upstream:test_remote_prefill_lifecycle.py::test_cannot_schedule_after_recv]") {
    StandInConnectorScheduler connector(remote_prefill_spec());
    SchedulerHarness h(lifecycle_engine(6), &connector);  // the null block and 5 working blocks
    h.add("normal", 32, 6);                                // ends at step 6
    h.run_step();  // 3 blocks in use (2 for the prompt, 1 for decode)
    CHECK(h.scheduler.running().size() == 1);
    CHECK(num_waiting(h) == 0);

    h.add("remote", 32, 3, true);
    h.run_step();  // 5 blocks in use (2 new for the remote blocks)
    CHECK(h.scheduler.running().size() == 1);
    CHECK(num_waiting(h) == 1);

    h.run_step(recving("remote"));
    CHECK(h.scheduler.running().size() == 1);
    CHECK(num_waiting(h) == 1);

    h.run_step();  // the transfer is complete: the remote request runs
    CHECK(h.scheduler.running().size() == 2);
    CHECK(num_waiting(h) == 0);

    h.run_step();  // it needs a new block for its generated token: back to waiting
    CHECK(h.scheduler.running().size() == 1);
    CHECK(num_waiting(h) == 1);

    h.run_step();  // the normal request finishes
    CHECK(h.scheduler.running().empty());
    CHECK(num_waiting(h) == 1);

    // Resumed with its 2 computed blocks. Upstream reads them from scheduled_cached_reqs (model runner V1);
    // the modelled scheduler follows model runner V2, which lists a resumed request with the new ones.
    const SchedulerOutput out = h.run_step();
    REQUIRE(out.scheduled_new_reqs.size() == 1);
    CHECK(out.scheduled_new_reqs[0].req_id == "remote");
    CHECK(out.scheduled_new_reqs[0].num_computed_tokens == 2 * 16);
    CHECK(h.scheduler.running().size() == 1);
    CHECK(num_waiting(h) == 0);

    h.run_step();
    h.run_step();
    check_scheduler_empty(h);
}

TEST_CASE("remote prefill lifecycle: a receive without room for its blocks waits to start",
          "[scheduler][upstream:test_remote_prefill_lifecycle.py::test_cannot_recv]") {
    StandInConnectorScheduler connector(remote_prefill_spec());
    SchedulerHarness h(lifecycle_engine(6), &connector);
    h.add("normal", 32, 3);  // ends at step 3
    h.run_step();
    CHECK(h.scheduler.running().size() == 1);
    CHECK(num_waiting(h) == 0);

    h.add("remote", 40, 2, true);
    h.run_step();  // 3 blocks in use; the remote request needs 3 but 2 are free
    CHECK(h.scheduler.running().size() == 1);
    CHECK(num_waiting(h) == 1);
    CHECK(h.req("remote").status != RequestStatus::waiting_for_remote_kvs);

    h.run_step();  // the normal request finishes
    CHECK(h.scheduler.running().empty());
    CHECK(num_waiting(h) == 1);

    h.run_step();  // the KV transfer starts
    CHECK(h.scheduler.running().empty());
    CHECK(num_waiting(h) == 1);
    CHECK(h.req("remote").status == RequestStatus::waiting_for_remote_kvs);

    h.run_step(recving("remote"));
    CHECK(h.scheduler.running().empty());
    CHECK(num_waiting(h) == 1);

    h.run_step();
    CHECK(h.scheduler.running().size() == 1);
    CHECK(num_waiting(h) == 0);

    h.run_step();
    h.run_step();
    check_scheduler_empty(h);
}
