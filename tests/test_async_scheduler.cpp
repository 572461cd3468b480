// The async scheduler and the engine core's batch queue: upstream's tests/v1/core/test_async_scheduler.py
// @ 65d265fe4ae6554c1072b02ecba91ad72ad31bb2 transcribed (those in scope: no spec decoding, no prefix-cache
// dedup), the one-step lag of the log, and #45357's deferred frees with their fence.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <utility>

#include "properties/harness/run_trace.h"
#include "scheduler_fixture.h"
#include "sim/connector/mock/mock_connector.h"
#include "sim/core/sched/async_scheduler.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"

using namespace kvsim;
using namespace kvsim::testing;

namespace {

// create_scheduler(async_scheduling=True) of tests/v1/core/utils.py, at kvsim's scale.
EngineConfig roomy_engine() {
    EngineConfig cfg;
    cfg.block_size = 16;
    cfg.num_blocks = 1000;
    cfg.max_batched_tokens = 8192;
    cfg.max_running = 16;
    cfg.max_model_len = 4096;
    return cfg;
}

// A dispatched batch: its output and the tokens the model sampled for it (one per request that
// completes its prompt, as upstream's _make_model_runner_output for unchunked prompts).
using Batch = std::pair<SchedulerOutput, ModelRunnerOutput>;

struct AsyncHarness {
    AsyncHarness() : AsyncHarness(roomy_engine(), require_variant("v0.30.0"), nullptr, {.max_concurrent_batches = 2}) {}
    AsyncHarness(EngineConfig cfg, const Variant& variant, KVConnectorScheduler* connector, SchedulerOptions options)
        : config(cfg), scheduler(config, variant, connector, log, options) {}

    void add(const std::string& id, int prompt_len, int max_tokens) {
        scheduler.add_request(std::make_unique<Request>(id, tokens(prompt_len, 1000 * static_cast<int>(++added)),
                                                        max_tokens, config.block_size, 0, KvTransferParams{}));
    }
    Batch dispatch() {
        Batch batch{scheduler.schedule(step++), {}};
        for (const auto& [id, n] : batch.first.num_scheduled_tokens) {
            const Request& req = *scheduler.requests().at(id);
            auto& sampled = batch.second.sampled_token_ids[id];
            if (!req.is_prefill_chunk) sampled.push_back(sampled_token(id, req.num_computed_tokens));
        }
        return batch;
    }

    EngineConfig config;
    EventLog log;
    AsyncScheduler scheduler;
    int step = 0;
    std::size_t added = 0;
};

// The output tokens each finished request had, from the finish events of the log.
std::map<std::string, std::int64_t> finished_outputs(const EventLog& log) {
    std::map<std::string, std::int64_t> out;
    for (const LogEvent& e : log.events())
        if (e.category == EventCategory::finish) out[std::string(e.request())] = e.integer("output").value_or(-1);
    return out;
}

}  // namespace

TEST_CASE("async scheduler: stop by max_tokens",
          "[async][upstream:tests/v1/core/test_async_scheduler.py::test_stop_by_max_tokens]") {
    const int max_tokens = GENERATE(1, 2, 3, 5);
    CAPTURE(max_tokens);
    AsyncHarness h;
    const int prompt = 10;
    std::deque<Batch> in_flight;
    h.add("req0", prompt, max_tokens);
    in_flight.push_back(h.dispatch());
    h.add("req1", prompt, max_tokens);
    in_flight.push_back(h.dispatch());
    const int expected_total = 2 * (prompt + max_tokens - 1);

    int total = 0;
    while (!in_flight.empty()) {
        Batch batch = std::move(in_flight.front());
        in_flight.pop_front();
        total += batch.first.total_num_scheduled_tokens;
        h.scheduler.update_from_output(batch.first, batch.second);
        Batch next = h.dispatch();
        if (!next.first.num_scheduled_tokens.empty()) in_flight.push_back(std::move(next));
    }
    REQUIRE_FALSE(h.scheduler.has_unfinished_requests());
    const auto outputs = finished_outputs(h.log);
    CHECK(outputs.at("req0") == max_tokens);
    CHECK(outputs.at("req1") == max_tokens);
    // No token is scheduled beyond max_tokens: the placeholder rule skips the extra step.
    CHECK(total == expected_total);
}

