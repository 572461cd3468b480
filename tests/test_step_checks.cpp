// Step checks (`@STEP check`): parse/print, input errors, the mismatch verdict, and that checks
// never change the run.
#include <catch2/catch.hpp>

#include <string>

#include "cli_runner.h"
#include "properties/findings/classify.h"
#include "properties/findings/registry.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/expectation_check.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"
#include "sim/variant/variant.h"

namespace kvsim {
namespace {

const std::string kScenario =
    "kvsim-trace 1\n"
    "engine block_size=16 num_blocks=64 max_model_len=1008\n"
    "run max_steps=100 variant=v0.30.0\n"
    "segment p len=10\n"
    "segment q len=20\n"
    "@0 arrive a prompt=p max_tokens=3\n"
    "@0 arrive b prompt=q max_tokens=3\n";

// Upstream's values for kScenario: both admitted at step 0, in arrival order, 10 and 20 tokens.
const std::string kChecks =
    "@0 check batch new=a+b cached=- total_tokens=30 at=schedule\n"
    "@0 check batch a tokens=10 at=schedule variants=v0.30.0,v0.29.0+pr55066\n"
    "@0 check request a status=RUNNING computed=10 blocks=1 hashed=0 preemptions=0 alive=on\n"
    "@0 check queue waiting=- running=a+b skipped=-\n"
    "@0 check pool free=60 cached=1\n"
    "@0 check block 2 ref_cnt=1 hashed=on\n"
    "@50 check request a alive=off\n";

RunResult run_text(const std::string& text) {
    const Trace trace = parse_trace(text, "t.trace");
    return run_trace(trace, require_variant("v0.30.0"));
}

std::string input_error(const std::string& text) {
    try {
        parse_trace(text, "t.trace");
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("check lines parse, print in canonical form and round-trip", "[step_checks]") {
    const Trace trace = parse_trace(kScenario + kChecks, "t.trace");
    REQUIRE(trace.checks.size() == 7);
    CHECK(trace.events.size() == 2);
    CHECK(trace.checks[0].body.at == CheckPhase::schedule);
    CHECK(trace.checks[1].body.variants == std::vector<std::string>{"v0.30.0", "v0.29.0+pr55066"});
    CHECK(trace.checks[6].line == 14);
    const std::string printed = print_trace(trace);
    CHECK_THAT(printed, Catch::EndsWith("@0 arrive b prompt=q max_tokens=3\n" + kChecks));
    const Trace again = parse_trace(printed, "printed.trace");
    CHECK(again == trace);
    CHECK(print_trace(again) == printed);
}

TEST_CASE("a bad check line is one file:line:field error", "[step_checks]") {
    CHECK(input_error(kScenario + "@0 check request a bogus=1\n") ==
          "t.trace:8: check: unknown key 'bogus' for check request (keys: status, computed, blocks, hashed, "
          "preemptions, alive, at, variants)");
    CHECK(input_error(kScenario + "@0 check request a computed=x\n") ==
          "t.trace:8: check.computed: expected N, got 'x'");
    CHECK(input_error(kScenario + "@0 check request computed=1\n") ==
          "t.trace:8: check.id: missing ID: these keys read one item");
    CHECK(input_error(kScenario + "@0 check queue a waiting=-\n") ==
          "t.trace:8: check.id: unexpected ID 'a': these keys take none");
    CHECK(input_error(kScenario + "@0 check nothing x=1\n") ==
          "t.trace:8: check.kind: unknown check kind 'nothing' (kinds: request, queue, batch, pool, block, store, p2p, multi)");
    CHECK(input_error(kScenario + "@0 check pool free=1 at=later\n") ==
          "t.trace:8: check.at: expected schedule or end, got 'later'");
    CHECK(input_error(kScenario + "@5 check pool free=1\n@4 check pool free=1\n") ==
          "t.trace:9: check.step: step 4 is before step 5 of the previous check (line 8)");
    CHECK(input_error(kScenario + "@0 check pool free=1 variants=v9\n").starts_with("t.trace:8: check.variants: "));
}

TEST_CASE("upstream values pass and a planted wrong value is the verdict mismatch", "[step_checks]") {
    const RunResult good = run_text(kScenario + kChecks);
    CHECK(good.verdict == Verdict::pass);
    CHECK(good.findings.empty());

    const RunResult bad = run_text(kScenario + "@1 check request b status=WAITING computed=7\n");
    REQUIRE(bad.verdict == Verdict::mismatch);
    CHECK(bad.signature == "mismatch:request.status");
    CHECK(bad.message == "check request b status: expected WAITING, got RUNNING at step 1");
    REQUIRE(bad.findings.size() == 2);
    CHECK(bad.findings[1].message() == "check request b computed: expected 7, got 21 at step 1");
    CHECK(bad.findings[1].fact_text("expected") == "7");
    CHECK(bad.findings[1].fact_text("got") == "21");
    CHECK(exit_code::of(bad.verdict) == 5);
    const Trace trace = parse_trace(kScenario + "@0 check pool free=1\n", "t.trace");
    CHECK(classify(builtin_registry(), trace, require_variant("v0.30.0"), run_trace(trace, require_variant("v0.30.0")))
              .outcome == Outcome::none);
}

TEST_CASE("batch checks read the step's batch under async scheduling too", "[step_checks][async]") {
    std::string async_scenario = kScenario;
    async_scenario.replace(async_scenario.find("num_blocks=64"), 13, "num_blocks=64 async_scheduling=on");
    CHECK(run_text(async_scenario + "@0 check batch new=a+b total_tokens=30 at=schedule\n").verdict == Verdict::pass);
    const RunResult wrong = run_text(async_scenario + "@0 check batch new=- at=schedule\n");
    REQUIRE(wrong.verdict == Verdict::mismatch);
    CHECK(wrong.message == "check batch new: expected -, got a+b at step 0");
}

TEST_CASE("a check for another variant is not evaluated", "[step_checks]") {
    CHECK(run_text(kScenario + "@0 check pool free=1 variants=v0.29.0\n").verdict == Verdict::pass);
    CHECK(run_text(kScenario + "@0 check pool free=1 variants=v0.29.0,v0.30.0\n").verdict == Verdict::mismatch);
}

TEST_CASE("checks never change the run: digest and steps with and without them", "[step_checks]") {
    const RunResult plain = run_text(kScenario);
    for (const std::string& checks : {kChecks, std::string("@0 check pool free=1\n@99 check pool free=2\n")}) {
        const RunResult checked = run_text(kScenario + checks);
        CHECK(checked.digest == plain.digest);
        CHECK(checked.steps == plain.steps);
        CHECK(checked.log == plain.log);
    }
    Trace trace = parse_trace(kScenario + "@0 check pool free=1\n", "t.trace");
    RunOptions off;
    off.step_checks = false;
    CHECK(run_trace(trace, require_variant("v0.30.0"), off).verdict == Verdict::pass);
}

TEST_CASE("an expect line documents an expected mismatch and kvsim run exits 5 on one", "[step_checks][cli]") {
    const std::string text = kScenario + "expect v0.30.0 mismatch signature=mismatch:pool.free\n@0 check pool free=1\n";
    const Trace trace = parse_trace(text, "t.trace");
    const RunResult result = run_trace(trace, require_variant("v0.30.0"));
    CHECK(check_expectation(trace, result, "v0.30.0").status == ExpectationStatus::met);
    const auto r = testing::run_kvsim("run " + testing::write_scratch("mismatch.trace", text) + " -q");
    CHECK(r.exit_code == 5);
    CHECK_THAT(r.out, Catch::StartsWith("mismatch ") && Catch::Contains("signature=mismatch:pool.free") &&
                          Catch::Contains("expect=met") && Catch::Contains("-- check pool free: expected 1, got"));
}

}  // namespace kvsim
