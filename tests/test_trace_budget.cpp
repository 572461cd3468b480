// The trace budget (sim/trace/trace_budget.h): each row refuses, with one input error on the line where
// its sum passes the limit, a trace that every per-line limit admits; and a run that still runs out of
// memory ends with one line and exit 71, not an abort.
#include <catch2/catch.hpp>

#include "sim/trace/trace_budget.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_schema.h"
#include "tests/cli_runner.h"
#include "tests/trace_error.h"

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace kvsim {
namespace {

using testing::error_of;

// An engine whose pool holds one request of the largest max_model_len (rule kv_cache_holds_max_model_len).
const std::string kBigEngine = "kvsim-trace 1\nengine block_size=16 num_blocks=65537 max_model_len=1048576\n";

// `count` arrivals at step 0, each of `prompt` and `max_tokens`, after kBigEngine and `segments`.
std::string arrivals(const std::string& segments, int count, std::string_view prompt, int max_tokens) {
    std::string text = kBigEngine + segments;
    for (int i = 1; i <= count; ++i) text += fmt::format("@0 arrive r{} prompt={} max_tokens={}\n", i, prompt, max_tokens);
    return text;
}

// a+a+...: 15 x 65536 = 983040 tokens, below max_model_len - 1.
std::string fifteen_a() {
    std::string prompt = "a";
    for (int i = 1; i < 15; ++i) prompt += "+a";
    return prompt;
}

TEST_CASE("budget: segment tokens past the budget fail on the segment line that passes it", "[trace][budget]") {
    std::string text = kBigEngine;
    for (int i = 1; i <= 257; ++i) text += fmt::format("segment s{} len=65536\n", i);  // 256 x 65536 = 2^24
    CHECK(error_of(text) ==
          "t.trace:259: segment.len: tokens of all segment lines reach 16842752 here, above the budget "
          "segment_tokens = 16777216 (each segment's tokens are derived once and held for the whole run)");
}

TEST_CASE("budget: prompt tokens summed over arrivals fail on the arrival that passes the budget",
          "[trace][budget]") {
    const std::string segment = "segment a len=65536\n";
    // 68 x 983040 = 66846720 <= 2^26; the 69th arrival (line 72) reaches 67829760
    CHECK(error_of(arrivals(segment, 68, fifteen_a(), 1)).empty());
    CHECK(error_of(arrivals(segment, 69, fifteen_a(), 1)) ==
          "t.trace:72: event.prompt: prompt tokens summed over arrive lines reach 67829760 here, above the budget "
          "prompt_tokens = 67108864 (each arrival copies its prompt into its request, which holds it until it is "
          "freed)");
}

TEST_CASE("budget: output tokens summed over arrivals fail on the arrival that passes the budget",
          "[trace][budget]") {
    const std::string segment = "segment a len=8\n";
    CHECK(error_of(arrivals(segment, 64, "a", 1048000)).empty());
    CHECK(error_of(arrivals(segment, 65, "a", 1048000)) ==
          "t.trace:68: event.max_tokens: max_tokens summed over arrive lines reach 68120000 here, above the budget "
          "output_tokens = 67108864 (each output token is one request-step of scheduling, checking and event log)");
}

TEST_CASE("budget: blocks times steps past the budget fail on the run line", "[trace][budget]") {
    const auto trace = [](int num_blocks) {
        return fmt::format("kvsim-trace 1\nengine block_size=16 num_blocks={} max_model_len=1008\n"
                           "run max_steps=1000000\n",
                           num_blocks);
    };
    CHECK(error_of(trace(10000)).empty());  // exactly 10^10
    CHECK(error_of(trace(10001)) ==
          "t.trace:3: run.max_steps: engine.num_blocks 10001 x run.max_steps 1000000 is above the budget "
          "block_steps = 10000000000 (after every step the checkers judge every block a request holds)");
}

TEST_CASE("budget: a trace built in memory is held to the same budget", "[trace][budget]") {
    Trace t = parse_trace(kBigEngine + "segment a len=8\n@0 arrive r1 prompt=a max_tokens=2\n", "t.trace");
    REQUIRE(t.segments.at(0).tokens.size() == 8);  // derived once within the budget
    CHECK(t.segments.at(0).pending_len == 0);
    t.run.max_steps = 1'000'000;
    try {
        validate_trace(t, "mem");
        FAIL("validate_trace accepted 65537 blocks x 1000000 steps");
    } catch (const InputError& e) {
        CHECK(e.field() == "run.max_steps");
        CHECK(e.message().starts_with("engine.num_blocks 65537 x run.max_steps 1000000 is above the budget"));
    }
}

TEST_CASE("budget: kvsim format lists every row with its limit", "[trace][budget]") {
    const std::string help = format_help();
    for (const BudgetRow& row : budget_rows()) {
        INFO(row.name);
        CHECK(help.find(fmt::format("  {} <= {}: {}; {}\n", row.name, row.limit, row.counts, row.why)) !=
              std::string::npos);
    }
}

TEST_CASE("budget: out of memory within the budget exits 71 with one line", "[trace][budget][cli]") {
    // 68 prompts of 983040 tokens, within every budget row, hold 267 MB once they arrive
    const std::string big = testing::write_scratch("budget_oom.trace", arrivals("segment a len=65536\n", 68,
                                                                               fifteen_a(), 1));
    const std::string limit = "bash -c 'ulimit -v 100000 && exec \"$0\" \"$@\"'";
    const testing::CliResult small =
        testing::run_kvsim_wrapped(limit, "run " + std::string(KVSIM_SOURCE_DIR) + "/corpus/examples/01_single_request.trace --quiet");
    REQUIRE(small.exit_code == 0);  // the limit leaves room for an ordinary run
    const testing::CliResult r = testing::run_kvsim_wrapped(limit, "run " + big + " --variant v0.30.0 --quiet");
    CHECK(r.exit_code == 71);
    CHECK(r.err ==
          "kvsim: out of memory: the run needs more than this process may allocate (kvsim format lists the trace "
          "budget)\n");
}

}  // namespace
}  // namespace kvsim
