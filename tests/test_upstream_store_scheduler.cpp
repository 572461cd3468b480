// Ports of tests/v1/kv_connector/unit/test_mooncake_store_scheduler.py (the store-job pin tests; the copy read
// has no established upstream commit, see corpus/conformance/README.md) on the modelled MooncakeStoreScheduler
// (store-job pins, vllm-project/vllm#52372). Boundary-state offloads are not modelled: where upstream pins a
// boundary block per job, the ports pin the blocks of a block-aligned save, which the same per-job release covers.
#include <catch2/catch.hpp>

#include <cstdint>

#include "sim/connector/mooncake/store/data.h"
#include "store_fixture.h"

using namespace kvsim;
using namespace kvsim::store_testing;

TEST_CASE("store worker metadata: completions of one step add up over ranks",
          "[store][upstream:test_mooncake_store_scheduler.py::test_worker_metadata_aggregates_completions_across_ranks]") {
    CompletedSaves merged{{1, 1}};
    aggregate_completed_saves(merged, CompletedSaves{{1, 1}, {2, 1}});
    CHECK(merged == CompletedSaves{{1, 2}, {2, 1}});
}

// Partial: upstream's two jobs are boundary-state offloads of blocks 7 and 8; here two block-aligned saves
// of one request (48 then 64 tokens), so the second job pins the first one's blocks too.
TEST_CASE("store pins: a job's completion releases only that job's pins",
          "[store][upstream:test_mooncake_store_scheduler.py::test_boundary_state_release_is_per_store_job]") {
    StoreFixture f;
    f.running_request("req-0", 64, 64);
    auto first = f.build(cached_step("req-0", Ids{2}, 44, 4, Snapshot{{"req-0", {0, 1, 2}}}));
    auto second = f.build(cached_step("req-0", Ids{3}, 48, 16, Snapshot{{"req-0", {0, 1, 2, 3}}}));
    REQUIRE(first->requests.size() == 1);
    REQUIRE(second->requests.size() == 1);
    const std::int64_t first_job_id = *first->requests[0].store_job_id;
    const std::int64_t second_job_id = *second->requests[0].store_job_id;
    CHECK(f.pool.block(3).ref_cnt == 1);
    CHECK(f.pool.block(2).ref_cnt == 2);

    f.scheduler->update_connector_output(f.completions({{first_job_id, 1}}));

    CHECK(f.pool.block(2).ref_cnt == 1);  // the second job's pin only
    CHECK(f.pool.block(3).ref_cnt == 1);
    CHECK_FALSE(f.scheduler->pinned_saves().contains(first_job_id));
    CHECK(f.scheduler->pinned_saves().contains(second_job_id));
}

// Partial: as above, block-aligned saves instead of boundary offloads. The request is preempted while its
// first job is in flight, then re-registered under the same id with a new block table ({3, 4}).
TEST_CASE("store pins: preemption and request id reuse leave an in-flight job pinned",
          "[store][upstream:test_mooncake_store_scheduler.py::test_preemption_and_request_id_reuse_do_not_release_inflight_job]") {
    StoreFixture f;
    f.running_request("req-0", 64, 64);
    auto first = f.build(cached_step("req-0", Ids{2}, 44, 4, Snapshot{{"req-0", {0, 1, 2}}}));
    REQUIRE(first->requests.size() == 1);
    const std::int64_t first_job_id = *first->requests[0].store_job_id;

    f.build(preemption_step("req-0"));
    CHECK(f.pool.block(2).ref_cnt == 1);
    CHECK(f.scheduler->pinned_saves().contains(first_job_id));

    Request& again = f.running_request("req-0", 64, 64);
    f.set_unfinished(again, Groups{{0, 3}});
    f.tracker("req-0").allocated_block_ids = Groups{{0, 3}};
    auto second = f.build(cached_step("req-0", Ids{4}, 44, 4, Snapshot{{"req-0", {0, 3, 4}}}));
    REQUIRE(second->requests.size() == 1);
    const std::int64_t second_job_id = *second->requests[0].store_job_id;
    CHECK(second_job_id != first_job_id);
    CHECK(f.pool.block(4).ref_cnt == 1);

    f.scheduler->update_connector_output(f.completions({{first_job_id, 1}}));
    CHECK(f.pool.block(2).ref_cnt == 0);
    CHECK(f.pool.block(4).ref_cnt == 1);
    CHECK(f.scheduler->pinned_saves().contains(second_job_id));
}
