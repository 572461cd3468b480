// judge_input (fuzz/judge/input_judge.h): how the trace target decides an input. A hang that only
// the idle budget stopped, and that the registry does not know, is judged again on the hang budget
// alone before any run to the step limit; a known hang needs neither rerun; a NEW finding still gets
// the run `kvsim run` makes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>

#include "fuzz/judge/input_judge.h"
#include "fuzz/search_options.h"
#include "sim/trace/trace_parser.h"
#include "sim/variant/variant.h"

namespace kvsim {
namespace {

// The target's options for a trace, without the determinism replay.
RunOptions search_options(Trace& trace) {
    return fuzz::search_run_options(trace, false, builtin_registry().events_read());
}

// Six requests over a pool that holds them only with preemptions; one-token prefill chunks and no
// prefix caching, so a preempted request recomputes its 113 tokens one a step: well inside the hang
// budget. It drains at step 364.
constexpr const char* kSlowRecomputation =
    "kvsim-trace 1\n"
    "engine block_size=2 num_blocks=73 max_batched_tokens=1024 max_running=16 max_model_len=144 chunked_prefill=off "
    "prefix_caching=off long_prefill_threshold=1 reserve_full_isl=on async_scheduling=off\n"
    "run seed=1 max_steps=2137\n"
    "segment p0 len=96\nsegment short1 len=10\nsegment p1 len=22\nsegment s1 len=96\nsegment prompt len=17\n"
    "@0 arrive r1 prompt=p0 max_tokens=16\n@0 arrive r3 prompt=p1+p1 max_tokens=16\n"
    "@0 arrive r4 prompt=short1 max_tokens=16\n@0 arrive r5 prompt=s1 max_tokens=16\n"
    "@0 arrive r0 prompt=p0+prompt max_tokens=30\n@0 arrive req-0 prompt=prompt max_tokens=1\n";

TEST_CASE("a NEW hang of the idle budget is judged again on the hang budget alone", "[fuzz][budget]") {
    Trace trace = parse_trace(kSlowRecomputation, "<slow>");
    const Variant variant = require_variant("v0.30.0");
    RunOptions options = search_options(trace);
    // idle_budget waits out the longest recomputation; a budget of 64 steps does not
    REQUIRE(options.idle_steps > 113);
    options.idle_steps = 64;
    REQUIRE(options.idle_steps < options.stall_steps);
    const RunResult first = run_trace(trace, variant, options);
    REQUIRE(first.verdict == Verdict::liveness);
    REQUIRE(!first.findings.empty());
    REQUIRE(first.findings.front().fact("stalled") == std::optional<std::int64_t>(options.idle_steps));
    REQUIRE(classify(builtin_registry(), trace, variant, first, options).is_new());

    const InputJudgement judged = judge_input(builtin_registry(), trace, variant, options);
    CHECK(judged.idle_rerun);
    CHECK_FALSE(judged.new_rerun);
    CHECK(judged.result.verdict == Verdict::pass);
    CHECK(judged.result.steps == 364);
    CHECK(judged.classification.outcome == Outcome::none);
}

TEST_CASE("a known hang is judged on its first run", "[fuzz][budget]") {
    Trace trace = parse_trace_file(KVSIM_SOURCE_DIR "/corpus/findings/store_pins_make_preemption_free_nothing.trace");
    const RunOptions options = search_options(trace);
    const InputJudgement judged = judge_input(builtin_registry(), trace, require_variant("v0.30.0"), options);
    REQUIRE(judged.classification.known());
    CHECK(judged.classification.cause_set() == "store_pin_preemption_cascade");
    CHECK_FALSE(judged.idle_rerun);
    CHECK_FALSE(judged.new_rerun);
}

TEST_CASE("a finding still NEW is run again as kvsim run runs it", "[fuzz][budget]") {
    Trace trace = parse_trace_file(KVSIM_SOURCE_DIR "/corpus/findings/store_pins_make_preemption_free_nothing.trace");
    const Variant variant = require_variant("v0.30.0");
    const RunOptions options = search_options(trace);
    const InputJudgement judged = judge_input(Registry{}, trace, variant, options);
    CHECK(judged.classification.is_new());
    CHECK(judged.idle_rerun);  // the thrash recomputes nothing new: the idle budget stops it first
    CHECK(judged.new_rerun);
    CHECK(judged.result.verdict == Verdict::liveness);
    // no budget stops the last run: it ends at the step limit, as kvsim run's would
    CHECK(judged.result.steps == trace.run.max_steps);
    REQUIRE(!judged.result.findings.empty());
    CHECK_FALSE(judged.result.findings.front().fact("stalled").has_value());
}

}  // namespace
}  // namespace kvsim
