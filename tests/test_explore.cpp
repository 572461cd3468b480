// kvsim explore: swarm search over seeds, one line per failing seed with a reproduction
// command that regenerates exactly that trace, a summary per signature, exit codes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"

using namespace kvsim::testing;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// The first failing-seed line with this signature, or "".
std::string first_line_with(const std::string& out, const std::string& signature) {
    for (const auto& line : lines_of(out))
        if (line.rfind("seed=", 0) == 0 && line.find(" signature=" + signature + " ") != std::string::npos) return line;
    return "";
}

// "kvsim explore ..." after "| repro: ", up to the next " | " (or the end).
std::string repro_args(const std::string& line) {
    const std::string marker = "| repro: kvsim ";
    const auto start = line.find(marker);
    if (start == std::string::npos) return "";
    const auto from = start + marker.size();
    const auto end = line.find(" | ", from);
    return line.substr(from, end == std::string::npos ? std::string::npos : end - from);
}

}  // namespace

TEST_CASE("explore finds the seed 000 crash under v0.29.0 and its repro command reproduces it", "[explore]") {
    const auto r = run_kvsim("explore --seeds 40 --seed 1 --variant v0.29.0 --progress 0");
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.out, Catch::Contains("\n  crash:missing_current_block_table "));
    int crashes = 0;
    int fixed_by_backport = 0;  // seed 000's mechanism: the #54643 backport (+003) removes it
    for (const auto& line : lines_of(r.out)) {
        if (line.rfind("seed=", 0) != 0) continue;
        if (line.find(" signature=crash:missing_current_block_table ") == std::string::npos) continue;
        ++crashes;
        INFO(line);
        REQUIRE_THAT(line, Catch::Contains(" verdict=crash ") && Catch::Contains(" steps=") &&
                               Catch::Contains("AssertionError: Missing current block table for store request"));
        const std::string args = repro_args(line);
        REQUIRE_THAT(args, Catch::StartsWith("explore --seed ") &&
                               Catch::EndsWith(" --seeds 1 --variant v0.29.0 --role any"));
        const auto again = run_kvsim(args + " --progress 0");
        REQUIRE(again.exit_code == 1);
        REQUIRE(lines_of(again.out).front() == line);  // the same seed line, byte for byte
        const std::string seed_args = args.substr(0, args.find(" --variant "));
        const auto backport = run_kvsim(seed_args + " --variant v0.29.0+003 --progress 0");
        if (first_line_with(backport.out, "crash:missing_current_block_table").empty()) ++fixed_by_backport;
    }
    REQUIRE(crashes > 0);
    REQUIRE(fixed_by_backport > 0);
}

TEST_CASE("explore with --role kv_consumer and kv_both finds the seed 000 crash too", "[explore]") {
    for (const std::string role : {"kv_consumer", "kv_both"}) {
        const auto r = run_kvsim("explore --seeds 40 --variant v0.29.0 --progress 0 --role " + role);
        INFO(role << "\n" << r.out);
        REQUIRE(r.exit_code == 1);
        const std::string line = first_line_with(r.out, "crash:missing_current_block_table");
        REQUIRE_FALSE(line.empty());
        REQUIRE_THAT(line, Catch::EndsWith("--role " + role));
        // The fixed release does not crash on that seed.
        const std::string args = repro_args(line);
        const auto fixed = run_kvsim(args.substr(0, args.find(" --variant ")) + " --variant v0.30.0 --role " + role +
                                     " --progress 0");
        REQUIRE(first_line_with(fixed.out, "crash:missing_current_block_table").empty());
    }
}

