// The work under `kvsim minimize` (fuzz/minimize/minimize_finding.h), called directly.
#include <catch2/catch.hpp>

#include <string>

#include "fuzz/minimize/minimize_finding.h"
#include "properties/findings/classify.h"
#include "padded_seed000.h"
#include "sim/trace/trace_parser.h"
#include "sim/variant/variant.h"

using namespace kvsim;

namespace {

constexpr const char* kSeed000Signature = "crash:missing_current_block_table";

FindingToMinimize padded_seed000(const std::string& variant, const std::string& signature = "") {
    return {.trace = parse_trace(testing::padded_seed000_trace("v0.29.0"), "padded.trace"),
            .source = "padded.trace",
            .variant = require_variant(variant),
            .signature = signature,
            .max_runs = FindingToMinimize{}.max_runs};
}

}  // namespace

TEST_CASE("minimize_finding keeps the trace's own signature and gives an expect line for it", "[minimize]") {
    const FindingToMinimize finding = padded_seed000("v0.29.0");
    const MinimizedFinding minimized = minimize_finding(finding);
    REQUIRE(minimized.outcome == MinimizeOutcome::kept);
    REQUIRE(minimized.signature == kSeed000Signature);
    REQUIRE(minimized.stats.events_after == 1);
    REQUIRE(minimized.minimal_result.signature == kSeed000Signature);
    REQUIRE(minimized.minimal.run.variant == "v0.29.0");
    REQUIRE(minimized.minimal.expectations ==
            std::vector<Expectation>{{.variant = "v0.29.0", .verdict = Verdict::crash, .signature = kSeed000Signature, .causes = {}}});

    const std::string text = minimized_trace_text(minimized, finding);
    REQUIRE_THAT(text, Catch::StartsWith("kvsim-trace 1\n# Minimised by kvsim minimize from padded.trace under v0.29.0, "
                                         "keeping signature=crash:missing_current_block_table\n"));
    REQUIRE(parse_trace(text, "minimal.trace") == minimized.minimal);  // the comments change nothing
    REQUIRE_THAT(minimize_summary_line(minimized, finding),
                 Catch::StartsWith("kvsim minimize: signature=crash:missing_current_block_table (not classified) kept under v0.29.0: "
                                   "9 -> 1 events, "));
}

TEST_CASE("minimize_finding says why it kept nothing", "[minimize]") {
    const MinimizedFinding passes = minimize_finding(padded_seed000("v0.30.0"));
    REQUIRE(passes.outcome == MinimizeOutcome::passes);
    REQUIRE(passes.original.verdict == Verdict::pass);

    const MinimizedFinding other = minimize_finding(padded_seed000("v0.29.0", "crash:something_else"));
    REQUIRE(other.outcome == MinimizeOutcome::not_reproduced);
    REQUIRE(other.signature == "crash:something_else");
    REQUIRE(other.original.signature == kSeed000Signature);
}

TEST_CASE("minimize_finding with the registry keeps the registry entry the trace is", "[minimize][registry]") {
    FindingToMinimize finding = padded_seed000("v0.29.0");
    finding.registry = &builtin_registry();
    const MinimizedFinding minimized = minimize_finding(finding);
    REQUIRE(minimized.outcome == MinimizeOutcome::kept);
    REQUIRE(minimized.classification.cause_set() == "seed000_pending_load_save");
    const Classification again = classify(builtin_registry(), minimized.minimal, finding.variant, minimized.minimal_result);
    REQUIRE(again.known());
    REQUIRE(again.cause_set() == "seed000_pending_load_save");
    const std::string text = minimized_trace_text(minimized, finding);
    REQUIRE_THAT(text, Catch::Contains("# registry: known, causes seed000_pending_load_save"));
    REQUIRE_THAT(text, Catch::Contains("causes=seed000_pending_load_save"));  // the expect line states them
}
