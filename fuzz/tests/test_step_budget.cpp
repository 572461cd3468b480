// The trace target's step, hang and idle budgets (fuzz/mutator/trace_mutator.h, step_budget,
// stall_budget and idle_budget) and its sweep period: capping a corpus trace's max_steps at its
// budget, stopping it after its hang budget without progress or its idle budget computing nothing
// new (as the target judges such a stop), and sweeping every budget::kSweepPeriod steps changes no
// verdict or signature under any preset (nor the digest, but of a liveness run, whose hang is met
// sooner), nor those of swarm traces inside the fuzzing envelope; a roomy max_steps is cut to twice
// step_bound; a livelock stops long before its limit, and sooner still on the idle budget.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/judge/input_judge.h"
#include "fuzz/mutator/trace_mutator.h"
#include "fuzz/swarm/swarm.h"
#include "properties/findings/classify.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/trace_parser.h"
#include "sim/variant/variant.h"

namespace kvsim::fuzz {
namespace {

std::vector<std::string> corpus_traces() {
    std::vector<std::string> paths;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(KVSIM_SOURCE_DIR "/corpus"))
        if (entry.path().extension() == ".trace") paths.push_back(entry.path().string());
    std::sort(paths.begin(), paths.end());
    return paths;
}

// The run on the search's budgets as the trace target judges it (judge_input): a hang the idle budget
// stopped and the registry does not know is run again on the hang budget alone, since a recomputation
// slower than the idle budget (one-token prefill chunks after a preemption) ends later.
RunResult run_on_budgets(const Trace& capped, const Variant& variant, RunOptions options) {
    RunResult result = run_trace(capped, variant, options);
    if (!stopped_idle(result, options) || !classify(builtin_registry(), capped, variant, result, options).is_new())
        return result;
    options.idle_steps = 0;
    return run_trace(capped, variant, options);
}

TEST_CASE("the step budget changes no corpus verdict under any preset", "[fuzz][budget]") {
    std::vector<std::string> presets = presets_with(PresetTag::clean);
    for (const std::string& broken : presets_with(PresetTag::known_broken)) presets.push_back(broken);
    const auto paths = corpus_traces();
    REQUIRE(paths.size() >= 10);
    for (const std::string& path : paths) {
        const Trace trace = parse_trace_file(path);
        Trace capped = trace;
        capped.run.max_steps = step_budget(trace);
        REQUIRE(capped.run.max_steps <= trace.run.max_steps);
        // the target caps max_steps first: the budgets of the capped trace are the trace's own
        const SearchBudgets own = search_budgets(trace);
        const SearchBudgets after_cap = search_budgets(capped);
        CHECK(own.steps == capped.run.max_steps);
        CHECK(after_cap.steps == own.steps);
        CHECK(after_cap.stall == own.stall);
        CHECK(after_cap.idle == own.idle);
        CHECK(own.idle <= own.stall);
        CHECK(own.stall <= own.steps);
        for (const std::string& preset : presets) {
            const Variant variant = require_variant(preset);
            const RunResult full = run_trace(trace, variant);
            const RunResult budgeted = run_trace(capped, variant);
            const RunResult stalled = run_on_budgets(capped, variant,
                                                     RunOptions{.sweep_period = budget::kSweepPeriod,
                                                                .stall_steps = stall_budget(trace),
                                                                .idle_steps = idle_budget(trace)});
            INFO(path << " under " << preset);
            for (const RunResult* cut : {&budgeted, &stalled}) {
                CHECK(cut->verdict == full.verdict);
                CHECK(cut->signature == full.signature);
                if (full.verdict != Verdict::liveness) CHECK(cut->digest == full.digest);  // a hang is met sooner
            }
        }
    }
}

TEST_CASE("the step budget cuts a roomy max_steps to twice step_bound", "[fuzz][budget]") {
    Trace trace = parse_trace("kvsim-trace 1\nengine block_size=4 num_blocks=16 max_model_len=60\nrun max_steps=100000\n"
                              "segment s len=8\n@0 arrive r prompt=s max_tokens=4\n",
                              "<budget>");
    CHECK(step_budget(trace) == 2 * step_bound(trace));
    CHECK(step_budget(trace) < 1000);
    trace.run.max_steps = 5;
    CHECK(step_budget(trace) == 5);
}

TEST_CASE("the search budgets change no verdict of swarm traces inside the fuzzing envelope", "[fuzz][budget]") {
    int hangs = 0, stopped_early = 0;
    for (const std::string preset : {"v0.30.0", "v0.29.0", "v0.27.1"}) {
        const Variant variant = require_variant(preset);
        for (std::uint64_t seed = 1; seed <= 300; ++seed) {
            Trace trace = trace_for_seed(seed, SwarmOptions{});
            normalize(trace);
            trace.run.max_steps = step_budget(trace);
            const RunOptions plain{.text_log = false, .events = false};
            RunOptions budgeted = plain;
            budgeted.sweep_period = budget::kSweepPeriod;
            budgeted.stall_steps = stall_budget(trace);
            budgeted.idle_steps = idle_budget(trace);
            const RunResult full = run_trace(trace, variant, plain);
            const RunResult cut = run_trace(trace, variant, budgeted);
            INFO("swarm seed " << seed << " under " << preset);
            REQUIRE(cut.verdict == full.verdict);
            REQUIRE(cut.signature == full.signature);
            CHECK(cut.steps <= full.steps);
            hangs += full.verdict == Verdict::liveness ? 1 : 0;
            stopped_early += cut.steps < full.steps ? 1 : 0;
            if (full.verdict != Verdict::liveness) CHECK(cut.steps == full.steps);
        }
    }
    INFO(hangs << " hangs, " << stopped_early << " stopped early");
    CHECK(hangs >= 4);
    CHECK(stopped_early == hangs);  // every hang, and nothing else, ends sooner
}

TEST_CASE("the hang budget stops a preemption livelock long before its step budget", "[fuzz][budget]") {
    const Trace trace = parse_trace_file(KVSIM_SOURCE_DIR "/corpus/findings/store_pins_make_preemption_free_nothing.trace");
    Trace capped = trace;
    capped.run.max_steps = step_budget(trace);
    const Variant variant = require_variant("v0.30.0");
    const RunResult full = run_trace(capped, variant, RunOptions{.text_log = false});
    const RunResult cut = run_trace(capped, variant, RunOptions{.text_log = false, .stall_steps = stall_budget(trace)});
    REQUIRE(full.verdict == Verdict::liveness);
    REQUIRE(cut.verdict == Verdict::liveness);
    CHECK(cut.signature == full.signature);
    CHECK(stall_budget(trace) < step_budget(trace));
    CHECK(cut.steps < full.steps);
    CHECK(cut.steps * 3 < full.steps);  // 101 against 400
    REQUIRE(!cut.findings.empty());
    CHECK(cut.findings.front().fact("stalled") == std::optional<std::int64_t>(stall_budget(trace)));
    CHECK(!full.findings.front().fact("stalled").has_value());
    CHECK(cut.message.starts_with("no progress in "));
    // the patch that ends the livelock drains the trace whatever the budget
    const Variant fixed = require_variant("v0.30.0+pin_aware_preemption");
    CHECK(run_trace(capped, fixed, RunOptions{.text_log = false, .stall_steps = stall_budget(trace)}).verdict ==
          Verdict::pass);
    CHECK(run_trace(capped, fixed,
                    RunOptions{.text_log = false, .stall_steps = stall_budget(trace), .idle_steps = idle_budget(trace)})
              .verdict == Verdict::pass);
}

TEST_CASE("the idle budget stops a preemption livelock sooner than the hang budget", "[fuzz][budget]") {
    const Trace trace = parse_trace_file(KVSIM_SOURCE_DIR "/corpus/findings/store_pins_make_preemption_free_nothing.trace");
    Trace capped = trace;
    capped.run.max_steps = step_budget(trace);
    const Variant variant = require_variant("v0.30.0");
    const RunOptions hang_only{.text_log = false, .stall_steps = stall_budget(trace)};
    RunOptions both = hang_only;
    both.idle_steps = idle_budget(trace);
    const RunResult stalled = run_trace(capped, variant, hang_only);
    const RunResult idle = run_trace(capped, variant, both);
    REQUIRE(idle.verdict == Verdict::liveness);
    CHECK(idle.signature == stalled.signature);
    CHECK(idle_budget(trace) < stall_budget(trace));
    CHECK(idle.steps < stalled.steps);
    REQUIRE(!idle.findings.empty());
    // every request is preempted and recomputes what it had computed: the thrash computes nothing new
    CHECK(idle.findings.front().fact("stalled") == std::optional<std::int64_t>(idle_budget(trace)));
}

TEST_CASE("the idle budget waits out a fault in effect", "[fuzz][budget]") {
    // r's store lookup stays pending for 150 steps after the last event: nothing is computed meanwhile
    const Trace trace = parse_trace("kvsim-trace 1\nengine block_size=4 num_blocks=16 max_model_len=60\nrun max_steps=1000\n"
                                    "connector store role=kv_both enable_lookup=on lookup_async=on\n"
                                    "workers ranks=1 store_delay_min=1 store_delay_max=1 load_delay_min=1 "
                                    "load_delay_max=1 pull_delay=1\nsegment s len=8\n"
                                    "@0 arrive r prompt=s max_tokens=2\n@0 fault lookup_pending steps=150 request=r\n",
                                    "<idle>");
    REQUIRE(idle_budget(trace) < 150);
    const RunResult idle = run_trace(trace, require_variant("v0.30.0"),
                                     RunOptions{.text_log = false,
                                                .stall_steps = stall_budget(trace),
                                                .idle_steps = idle_budget(trace)});
    CHECK(idle.verdict == Verdict::pass);
    CHECK(idle.steps > 150);
}

TEST_CASE("the idle budget does not wait on a failure armed for a job that never comes", "[fuzz][budget]") {
    // r0 is never loaded (the stack has no lookup), so its load failure stays armed through the thrash
    const Trace trace = parse_trace_file(KVSIM_SOURCE_DIR "/corpus/findings/store_pins_make_preemption_free_nothing.trace");
    REQUIRE(trace.connectors.size() == 1);
    REQUIRE_FALSE(trace.connectors.front().enable_lookup);
    Trace armed = trace;
    armed.events.push_back(Event{.step = 0, .body = FaultEvent{.kind = FaultKind::load_fail, .request_id = "r0"}});
    REQUIRE(idle_budget(armed) == idle_budget(trace));
    armed.run.max_steps = step_budget(trace);
    const RunOptions both{.text_log = false, .stall_steps = stall_budget(trace), .idle_steps = idle_budget(trace)};
    const RunResult idle = run_trace(armed, require_variant("v0.30.0"), both);
    REQUIRE(idle.verdict == Verdict::liveness);
    REQUIRE(!idle.findings.empty());
    CHECK(idle.findings.front().fact("stalled") == std::optional<std::int64_t>(idle_budget(trace)));
    Trace capped = trace;
    capped.run.max_steps = step_budget(trace);
    CHECK(idle.steps == run_trace(capped, require_variant("v0.30.0"), both).steps);
}

TEST_CASE("the idle budget is 32, twice the worker delays and the longest recomputation, within the hang budget",
          "[fuzz][budget]") {
    Trace trace = parse_trace("kvsim-trace 1\nengine block_size=4 num_blocks=103 max_batched_tokens=64 max_model_len=408\n"
                              "run max_steps=100000\nconnector store role=kv_both\n"
                              "workers ranks=1 store_delay_min=1 store_delay_max=5 load_delay_min=1 load_delay_max=7 "
                              "pull_delay=3\nsegment s len=400\nsegment t len=60\n@0 arrive r prompt=s max_tokens=4\n"
                              "@0 arrive q prompt=t max_tokens=4\n",
                              "<budget>");
    // r recomputes its 400 prompt tokens and 4 output tokens in 7 chunks of 64, and 2 steps more
    CHECK(idle_budget(trace) == 32 + 2 * (5 + 7 + 3) + (7 + 2));
    CHECK(idle_budget(trace) < stall_budget(trace));  // every request's prefill counts there, not one
    // a store_delay fault lasts: its steps count; a pending lookup is waited out as a fault in effect
    trace.events.push_back(Event{.step = 0, .body = FaultEvent{.kind = FaultKind::store_delay, .rank = 0, .steps = 9}});
    trace.events.push_back(
        Event{.step = 0, .body = FaultEvent{.kind = FaultKind::lookup_pending, .steps = 30, .request_id = "r"}});
    CHECK(idle_budget(trace) == 32 + 2 * (5 + 7 + 3 + 9) + (7 + 2));
    trace.run.max_steps = 20;
    CHECK(idle_budget(trace) == stall_budget(trace));
    CHECK(stall_budget(trace) <= step_budget(trace));
}

TEST_CASE("the idle budget waits out a recomputation of one token a step", "[fuzz][budget]") {
    // 50 blocks of 4 hold 200 tokens: the two 192-token requests preempt the others, and each other,
    // and recompute one token a step (long_prefill_threshold=1), computing nothing new for longer
    // than a budget without the recomputation; the trace drains.
    const Trace trace = parse_trace(
        "kvsim-trace 1\nengine block_size=4 num_blocks=50 max_batched_tokens=1024 max_running=16 max_model_len=193 "
        "chunked_prefill=off prefix_caching=off long_prefill_threshold=1\nrun max_steps=3389\n"
        "workers ranks=4 store_delay_min=1 store_delay_max=1 load_delay_min=1 load_delay_max=1 pull_delay=1\n"
        "segment a len=96\nsegment b len=96\nsegment c len=16\n"
        "@0 arrive r0 prompt=a+b max_tokens=16\n@0 arrive r1 prompt=b+a max_tokens=16\n"
        "@0 arrive r2 prompt=a max_tokens=16\n@0 arrive r3 prompt=b max_tokens=16\n"
        "@0 arrive r4 prompt=c max_tokens=16\n@0 arrive r5 prompt=a max_tokens=16\n",
        "<recompute>");
    Trace capped = trace;
    capped.run.max_steps = step_budget(trace);
    const Variant variant = require_variant("v0.30.0");
    RunOptions options{.text_log = false, .stall_steps = stall_budget(trace), .idle_steps = idle_budget(trace)};
    REQUIRE(idle_budget(trace) < stall_budget(trace));
    const RunResult run = run_trace(capped, variant, options);
    CHECK(run.verdict == Verdict::pass);
    CHECK_FALSE(stopped_idle(run, options));
    // without the longest recomputation's 192 + 16 + 2 steps, the budget stops the thrash as a hang
    options.idle_steps -= 192 + 16 + 2;
    const RunResult short_budget = run_trace(capped, variant, options);
    CHECK(short_budget.verdict == Verdict::liveness);
    CHECK(stopped_idle(short_budget, options));
}

}  // namespace
}  // namespace kvsim::fuzz