TEST_CASE("async scheduler: abort while two batches are in flight",
          "[async][upstream:tests/v1/core/test_async_scheduler.py::test_abort]") {
    AsyncHarness h;
    for (int i = 0; i < 10; ++i) h.add("req" + std::to_string(i), 10, 20);
    std::deque<Batch> in_flight;
    in_flight.push_back(h.dispatch());
    in_flight.push_back(h.dispatch());

    const std::vector<int> abort_order = {0, 8, 3, 1, 6, 4, 2, 5, 7, 9};
    std::size_t next_abort = 0;
    std::map<std::string, int> outputs_at_abort;
    while (!in_flight.empty()) {
        if (next_abort < abort_order.size()) {
            const std::string id = "req" + std::to_string(abort_order[next_abort++]);
            outputs_at_abort[id] = h.scheduler.requests().at(id)->num_output_tokens();
            h.scheduler.finish_requests({id}, RequestStatus::finished_aborted);
        }
        Batch batch = std::move(in_flight.front());
        in_flight.pop_front();
        h.scheduler.update_from_output(batch.first, batch.second);
        Batch next = h.dispatch();
        if (!next.first.num_scheduled_tokens.empty()) in_flight.push_back(std::move(next));
    }
    REQUIRE_FALSE(h.scheduler.has_requests());
    for (std::size_t k = 0; k < abort_order.size(); ++k)
        CHECK(outputs_at_abort.at("req" + std::to_string(abort_order[k])) == static_cast<int>(k));
}

TEST_CASE("async scheduler: placeholders count the tokens scheduled but not yet processed", "[async]") {
    AsyncHarness h;
    h.add("r", 10, 5);
    Batch first = h.dispatch();
    CHECK(h.scheduler.requests().at("r")->num_output_placeholders == 1);
    CHECK(first.first.num_output_placeholders.empty());  // the connector sees the count before this step's
    Batch second = h.dispatch();
    CHECK(second.first.num_scheduled_tokens.at("r") == 1);  // the decode of the placeholder token
    CHECK(second.first.num_output_placeholders.at("r") == 1);
    CHECK(h.scheduler.requests().at("r")->num_output_placeholders == 2);
    h.scheduler.update_from_output(first.first, first.second);
    CHECK(h.scheduler.requests().at("r")->num_output_placeholders == 1);
    CHECK(h.scheduler.requests().at("r")->num_output_tokens() == 1);
}

namespace {

Trace lag_trace(bool async) {
    return parse_trace(std::string("kvsim-trace 1\n"
                                   "engine block_size=16 num_blocks=64 max_model_len=1008 async_scheduling=") +
                           (async ? "on" : "off") +
                           "\nrun seed=1 max_steps=50\n"
                           "segment p len=20\n"
                           "@0 arrive r1 prompt=p max_tokens=3\n",
                       "lag.trace");
}

int finish_step(const RunResult& result) {
    for (const LogEvent& e : result.events)
        if (e.category == EventCategory::finish) return e.step;
    return -1;
}

}  // namespace

TEST_CASE("the log shows async scheduling's one-step lag", "[async]") {
    const RunResult sync = run_trace(lag_trace(false), require_variant("v0.30.0"));
    const RunResult async = run_trace(lag_trace(true), require_variant("v0.30.0"));
    REQUIRE(sync.verdict == Verdict::pass);
    REQUIRE(async.verdict == Verdict::pass);
    // Sync: step 0 prefills and samples token 1, steps 1 and 2 decode; r1 finishes in step 2.
    CHECK(finish_step(sync) == 2);
    // Async: each output is processed one step after its batch, so the third token lands in step 3.
    CHECK(finish_step(async) == 3);
    CHECK(async.log.find("process output of step 0") != std::string::npos);
    CHECK(sync.log.find("process output of step") == std::string::npos);
}

TEST_CASE("the trace key async_scheduling overrides the variant's default and round-trips", "[async][trace]") {
    const Trace absent = parse_trace("kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008\n", "a.trace");
    CHECK_FALSE(absent.engine.async_scheduling.has_value());
    CHECK(print_trace(absent).find("async_scheduling") == std::string::npos);
    const Trace stated = lag_trace(true);
    REQUIRE(stated.engine.async_scheduling == std::optional<bool>(true));
    CHECK(parse_trace(print_trace(stated), "b.trace") == stated);
    CHECK(Engine(absent, require_variant("v0.30.0")).async_scheduling() == true);  // every release defaults to on
    CHECK(Engine(stated, require_variant("v0.30.0")).async_scheduling() == true);
}