TEST_CASE("explore --out writes the failing trace - kvsim run replays it with the same signature", "[explore]") {
    const auto dir = scratch_dir() / "explore-out";
    std::filesystem::remove_all(dir);
    const auto r = run_kvsim("explore --seed 9 --seeds 1 --variant v0.29.0 --role kv_consumer --progress 0 --out " +
                             dir.string());
    REQUIRE(r.exit_code == 1);
    const auto path = dir / "crash_missing_current_block_table" / "seed-9.trace";
    REQUIRE(std::filesystem::exists(path));
    REQUIRE_THAT(r.out, Catch::Contains("| trace: kvsim run " + path.string() + " --variant v0.29.0"));
    const std::string text = slurp(path);
    const std::string header = "# kvsim explore --seed 9 --seeds 1 --variant v0.29.0 --role kv_consumer\n# knobs: ";
    REQUIRE_THAT(text, Catch::StartsWith(header));
    REQUIRE_THAT(text, Catch::Contains("\nrun seed=9 "));

    const auto run = run_kvsim("run " + path.string() + " --variant v0.29.0 --quiet");
    REQUIRE(run.exit_code == 2);
    REQUIRE_THAT(run.out, Catch::Contains("signature=crash:missing_current_block_table"));
    REQUIRE(run_kvsim("run " + path.string() + " --variant v0.29.0+003 --quiet").exit_code == 0);
}

TEST_CASE("explore prints progress on stderr - a sorted summary - the same bytes twice", "[explore]") {
    const std::string cmd = "explore --seeds 30 --variant v0.29.0 --progress 10";
    const auto a = run_kvsim(cmd);
    const auto b = run_kvsim(cmd);
    REQUIRE(a.out == b.out);
    REQUIRE(a.err == b.err);
    REQUIRE(a.exit_code == b.exit_code);
    REQUIRE_THAT(a.err, Catch::Contains("explore: 10/30 seeds, ") && Catch::Contains("explore: 20/30 seeds, ") &&
                            Catch::Contains(" signatures"));
    REQUIRE_THAT(a.out, Catch::Contains("explore: variant=v0.29.0 role=any seeds=1..30 (30): "));
    // Summary rows: two-space indent, sorted by signature.
    std::vector<std::string> rows;
    bool in_summary = false;
    for (const auto& line : lines_of(a.out)) {
        if (line.rfind("explore: ", 0) == 0) in_summary = true;
        else if (in_summary) rows.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
    REQUIRE_FALSE(rows.empty());
    REQUIRE(std::is_sorted(rows.begin(), rows.end()));
}

TEST_CASE("explore exit codes: 0 all pass - 1 findings - 64 usage", "[explore]") {
    const auto pass = run_kvsim("explore --seeds 3 --variant v0.30.0 --progress 0");
    REQUIRE(pass.exit_code == 0);
    REQUIRE_THAT(pass.out, Catch::Contains(": 3 passed, 0 failed, 0 signatures"));
    REQUIRE(lines_of(pass.out).size() == 1);

    REQUIRE(run_kvsim("explore --seed 9 --seeds 1 --variant v0.29.0").exit_code == 1);

    const auto bad_variant = run_kvsim("explore --seeds 1 --variant v9.9.9");
    REQUIRE(bad_variant.exit_code == 64);
    REQUIRE_THAT(bad_variant.err, Catch::Contains("--variant"));
    const auto bad_role = run_kvsim("explore --seeds 1 --role kv_sometimes");
    REQUIRE(bad_role.exit_code == 64);
    REQUIRE_THAT(bad_role.err, Catch::Contains("--role: unknown role 'kv_sometimes'"));
    REQUIRE(run_kvsim("explore").exit_code == 64);            // --seeds is required
    REQUIRE(run_kvsim("explore --seeds 0").exit_code == 64);  // at least one seed
    REQUIRE(run_kvsim("explore --seeds 2 --seed 18446744073709551615").exit_code == 64);  // overflow
}

TEST_CASE("explore --print-trace prints the generated trace with its header", "[explore]") {
    const auto r = run_kvsim("explore --seed 2 --seeds 1 --print-trace --progress 0");
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out,
                 Catch::StartsWith("# kvsim explore --seed 2 --seeds 1 --variant v0.30.0 --role any\n# knobs: "));
    REQUIRE_THAT(r.out, Catch::Contains("\nkvsim-trace 1\n") &&
                            Catch::Contains("\nrun seed=2 max_steps=480 variant=v0.30.0\n"));
}
