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
    const auto r = run_kvsim("explore --seeds 40 --seed 1 --variant v0.29.0 --progress 0 --any-failure");
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.out, Catch::Contains("\n    seed000_pending_load_save "));
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
                               Catch::EndsWith(" --seeds 1 --variant v0.29.0 --role any --any-failure"));
        const auto again = run_kvsim(args + " --progress 0");
        REQUIRE(again.exit_code == 1);
        REQUIRE(lines_of(again.out).front() == line);  // the same seed line, byte for byte
        const std::string seed_args = args.substr(0, args.find(" --variant "));
        const auto backport = run_kvsim(seed_args + " --variant v0.29.0+003 --progress 0 --any-failure");
        if (first_line_with(backport.out, "crash:missing_current_block_table").empty()) ++fixed_by_backport;
    }
    REQUIRE(crashes > 0);
    REQUIRE(fixed_by_backport > 0);
}

TEST_CASE("explore with --role kv_consumer and kv_both finds the seed 000 crash too", "[explore]") {
    for (const std::string role : {"kv_consumer", "kv_both"}) {
        const auto r = run_kvsim("explore --seeds 40 --variant v0.29.0 --progress 0 --any-failure --role " + role);
        INFO(role << "\n" << r.out);
        REQUIRE(r.exit_code == 1);
        const std::string line = first_line_with(r.out, "crash:missing_current_block_table");
        REQUIRE_FALSE(line.empty());
        REQUIRE_THAT(line, Catch::EndsWith("--role " + role + " --any-failure"));
        // The fixed release does not crash on that seed.
        const std::string args = repro_args(line);
        const auto fixed = run_kvsim(args.substr(0, args.find(" --variant ")) + " --variant v0.30.0 --role " + role +
                                     " --progress 0 --any-failure");
        REQUIRE(first_line_with(fixed.out, "crash:missing_current_block_table").empty());
    }
}

TEST_CASE("explore --out writes the failing trace - kvsim run replays it with the same signature", "[explore]") {
    const auto dir = scratch_dir() / "explore-out";
    std::filesystem::remove_all(dir);
    const auto r = run_kvsim("explore --seed 54 --seeds 1 --variant v0.29.0 --role kv_consumer --progress 0 "
                             "--any-failure --out " + dir.string());
    REQUIRE(r.exit_code == 1);
    const auto path = dir / "crash_missing_current_block_table~seed000_pending_load_save" / "seed-54.trace";
    REQUIRE(std::filesystem::exists(path));
    REQUIRE_THAT(r.out, Catch::Contains("| trace: kvsim run " + path.string() + " --variant v0.29.0"));
    const std::string text = slurp(path);
    const std::string header =
        "# kvsim explore --seed 54 --seeds 1 --variant v0.29.0 --role kv_consumer --any-failure\n# knobs: ";
    REQUIRE_THAT(text, Catch::StartsWith(header));
    REQUIRE_THAT(text, Catch::Contains("\nrun seed=54 "));

    const auto run = run_kvsim("run " + path.string() + " --variant v0.29.0 --quiet");
    REQUIRE(run.exit_code == 2);
    REQUIRE_THAT(run.out, Catch::Contains("signature=crash:missing_current_block_table"));
    REQUIRE(run_kvsim("run " + path.string() + " --variant v0.29.0+003 --quiet").exit_code == 0);
}

TEST_CASE("explore prints progress on stderr - a sorted summary - the same bytes twice", "[explore]") {
    const std::string cmd = "explore --seeds 30 --variant v0.29.0 --progress 10 --any-failure";
    const auto a = run_kvsim(cmd);
    const auto b = run_kvsim(cmd);
    REQUIRE(a.out == b.out);
    REQUIRE(a.err == b.err);
    REQUIRE(a.exit_code == b.exit_code);
    REQUIRE_THAT(a.err, Catch::Contains("explore: 10/30 seeds, ") && Catch::Contains("explore: 20/30 seeds, ") &&
                            Catch::Contains(" known"));
    REQUIRE_THAT(a.out, Catch::Contains("explore: variant=v0.29.0 role=any seeds=1..30 (30): "));
    // Summary rows: four-space indent under their heading, sorted by registry entry.
    std::vector<std::string> rows;
    bool in_summary = false;
    for (const auto& line : lines_of(a.out)) {
        if (line.rfind("explore: ", 0) == 0) in_summary = true;
        else if (in_summary && line.rfind("    ", 0) == 0) rows.push_back(line.substr(4, line.find(' ', 4) - 4));
    }
    REQUIRE_FALSE(rows.empty());
    REQUIRE(std::is_sorted(rows.begin(), rows.end()));
}

TEST_CASE("explore exit codes: 0 all pass or only known - 1 a new finding (or any with --any-failure) - 64 usage",
          "[explore]") {
    const auto pass = run_kvsim("explore --seed 7 --seeds 3 --variant v0.30.0 --progress 0");
    REQUIRE(pass.exit_code == 0);
    REQUIRE_THAT(pass.out, Catch::Contains(": 3 passed, 0 new (0 signatures), 0 known (0 causes)"));
    // the summary line, then one line per scheduling mode drawn (seeds 7..9 draw both)
    const auto pass_lines = lines_of(pass.out);
    REQUIRE(pass_lines.size() == 3);
    CHECK(pass_lines[1].starts_with("  async_scheduling=off: "));
    CHECK(pass_lines[2].starts_with("  async_scheduling=on: "));

    // seed 54 under v0.29.0 is seed 000's crash: known, so it prints no seed line and exits 0
    const auto known = run_kvsim("explore --seed 54 --seeds 1 --variant v0.29.0 --role kv_consumer --progress 0");
    REQUIRE(known.exit_code == 0);
    REQUIRE_THAT(known.out, Catch::StartsWith("explore: ") && Catch::Contains(" 0 new (0 signatures), 1 known (1 causes)") &&
                                Catch::Contains("known (by cause set, in the order removed):\n    seed000_pending_load_save "));
    REQUIRE(run_kvsim("explore --seed 54 --seeds 1 --variant v0.29.0 --role kv_consumer --any-failure").exit_code == 1);
    // with a registry that does not list it, the same seed is NEW
    const std::string empty = write_scratch(
        "one-entry.registry",
        "finding other\n class upstream\n variants *\n signature crash:recving_not_finished\n upstream not_reported\n"
        " witness corpus/x.trace v0.30.0\n fix describe nothing\n why a test\n");
    const auto fresh =
        run_kvsim("explore --seed 54 --seeds 1 --variant v0.29.0 --role kv_consumer --progress 0 --registry " + empty);
    REQUIRE(fresh.exit_code == 1);
    REQUIRE_THAT(fresh.out, Catch::StartsWith("seed=54 NEW verdict=crash signature=crash:missing_current_block_table "));
    const std::string bad = write_scratch("bad.registry", "finding x\n  class upstream\n  colour blue\n");
    const auto broken = run_kvsim("explore --seeds 1 --registry " + bad);
    REQUIRE(broken.exit_code == 65);
    REQUIRE_THAT(broken.err, Catch::Contains(bad + ":3: colour: unknown field 'colour'"));

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
                            Catch::Contains("\nrun seed=2 max_steps=870 variant=v0.30.0\n"));
}