namespace {

const std::string kInflightTrace = std::string(KVSIM_SOURCE_DIR) + "/corpus/upstream/pr45357_inflight_write_after_abort.trace";

}  // namespace

TEST_CASE("deferred frees wait for the fence step's output (#45357)", "[async][deferred_free]") {
    const Trace trace = parse_trace_file(kInflightTrace);
    Engine engine(trace, require_variant("v0.30.0"));
    for (int step = 0; step < 3; ++step) engine.run_step(step);
    REQUIRE(engine.scheduler().deferred_frees().empty());
    engine.run_step(3);  // req-a aborted before schedule(): its last batch (step 2) is still in flight
    // The batch of step 2 was processed at the end of step 3, which drained the fence.
    const auto& events = engine.log().events();
    const auto held = std::find_if(events.begin(), events.end(), [](const LogEvent& e) {
        return e.category == EventCategory::hold && e.request() == "req-a";
    });
    REQUIRE(held != events.end());
    const auto drained = std::find_if(held, events.end(), [](const LogEvent& e) {
        return e.category == EventCategory::free && e.has("fence");
    });
    REQUIRE(drained != events.end());
    CHECK(drained->step == 3);
    CHECK(engine.scheduler().deferred_frees().empty());
}

TEST_CASE("in-flight writes: a freed block handed to a load trips the invariant before #45357 only",
          "[async][deferred_free][inflight_write]") {
    const Trace trace = parse_trace_file(kInflightTrace);
    const RunResult pre = run_trace(trace, require_variant("v0.30.0+pre45357"));
    CHECK(pre.verdict == Verdict::violation);
    CHECK(pre.signature == "violation:load_under_inflight_write");
    const RunResult fixed = run_trace(trace, require_variant("v0.30.0"));
    CHECK(fixed.verdict == Verdict::pass);
    // Synchronous scheduling has no batch in flight across an allocation, fence or not.
    Trace sync = trace;
    sync.engine.async_scheduling = false;
    CHECK(run_trace(sync, require_variant("v0.30.0+pre45357")).verdict == Verdict::pass);
}

TEST_CASE("runs are deterministic under both modes", "[async][determinism]") {
    for (const bool async : {false, true}) {
        CAPTURE(async);
        Trace trace = parse_trace_file(kInflightTrace);
        trace.engine.async_scheduling = async;
        const RunResult a = run_trace(trace, require_variant("v0.30.0"));
        const RunResult b = run_trace(trace, require_variant("v0.30.0"));
        CHECK(a.digest == b.digest);
        CHECK(a.log == b.log);
    }
}

// Found by the nightly: under async scheduling a finished request's store job still pins its block, the
// scheduler has no requests left, and the engine stopped polling the worker, so the pin never went.
TEST_CASE("async scheduling: the engine keeps polling the connector while a store job pins a finished request's block",
          "[async]") {
    const Trace trace = parse_trace(
        "kvsim-trace 1\n"
        "engine block_size=16 num_blocks=64 max_model_len=1008 kv_load_failure_policy=recompute async_scheduling=on\n"
        "run seed=6 max_steps=152 variant=v0.29.0+003\n"
        "connector store role=kv_both load_async=on lookup_async=off enable_lookup=on save_decode_cache=off\n"
        "workers ranks=1 store_delay_min=1 store_delay_max=3 load_delay_min=1 load_delay_max=1 pull_delay=1\n"
        "segment b len=16\n"
        "@0 arrive req-b prompt=b max_tokens=1\n",
        "t.trace");
    for (const char* variant : {"v0.29.0+003", "v0.30.0+all_fixes"}) {
        const RunResult result = run_trace(trace, require_variant(variant));
        CHECK(result.verdict == Verdict::pass);
        CHECK(result.steps < 20);
    }
}

