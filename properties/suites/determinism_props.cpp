// Determinism (tests/README.md, Property tests): the same trace replays byte-identically. Two replays inside run_trace
// (--check-determinism) agree, and so does a fresh replay of the printed and re-parsed trace
// (what a person does with the counterexample file), digest, log and signature alike.
#include "properties/suites/family_macros.h"
#include "properties/suites/suite_common.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"

namespace kvsim::propgen {
namespace {

constexpr int kCases = 300;

void determinism(const std::string& variant_name) {
    const Variant variant = require_variant(variant_name);
    require_property("determinism under " + variant_name, kCases, [&] {
        const Trace trace = *gen_trace();
        RunOptions twice;
        twice.check_determinism = true;
        const RunResult first = run_trace(trace, variant, twice);
        if (first.verdict == Verdict::nondeterminism)
            RC_FAIL(failure_report(trace, variant_name, first, "two replays of the same trace disagree"));
        const Trace reparsed = parse_trace(print_trace(trace), "cex.trace");
        const RunResult replay = run_trace(reparsed, variant);
        if (replay.digest != first.digest || replay.log != first.log || replay.signature != first.signature)
            RC_FAIL(failure_report(trace, variant_name, replay,
                                   fmt::format("the printed trace replays differently: digest {:016x} vs {:016x}",
                                               replay.digest, first.digest)));
    });
}

KVSIM_CLEAN_PRESET_TESTS("determinism", "[property][determinism]", determinism)

}  // namespace
}  // namespace kvsim::propgen
