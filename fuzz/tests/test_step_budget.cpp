// The trace target's step and hang budgets (fuzz/mutator/trace_mutator.h, step_budget and
// stall_budget) and its sweep period: capping a corpus trace's max_steps at its budget, stopping it
// after its hang budget without progress and sweeping every budget::kSweepPeriod steps changes no
// verdict or signature under any preset (nor the digest, but
// of a liveness run, whose hang is met sooner), nor those of swarm traces inside the fuzzing
// envelope; a roomy max_steps is cut to twice step_bound; a livelock stops long before its limit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/mutator/trace_mutator.h"
#include "fuzz/swarm/swarm.h"
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
        for (const std::string& preset : presets) {
            const Variant variant = require_variant(preset);
            const RunResult full = run_trace(trace, variant);
            const RunResult budgeted = run_trace(capped, variant);
            const RunResult stalled = run_trace(
                capped, variant, RunOptions{.sweep_period = budget::kSweepPeriod, .stall_steps = stall_budget(trace)});
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
    Trace trace = parse_trace("kvsim-trace 1\nengine block_size=4 num_blocks=16\nrun max_steps=100000\n"
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
}

}  // namespace
}  // namespace kvsim::fuzz
