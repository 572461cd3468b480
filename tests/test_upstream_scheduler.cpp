// Ports of tests/v1/core/test_scheduler.py @ 003df2961dd8830c317a61f9745ccd557da9fa06 with upstream's values,
// on the modelled Scheduler stepped by SchedulerHarness (tests/v1/core/utils.py create_scheduler /
// create_requests defaults: 16 seqs, 8192 tokens, block size 16, 10000 blocks, 10-token prompts, 16 tokens out).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "scheduler_fixture.h"

using namespace kvsim;
using namespace kvsim::testing;

namespace {

EngineConfig core_engine(int max_batched_tokens = 8192, int max_running = 16, bool prefix_caching = false) {
    EngineConfig cfg;
    cfg.block_size = 16;
    cfg.num_blocks = 10000;
    cfg.max_batched_tokens = max_batched_tokens;
    cfg.max_running = max_running;
    cfg.max_model_len = max_batched_tokens;
    cfg.prefix_caching = prefix_caching;
    return cfg;
}

std::string id_of(int i) { return std::to_string(i); }

std::size_t num_unfinished(const SchedulerHarness& h) {
    return h.scheduler.waiting().size() + h.scheduler.skipped_waiting().size() + h.scheduler.running().size();
}

const BlockPool& pool(const SchedulerHarness& h) { return h.scheduler.kv_cache_manager().block_pool(); }

}  // namespace

TEST_CASE("scheduler: add_request enqueues every request", "[scheduler][upstream:test_scheduler.py::test_add_requests]") {
    SchedulerHarness h(core_engine());
    for (int i = 0; i < 10; ++i) {
        h.add(id_of(i), 10, 16);
        CHECK(h.alive(id_of(i)));
        CHECK(h.scheduler.waiting().size() == static_cast<std::size_t>(i + 1));
    }
}

TEST_CASE("scheduler: aborting a waiting request deletes it", "[scheduler][upstream:test_scheduler.py::test_finish_request]") {
    SchedulerHarness h(core_engine());
    for (int i = 0; i < 10; ++i) h.add(id_of(i), 10, 16);
    for (int i = 0; i < 10; ++i) {
        h.scheduler.finish_requests({id_of(i)}, RequestStatus::finished_aborted);
        CHECK_FALSE(h.alive(id_of(i)));
        CHECK(h.scheduler.waiting().size() == static_cast<std::size_t>(9 - i));
    }
}

TEST_CASE("scheduler: finishing a request drops it from the unfinished count",
          "[scheduler][upstream:test_scheduler.py::test_get_num_unfinished_requests]") {
    SchedulerHarness h(core_engine());
    for (int i = 0; i < 10; ++i) h.add(id_of(i), 10, 16);
    for (int i = 0; i < 10; ++i) {
        h.scheduler.finish_requests({id_of(i)}, RequestStatus::finished_stopped);
        CHECK(num_unfinished(h) == static_cast<std::size_t>(10 - i - 1));
    }
}

TEST_CASE("scheduler: ten short prompts are scheduled whole, in arrival order",
          "[scheduler][upstream:test_scheduler.py::test_schedule]") {
    for (bool caching : {false, true}) {
        INFO("enable_prefix_caching=" << caching);
        SchedulerHarness h(core_engine(8192, 16, caching));
        for (int i = 0; i < 10; ++i) h.add(id_of(i), 10, 16);
        const SchedulerOutput out = h.run_step();
        CHECK(out.scheduled_new_reqs.size() == 10);
        CHECK(out.scheduled_cached_reqs.size() == 0);
        CHECK(out.finished_req_ids.empty());
        for (const auto& [id, n] : out.num_scheduled_tokens) CHECK(n == 10);
        CHECK(h.scheduler.waiting().empty());
        REQUIRE(h.scheduler.running().size() == 10);
        for (int i = 0; i < 10; ++i) CHECK(h.scheduler.running()[static_cast<std::size_t>(i)] == id_of(i));
    }
}

TEST_CASE("scheduler: without chunked prefill a long prompt is not skipped for short ones",
          "[scheduler][upstream:test_scheduler.py::test_schedule_order]") {
    for (bool chunked : {true, false}) {
        INFO("enable_chunked_prefill=" << chunked);
        EngineConfig cfg = core_engine(1024, 3);
        cfg.chunked_prefill = chunked;
        SchedulerHarness h(cfg);
        h.add("1", 800, 16);
        h.add("2", 800, 16);
        h.add("3", 10, 16);
        h.add("4", 10, 16);
        const SchedulerOutput out = h.run_step();
        CHECK(out.scheduled_new_reqs.size() == (chunked ? 2u : 1u));
    }
}

TEST_CASE("scheduler: long prefills share the budget under long_prefill_token_threshold",
          "[scheduler][upstream:test_scheduler.py::test_schedule_concurrent_partial_requests]") {
    for (bool caching : {true, false}) {
        INFO("enable_prefix_caching=" << caching);
        EngineConfig cfg = core_engine(1024, 16, caching);
        cfg.long_prefill_threshold = 400;
        SchedulerHarness h(cfg);
        for (int i = 0; i < 3; ++i) h.add(id_of(i), 800, 16);

        SchedulerOutput out = h.run_step();
        CHECK(out.scheduled_new_reqs.size() == 3);
        CHECK(out.scheduled_cached_reqs.size() == 0);
        CHECK(out.finished_req_ids.empty());
        CHECK(out.num_scheduled_tokens.at("0") == 400);
        CHECK(out.num_scheduled_tokens.at("1") == 400);
        CHECK(out.num_scheduled_tokens.at("2") == 224);

        out = h.run_step();
        CHECK(h.scheduler.running().size() == 3);
        CHECK(out.scheduled_new_reqs.empty());
        CHECK(out.scheduled_cached_reqs.size() == 3);
        CHECK(out.num_scheduled_tokens.at("0") == 400);
        CHECK(out.num_scheduled_tokens.at("1") == 400);
        CHECK(out.num_scheduled_tokens.at("2") == 224);

        out = h.run_step();  // the first two decode; the third finishes its prompt
        CHECK(h.scheduler.running().size() == 3);
        CHECK(out.scheduled_new_reqs.empty());
        CHECK(out.scheduled_cached_reqs.size() == 3);
        CHECK(out.num_scheduled_tokens.at("0") == 1);
        CHECK(out.num_scheduled_tokens.at("1") == 1);
        CHECK(out.num_scheduled_tokens.at("2") == 800 - 224 - 224);
    }
}

TEST_CASE("scheduler: requests run to completion leave nothing behind",
          "[scheduler][upstream:test_scheduler.py::test_memory_leak]") {
    SchedulerHarness h(core_engine(8192, 16, true));
    for (int i = 0; i < 5; ++i) {
        h.add(id_of(i), 10, 10);
        h.run_step();
    }
    for (int guard = 0; guard < 100 && !h.scheduler.running().empty(); ++guard) h.run_step();
    h.run_step();
    // utils.py assert_scheduler_empty
    CHECK_FALSE(h.scheduler.has_requests());
    CHECK(h.scheduler.waiting().empty());
    CHECK(h.scheduler.running().empty());
    CHECK(pool(h).num_free_blocks() == static_cast<std::uint32_t>(h.config.num_blocks - 1));
    int referenced = 0;
    for (BlockId b = 0; b < static_cast<BlockId>(h.config.num_blocks); ++b) referenced += pool(h).block(b).ref_cnt != 0;
    CHECK(referenced == 0);
}
