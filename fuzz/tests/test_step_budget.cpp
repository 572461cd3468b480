// The trace target's step budget (fuzz/mutator/trace_mutator.h, step_budget): capping a corpus
// trace's max_steps at its budget changes no verdict or signature under any preset (nor the digest,
// but of a liveness run, whose hang is met sooner), and a
// roomy max_steps is cut to twice step_bound.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/mutator/trace_mutator.h"
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
            INFO(path << " under " << preset);
            CHECK(budgeted.verdict == full.verdict);
            CHECK(budgeted.signature == full.signature);
            if (full.verdict != Verdict::liveness) CHECK(budgeted.digest == full.digest);  // a hang is met sooner
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

}  // namespace
}  // namespace kvsim::fuzz
