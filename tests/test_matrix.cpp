#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cli_runner.h"
#include "properties/findings/classify.h"
#include "properties/harness/matrix.h"
#include "sim/trace/trace_parser.h"

using namespace kvsim::testing;

namespace {
const std::string kUpstream = std::string(KVSIM_SOURCE_DIR) + "/corpus/upstream/";
}

// Seed 000's reproduction table: rows v0.29.0, +003, +skip_save_is_consumer, v0.30.0; columns the
// upstream #54643 regression scenario, the kv_consumer repro and the kv_both repro.
TEST_CASE("kvsim matrix reproduces seed 000's table exactly", "[matrix][seed000]") {
    const auto r = run_kvsim("matrix --variants v0.29.0,v0.29.0+003,v0.29.0+skip_save_is_consumer,v0.30.0 " +
                             kUpstream + "pr54643_pending_load_for_non_chosen_connector.trace " + kUpstream +
                             "seed000_multiconnector_consumer.trace " + kUpstream + "seed000_multiconnector_both.trace");
    REQUIRE(r.exit_code == 0);
    REQUIRE(r.err.empty());
    const std::string expected =
        "| variant                       | pr54643_pending_load_for_non_chosen_connector | seed000_multiconnector_consumer     | seed000_multiconnector_both         |\n"
        "|-------------------------------|-----------------------------------------------|-------------------------------------|-------------------------------------|\n"
        "| v0.29.0                       | crash (missing_current_block_table)           | crash (missing_current_block_table) | crash (missing_current_block_table) |\n"
        "| v0.29.0+003                   | pass                                          | pass                                | pass                                |\n"
        "| v0.29.0+skip_save_is_consumer | crash (missing_current_block_table)           | pass                                | crash (missing_current_block_table) |\n"
        "| v0.30.0                       | pass                                          | pass                                | pass                                |\n"
        "expectations: 12 met, 0 unmet, 0 cells without an expect line\n";
    REQUIRE(r.out == expected);
}

TEST_CASE("kvsim matrix reproduces seed 001: v0.29.0 crashes and #55066 drops the stale save", "[matrix][seed001]") {
    const auto r = run_kvsim("matrix --variants v0.29.0,v0.29.0+pr55066,v0.30.0 " + kUpstream +
                             "seed001_decode_save_without_block_table.trace");
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out, Catch::Contains("| v0.29.0         | crash (missing_current_block_table)     |") &&
                            Catch::Contains("| v0.29.0+pr55066 | pass                                    |"));
}

TEST_CASE("kvsim matrix --async-scheduling runs every trace under one mode: seed 001 differs, seed 000 does not",
          "[matrix][seed001][async]") {
    const std::string seed001 = "--variants v0.29.0,v0.29.0+pr55066,v0.30.0 " + kUpstream +
                                "seed001_decode_save_without_block_table.trace";
    const auto sync = run_kvsim("matrix --async-scheduling off " + seed001);
    CHECK(sync.exit_code == 0);
    CHECK_THAT(sync.out, Catch::Contains("| v0.29.0         | crash (missing_current_block_table)     |"));
    // under async scheduling the block-filling save comes a step later, with r1's next block: no crash
    const auto async = run_kvsim("matrix --async-scheduling on " + seed001);
    CHECK(async.exit_code == 6);  // the expect line states the synchronous crash
    CHECK_THAT(async.out, Catch::Contains("| v0.29.0         | pass !! UNMET(expected crash crash:missing_current_block_table "
                                          "causes=seed001_eager_snapshot_stale_save, got causes=) |"));
    const std::string seed000 = "--variants v0.29.0,v0.29.0+003,v0.30.0 " + kUpstream + "seed000_multiconnector_both.trace";
    const auto off000 = run_kvsim("matrix --async-scheduling off " + seed000);
    const auto on000 = run_kvsim("matrix --async-scheduling on " + seed000);
    CHECK(off000.exit_code == 0);
    CHECK(on000.out == off000.out);
    CHECK(run_kvsim("matrix --async-scheduling sometimes " + seed000).exit_code == 64);
}

TEST_CASE("kvsim run quotes the upstream assertion message on a crash", "[matrix][seed000]") {
    const auto r = run_kvsim("run " + kUpstream + "seed000_multiconnector_consumer.trace --variant v0.29.0");
    REQUIRE(r.exit_code == 2);
    REQUIRE_THAT(r.out, Catch::Contains("AssertionError: Missing current block table for store request r1"));
    REQUIRE_THAT(r.out, Catch::Contains("signature=crash:missing_current_block_table"));
}

TEST_CASE("the #55066 guard warns once naming the request and saves again after the rollback", "[matrix][seed001]") {
    const auto r = run_kvsim("run " + kUpstream + "seed001_decode_save_without_block_table.trace --variant v0.29.0+pr55066");
    REQUIRE(r.exit_code == 0);
    // one warning for r1, then the next step's save covers [32, 48) again with a current table
    const auto warn = r.out.find("warn");
    REQUIRE(warn != std::string::npos);
    REQUIRE(r.out.find("warn", warn + 1) == std::string::npos);
    REQUIRE_THAT(r.out.substr(warn, r.out.find('\n', warn) - warn), Catch::Contains("r1"));
    REQUIRE_THAT(r.out.substr(warn), Catch::Contains("store save r1 tokens=[32,48)"));
}

