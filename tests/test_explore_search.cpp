// The swarm search under `kvsim explore` (fuzz/swarm/explore.h), called directly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>

#include "cli_runner.h"
#include "fuzz/swarm/explore.h"
#include "sim/trace/trace_printer.h"
#include "sim/variant/variant.h"

using namespace kvsim;

namespace {

ExploreConfig seed_54_consumer() {
    return {.first_seed = 54,
            .seeds = 1,
            .variant = require_variant("v0.29.0"),
            .role = RoleChoice::kv_consumer,
            .out_dir = "",
            .progress = 0,
            .print_trace = false};
}

}  // namespace

TEST_CASE("explore_seed generates the seed's trace, runs it and names its repro command", "[explore]") {
    const ExploreConfig config = seed_54_consumer();
    const ExploreSeed seed = explore_seed(54, config);
    REQUIRE_FALSE(seed.passed());
    REQUIRE(seed.failure_kind() == "crash:missing_current_block_table");
    REQUIRE(seed.repro == "kvsim explore --seed 54 --seeds 1 --variant v0.29.0 --role kv_consumer");
    REQUIRE_THAT(seed.header, Catch::StartsWith("# " + seed.repro + "\n# knobs: "));
    REQUIRE(seed.swarm_case.trace.run.seed == 54);
    REQUIRE_THAT(failure_line(seed), Catch::StartsWith("seed=54 NEW verdict=crash signature=crash:missing_current_block_table "));
    REQUIRE_THAT(failure_line(seed), Catch::EndsWith("| repro: " + seed.repro));
    // the same seed under the fixed release: the same trace apart from its run line, and it passes
    ExploreConfig fixed = config;
    fixed.variant = require_variant("v0.30.0");
    const ExploreSeed again = explore_seed(54, fixed);
    REQUIRE(again.passed());
    REQUIRE(again.swarm_case.trace.run.variant == "v0.30.0");
    Trace same = again.swarm_case.trace;
    same.run.variant = "v0.29.0";
    REQUIRE(same == seed.swarm_case.trace);
}

TEST_CASE("explore tallies failing seeds by signature and streams their lines", "[explore]") {
    ExploreConfig config = seed_54_consumer();
    config.first_seed = 1;
    config.seeds = 12;
    config.progress = 5;
    std::ostringstream out, progress;
    const ExploreSummary summary = explore(config, out, progress);
    REQUIRE(summary.passed + summary.failed == 12);
    REQUIRE(summary.failed > 0);
    REQUIRE_FALSE(summary.internal_error);
    REQUIRE(summary.unwritable.empty());
    std::uint64_t tallied = 0;
    for (const auto& [kind, tally] : summary.signatures) {
        tallied += static_cast<std::uint64_t>(tally.count);
        const ExploreSeed first = explore_seed(tally.first_seed, config);
        REQUIRE(first.failure_kind() == kind);
        REQUIRE_THAT(out.str(), Catch::Contains(failure_line(first) + "\n"));
    }
    REQUIRE(tallied == summary.failed);
    const std::string progress_lines = progress.str();
    REQUIRE_THAT(progress_lines, Catch::StartsWith("explore: 5/12 seeds, ") && Catch::Contains("\nexplore: 10/12 seeds, "));
    REQUIRE(std::count(progress_lines.begin(), progress_lines.end(), '\n') == 2);
    REQUIRE_THAT(render_explore_summary(summary, config),
                 Catch::StartsWith("explore: variant=v0.29.0 role=kv_consumer seeds=1..12 (12): "));
}

TEST_CASE("explore writes each failing trace under out_dir and stops when it cannot", "[explore]") {
    const auto dir = testing::scratch_dir() / "explore-search-out";
    std::filesystem::remove_all(dir);
    ExploreConfig config = seed_54_consumer();
    config.out_dir = dir.string();
    config.print_trace = true;
    std::ostringstream out, progress;
    const ExploreSummary summary = explore(config, out, progress);
    REQUIRE(summary.failed == 1);
    const auto path = dir / "crash_missing_current_block_table" / "seed-54.trace";
    const ExploreSeed seed = explore_seed(54, config);
    REQUIRE(testing::slurp(path) == seed.header + print_trace(seed.swarm_case.trace));
    REQUIRE_THAT(out.str(), Catch::StartsWith(seed.header + print_trace(seed.swarm_case.trace)) &&
                                Catch::EndsWith(" | trace: kvsim run " + path.string() + " --variant v0.29.0\n"));

    config.out_dir = testing::write_scratch("explore-out-is-a-file", "x");  // no directory can go under a file
    config.print_trace = false;
    std::ostringstream blocked_out;
    const ExploreSummary blocked = explore(config, blocked_out, progress);
    REQUIRE(blocked.unwritable == (std::filesystem::path(config.out_dir) / "crash_missing_current_block_table" /
                                   "seed-54.trace")
                                      .string());
    REQUIRE(blocked_out.str().empty());
}