namespace {

// Two one-block prompts and one spare block: their first decode step needs a block each, so r1 preempts
// itself while the batch of its prefill is still in flight.
EngineConfig one_spare_block() {
    EngineConfig cfg = roomy_engine();
    cfg.block_size = 4;
    cfg.num_blocks = 4;  // the null block and three
    return cfg;
}

Variant with_preempted_output(std::string_view value) {
    Variant v = require_variant("v0.30.0");
    REQUIRE(set_variant_flag(v, "preempted_output", value));
    return v;
}

bool scheduled(const Batch& batch, const std::string& id) { return batch.first.num_scheduled_tokens.contains(id); }

// r0 and r1 prefill in b0; b1, dispatched before b0's output, preempts r1 (its prefill tokens in flight).
// r0 stops after two tokens, so processing b0 and b1 frees its blocks.
std::pair<Batch, Batch> preempt_r1_in_flight(AsyncHarness& h) {
    h.add("r0", 4, 2);
    h.add("r1", 4, 8);
    Batch b0 = h.dispatch();
    Batch b1 = h.dispatch();
    REQUIRE(h.scheduler.requests().at("r1")->status == RequestStatus::preempted);
    REQUIRE_FALSE(scheduled(b1, "r1"));
    return {std::move(b0), std::move(b1)};
}

}  // namespace

TEST_CASE("async scheduler: a preempted request's output in flight turns stale, is delivered, and holds it back (#48245)",
          "[async][preempted_output]") {
    AsyncHarness h(one_spare_block(), with_preempted_output("stale_delivered"), nullptr, {.max_concurrent_batches = 2});
    auto [b0, b1] = preempt_r1_in_flight(h);
    const Request& r1 = *h.scheduler.requests().at("r1");
    CHECK(r1.num_stale_output_tokens == 4);
    CHECK(r1.num_in_flight_tokens == 4);
    CHECK(r1.num_output_placeholders == 0);
    CHECK_FALSE(r1.drop_stale_output);

    // A block is free, but r1 is not resumed while its stale output is in flight.
    const Batch b2 = h.dispatch();
    CHECK_FALSE(scheduled(b2, "r1"));
    CHECK(r1.awaits_stale_output());

    h.scheduler.update_from_output(b0.first, b0.second);  // delivered: r1's token counts, no placeholder is touched
    CHECK(r1.num_output_tokens() == 1);
    CHECK(r1.num_stale_output_tokens == 0);
    CHECK(r1.num_in_flight_tokens == 0);
    CHECK(r1.num_output_placeholders == 0);
    h.scheduler.update_from_output(b1.first, b1.second);  // r0 stops: its blocks hold r1's five tokens
    const Batch b3 = h.dispatch();
    CHECK(scheduled(b3, "r1"));
    CHECK(b3.first.num_scheduled_tokens.at("r1") == 1);  // the prompt block is a prefix hit: only the delivered token
}

TEST_CASE("async scheduler: a stack that must deliver KV drops the stale output and resumes at once (#50297)",
          "[async][preempted_output]") {
    const ConnectorSpec spec{.kind = "mock", .role = KvRole::kv_producer};  // no consumer: frees are not fenced
    MockConnectorScheduler connector(spec);
    AsyncHarness h(one_spare_block(), require_variant("v0.30.0"), &connector,
                   {.max_concurrent_batches = 2, .kv_producer = true});
    auto [b0, b1] = preempt_r1_in_flight(h);
    const Request& r1 = *h.scheduler.requests().at("r1");
    CHECK(r1.drop_stale_output);
    CHECK_FALSE(r1.awaits_stale_output());

    const Batch b2 = h.dispatch();  // no wait: the positions of the dropped output are sampled again
    CHECK(scheduled(b2, "r1"));
    h.scheduler.update_from_output(b0.first, b0.second);
    CHECK(r1.num_output_tokens() == 0);  // b0's token of r1 is dropped
    CHECK(r1.num_stale_output_tokens == 0);
    CHECK(r1.num_in_flight_tokens == 4);  // b2's recomputation
}

TEST_CASE("async scheduler: before #48245 a preempted request keeps its placeholders and resumes with output in flight",
          "[async][preempted_output]") {
    AsyncHarness h(one_spare_block(), with_preempted_output("placeholders_kept"), nullptr, {.max_concurrent_batches = 2});
    preempt_r1_in_flight(h);  // b0 and b1 stay in flight
    const Request& r1 = *h.scheduler.requests().at("r1");
    CHECK(r1.num_stale_output_tokens == 0);
    CHECK(r1.num_output_placeholders == 1);
    const Batch b2 = h.dispatch();
    CHECK(scheduled(b2, "r1"));
}
