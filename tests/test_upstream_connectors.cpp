// Ports of connector tests with upstream's values:
// - tests/v1/kv_connector/unit/test_mooncake_connector.py @ 01273c5d1515ab96f82bfcfa3494082d77394d29
//   (through the modelled Scheduler and MooncakeConnectorScheduler, kv_consumer, block size 16);
// - tests/v1/kv_connector/unit/test_mooncake_store_scheduler.py, the 47-function version with store-job pins
//   (its upstream commit is not established; corpus/conformance/manifest.tsv lists it with forty zeros),
//   with the single full-attention group the model has.
#include <catch2/catch.hpp>

#include "scheduler_fixture.h"
#include "sim/connector/mooncake/mooncake_connector_metadata.h"
#include "sim/connector/mooncake/mooncake_connector_scheduler.h"
#include "store_fixture.h"

using namespace kvsim;

TEST_CASE("p2p a prompt shorter than a block is pulled asynchronously and not scheduled",
          "[p2p][upstream:test_mooncake_connector.py::test_prompt_less_than_block_size]") {
    ConnectorSpec spec;
    spec.kind = "p2p";
    spec.role = KvRole::kv_consumer;
    EventLog connector_log;
    MooncakeConnectorScheduler connector(spec, connector_log, require_variant("v0.30.0"));
    EngineConfig cfg;  // tests/v1/kv_connector/unit/utils.py create_vllm_config
    cfg.block_size = 16;
    cfg.max_batched_tokens = 64;
    cfg.max_model_len = 10000;
    testing::SchedulerHarness h(cfg, &connector);
    h.add("1", 8, 16, /*remote_prefill=*/true);  // half a block

    const SchedulerOutput out = h.run_step();
    const auto* meta = dynamic_cast<const MooncakeConnectorMetadata*>(out.kv_connector_metadata.get());
    REQUIRE(meta != nullptr);
    REQUIRE(meta->reqs_to_recv.size() == 1);
    CHECK(meta->reqs_to_recv[0].req_id == "1");
    CHECK(out.scheduled_new_reqs.empty());
}

TEST_CASE("store pins: a save pins the current table's non-null blocks, not the tracker's stale ids",
          "[store][upstream:test_mooncake_store_scheduler.py::test_store_job_pins_current_non_null_non_mamba_blocks]") {
    using namespace kvsim::store_testing;
    // Upstream's attention group: tracker ([7, 2, 0],) plus the delta [5]; the current table ([7, 2, 0, 6],).
    // Its Mamba group and boundary offload (block 8) are out of scope, so the pins are upstream's [8, 7, 2, 6]
    // without the 8.
    StoreFixture f;
    Request& req = f.request("req-0", 48);
    f.set_unfinished(req, Groups{{7, 2, 0}});
    RequestTracker& t = f.tracker("req-0");
    t.token_len = 44;
    t.allocated_block_ids = Groups{{7, 2, 0}};
    t.num_saved_tokens = 32;
    t.prefill_end_tokens = 48;

    auto meta = f.build(cached_step("req-0", Ids{5}, 44, 4, Snapshot{{"req-0", {7, 2, 0, 6}}}));

    CHECK(f.scheduler->tracker("req-0")->allocated_block_ids == Groups{{7, 2, 0, 5}});
    REQUIRE(meta->requests.size() == 1);
    const ReqMeta& m = meta->requests[0];
    CHECK(m.block_ids == Groups{{7, 2, 0, 6}});
    REQUIRE(m.store_job_id.has_value());
    const std::int64_t job = *m.store_job_id;
    CHECK(f.scheduler->pinned_saves().at(job).block_ids == Ids{7, 2, 6});
    CHECK(f.pool.block(0).ref_cnt == 0);
    CHECK(f.pool.block(5).ref_cnt == 0);
    for (BlockId b : {7u, 2u, 6u}) CHECK(f.pool.block(b).ref_cnt == 1);

    f.scheduler->update_connector_output(f.completions({{job, 1}}));
    for (BlockId b : {7u, 2u, 6u}) CHECK(f.pool.block(b).ref_cnt == 0);
}
