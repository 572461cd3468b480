// Incremental checkers (bench/README.md, Performance): after each step a checker may judge only what the
// step touched (Checker::check_step) and sweep everything every K steps and at the end. The full
// sweep (Checker::check) is the reference: on generated traces, under every preset (clean and
// known broken), a step check reports either nothing or exactly what the sweep reports, and a run
// that sweeps only at the end gives the same verdict, signature and digest as one that sweeps
// every step.
#include "properties/suites/step_check_agreement.h"
#include "properties/suites/suite_common.h"
#include "sim/trace/trace_printer.h"
#include "sim/variant/variant.h"

namespace kvsim::propgen {
namespace {

constexpr int kCases = 150;

void incremental_agrees(const std::string& variant_name) {
    const Variant variant = require_variant(variant_name);
    require_property("incremental checkers agree with the full sweep under " + variant_name, kCases, [&] {
        const Trace trace = *gen_trace();
        if (const std::string differ = step_checks_disagree(trace, variant); !differ.empty())
            RC_FAIL(differ + "\n" + print_trace(trace));
        const RunResult every_step = run_trace(trace, variant, RunOptions{.sweep_period = 1});
        const RunResult at_end = run_trace(trace, variant, RunOptions{.sweep_period = 1'000'000});
        if (at_end.digest != every_step.digest || at_end.signature != every_step.signature ||
            at_end.verdict != every_step.verdict)
            RC_FAIL(failure_report(trace, variant_name, at_end,
                                   fmt::format("sweeping only at the end gives {} ({}), every step {} ({})",
                                               to_string(at_end.verdict), at_end.signature,
                                               to_string(every_step.verdict), every_step.signature)));
    });
}

TEST_CASE("incremental checkers agree with the full sweep under every preset", "[property][incremental]") {
    std::vector<std::string> presets = presets_with(PresetTag::clean);
    for (const std::string& broken : presets_with(PresetTag::known_broken)) presets.push_back(broken);
    REQUIRE(presets.size() >= 3);
    for (const std::string& preset : presets) DYNAMIC_SECTION(preset) { incremental_agrees(preset); }
}

}  // namespace
}  // namespace kvsim::propgen