TEST_CASE("kvsim matrix fails on an unmet expect line", "[matrix]") {
    const auto path = write_scratch("unmet.trace",
                                    "kvsim-trace 1\nengine block_size=4 num_blocks=16 max_model_len=60\n"
                                    "segment a len=6\nexpect v0.30.0 crash\nexpect v0.29.0 pass\n"
                                    "@0 arrive r1 prompt=a max_tokens=2\n");
    const auto r = run_kvsim("matrix " + path);
    REQUIRE(r.exit_code == 6);
    REQUIRE_THAT(r.out, Catch::Contains("pass !! UNMET(expected crash)") &&
                            Catch::Contains("expectations: 1 met, 1 unmet"));
}

// The library under `kvsim matrix` (properties/harness/matrix.h), called directly.

namespace {

kvsim::MatrixTrace upstream_trace(const std::string& stem) {
    return {.name = stem, .trace = kvsim::parse_trace_file(kUpstream + stem + ".trace")};
}

}  // namespace

TEST_CASE("run_matrix runs every trace under every variant and judges each cell", "[matrix]") {
    const std::vector<kvsim::MatrixTrace> traces = {upstream_trace("seed000_multiconnector_consumer"),
                                                    upstream_trace("seed000_multiconnector_both")};
    const auto causes = [](const kvsim::Trace& t, const kvsim::Variant& v, const kvsim::RunResult& r) {
        return kvsim::expectation_causes(kvsim::classify(kvsim::builtin_registry(), t, v, r));
    };
    const auto matrix = kvsim::run_matrix(
        traces, {kvsim::require_variant("v0.29.0+skip_save_is_consumer"), kvsim::require_variant("v0.30.0")}, causes);
    REQUIRE(matrix.columns == std::vector<std::string>{"seed000_multiconnector_consumer", "seed000_multiconnector_both"});
    REQUIRE(matrix.rows.size() == 2);
    const auto& skip_save = matrix.rows[0];
    REQUIRE(skip_save.variant == "v0.29.0+skip_save_is_consumer");
    REQUIRE(skip_save.cells[0].result.verdict == kvsim::Verdict::pass);
    REQUIRE(skip_save.cells[1].result.verdict == kvsim::Verdict::crash);
    REQUIRE(skip_save.cells[1].result.signature == "crash:missing_current_block_table");
    REQUIRE(skip_save.cells[1].text == "crash (missing_current_block_table)");
    for (const auto& row : matrix.rows)
        for (const auto& cell : row.cells) REQUIRE(cell.expectation.status == kvsim::ExpectationStatus::met);
    REQUIRE(matrix.met == 4);
    REQUIRE(matrix.unmet == 0);
    REQUIRE(matrix.unchecked == 0);
    // without a classifier an expect line that names causes cannot be met
    const auto unclassified = kvsim::run_matrix(traces, {kvsim::require_variant("v0.29.0+skip_save_is_consumer")});
    REQUIRE(unclassified.rows[0].cells[1].expectation.status == kvsim::ExpectationStatus::unmet);
    REQUIRE_THAT(unclassified.rows[0].cells[1].text,
                 Catch::EndsWith("causes=seed000_pending_load_save, got causes=(not classified))"));
}

TEST_CASE("run_matrix marks an unmet expect line and a cell without one", "[matrix]") {
    const kvsim::Trace trace = kvsim::parse_trace("kvsim-trace 1\nengine block_size=4 num_blocks=16 max_model_len=60\n"
                                                  "segment a len=6\nexpect v0.30.0 crash\n"
                                                  "@0 arrive r1 prompt=a max_tokens=2\n",
                                                  "unmet.trace");
    const std::vector<kvsim::MatrixTrace> traces = {{.name = "unmet", .trace = trace}};
    REQUIRE(kvsim::variants_in_expectations(traces) == std::vector<std::string>{"v0.30.0"});
    const auto matrix =
        kvsim::run_matrix(traces, {kvsim::require_variant("v0.30.0"), kvsim::require_variant("v0.29.0")});
    const auto& unmet = matrix.rows[0].cells[0];
    REQUIRE(unmet.expectation.status == kvsim::ExpectationStatus::unmet);
    REQUIRE(unmet.expectation.expected->verdict == kvsim::Verdict::crash);
    REQUIRE(unmet.text == "pass !! UNMET(expected crash)");
    REQUIRE(matrix.rows[1].cells[0].expectation.status == kvsim::ExpectationStatus::none);
    REQUIRE(matrix.unmet == 1);
    REQUIRE(matrix.unchecked == 1);
    REQUIRE(kvsim::render_matrix(matrix) ==
            "| variant | unmet                         |\n"
            "|---------|-------------------------------|\n"
            "| v0.30.0 | pass !! UNMET(expected crash) |\n"
            "| v0.29.0 | pass                          |\n"
            "expectations: 0 met, 1 unmet, 1 cells without an expect line\n");
}

TEST_CASE("variants_in_expectations lists each variant once in order of first appearance", "[matrix]") {
    const std::vector<kvsim::MatrixTrace> traces = {upstream_trace("seed001_decode_save_without_block_table"),
                                                    upstream_trace("seed000_multiconnector_consumer")};
    REQUIRE(kvsim::variants_in_expectations(traces) ==
            std::vector<std::string>{"v0.29.0", "v0.29.0+003", "v0.29.0+pr55066", "v0.30.0", "v0.30.0+all_fixes",
                                     "v0.27.1", "v0.29.0+skip_save_is_consumer"});
}
