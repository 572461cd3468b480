#include <catch2/catch.hpp>

#include "padded_seed000.h"

#include <algorithm>
#include <string>

#include "cli_runner.h"
#include "fuzz/minimize/minimize.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/config_rules.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"
#include "sim/variant/variant.h"

using namespace kvsim;
using namespace kvsim::testing;

namespace {

const std::string kPaddedSeed000 = kvsim::testing::padded_seed000_trace("v0.29.0");

constexpr const char* kSeed000Signature = "crash:missing_current_block_table";

int count_arrivals(const Trace& t) {
    return static_cast<int>(std::count_if(t.events.begin(), t.events.end(),
                                          [](const Event& e) { return std::holds_alternative<ArriveEvent>(e.body); }));
}

}  // namespace

TEST_CASE("minimize keeps the signature and shrinks a seed 000 trace padded with noise", "[minimize]") {
    const Trace padded = parse_trace(kPaddedSeed000, "padded.trace");
    REQUIRE(run_trace(padded, require_variant("v0.29.0")).signature == kSeed000Signature);

    MinimizeStats stats;
    MinimizeOptions options;
    options.stats = &stats;
    const Trace minimal = minimize_trace(padded, require_variant("v0.29.0"), kSeed000Signature, options);

    REQUIRE(stats.reproduced);
    REQUIRE(stats.events_before == 9);
    REQUIRE(stats.events_after == 1);
    REQUIRE(stats.bytes_after < stats.bytes_before);
    REQUIRE(stats.runs <= options.max_runs);
    REQUIRE_NOTHROW(validate_trace(minimal));
    REQUIRE(run_trace(minimal, require_variant("v0.29.0")).signature == kSeed000Signature);

    // what is left is the bug itself: one remote-prefill request whose prompt the store holds,
    // under MultiConnector(p2p, store) as kv_consumer
    REQUIRE(count_arrivals(minimal) == 1);
    const auto& arrive = std::get<ArriveEvent>(minimal.events.front().body);
    REQUIRE(arrive.remote_prefill);
    REQUIRE(arrive.max_tokens == 1);
    REQUIRE(minimal.connectors.size() == 2);
    REQUIRE(minimal.store.size() == 1);
    REQUIRE(minimal.segments.size() == 1);
    REQUIRE(minimal.expectations.empty());
    REQUIRE(minimal.engine.num_blocks < padded.engine.num_blocks);
    REQUIRE(minimal.run.max_steps < padded.run.max_steps);
    REQUIRE(minimal.workers.ranks == 1);

    // deterministic: the same input gives the same minimal trace
    REQUIRE(print_trace(minimize_trace(padded, require_variant("v0.29.0"), kSeed000Signature)) == print_trace(minimal));
}

TEST_CASE("minimize leaves a trace alone when it does not give the signature", "[minimize]") {
    const Trace padded = parse_trace(kPaddedSeed000, "padded.trace");
    MinimizeStats stats;
    MinimizeOptions options;
    options.stats = &stats;
    const Trace same = minimize_trace(padded, require_variant("v0.30.0"), kSeed000Signature, options);  // v0.30.0 passes
    REQUIRE_FALSE(stats.reproduced);
    REQUIRE(same == padded);
    REQUIRE(stats.runs == 1);
}

TEST_CASE("minimize stops at its replay budget with a trace that still gives the signature", "[minimize]") {
    const Trace padded = parse_trace(kPaddedSeed000, "padded.trace");
    MinimizeStats stats;
    MinimizeOptions options;
    options.max_runs = 6;
    options.stats = &stats;
    const Trace partial = minimize_trace(padded, require_variant("v0.29.0"), kSeed000Signature, options);
    REQUIRE(stats.runs <= 6);
    REQUIRE(stats.budget_exhausted);
    REQUIRE(run_trace(partial, require_variant("v0.29.0")).signature == kSeed000Signature);
}

TEST_CASE("minimize never lowers max_steps or num_blocks of a liveness finding", "[minimize]") {
    const Trace trace = parse_trace(R"(kvsim-trace 1
engine block_size=16 num_blocks=64 max_model_len=1008
run seed=1 max_steps=60 variant=v0.30.0
connector store role=kv_both lookup_async=on
segment p len=40
segment q len=20
store prefix=p
@0 arrive r1 prompt=p max_tokens=3
@0 fault lookup_pending request=r1 steps=5000
@1 arrive r2 prompt=q max_tokens=5
)",
                                    "liveness.trace");
    const RunResult before = run_trace(trace, require_variant("v0.30.0"));
    REQUIRE(before.signature == "liveness:requests_not_finished");
    MinimizeStats stats;
    MinimizeOptions options;
    options.stats = &stats;
    const Trace minimal = minimize_trace(trace, require_variant("v0.30.0"), before.signature, options);
    REQUIRE(stats.reproduced);
    REQUIRE(minimal.events.size() == 2);  // r2 is noise; r1 and its pending lookup are the finding
    REQUIRE(minimal.run.max_steps == 60);
    REQUIRE(minimal.engine.num_blocks == 64);
    REQUIRE(run_trace(minimal, require_variant("v0.30.0")).signature == before.signature);
}

TEST_CASE("kvsim minimize writes the minimal trace with its expect line and it replays", "[minimize]") {
    const auto in = write_scratch("padded-seed000.trace", kPaddedSeed000);
    const auto out = (scratch_dir() / "minimal-seed000.trace").string();
    const auto r = run_kvsim("minimize " + in + " --variant v0.29.0 -o " + out);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.err, Catch::Contains("signature=crash:missing_current_block_table (known, causes seed000_pending_load_save) kept under v0.29.0: 9 -> 1 events"));
    const std::string text = slurp(out);
    REQUIRE_THAT(text, Catch::StartsWith("kvsim-trace 1\n# Minimised by kvsim minimize"));
    REQUIRE_THAT(text, Catch::Contains("\nexpect v0.29.0 crash signature=crash:missing_current_block_table causes=seed000_pending_load_save\n"));
    // max_steps keeps what the fixed run (+pr54643, the residue classifier's) needs to finish: fewer
    // steps would add a step-limit liveness to the cause set and change the classification. A run
    // that drains on its last step finishes, and so does one whose last batch in flight (async
    // scheduling) holds no request, so 4 steps are enough.
    REQUIRE_THAT(text, Catch::Contains("run seed=7 max_steps=4 variant=v0.29.0"));
    REQUIRE(std::count(text.begin(), text.end(), '@') == 1);
    // shrunk pool, model length and budgets stay inside what upstream accepts (sim/trace/config_rules.h)
    CHECK_FALSE(upstream_rejects(parse_trace(text, out), require_variant("v0.29.0")).has_value());

    const auto replay = run_kvsim("run " + out + " --quiet");
    REQUIRE(replay.exit_code == 2);
    REQUIRE_THAT(replay.out, Catch::Contains("signature=crash:missing_current_block_table expect=met"));
}

TEST_CASE("kvsim minimize refuses a trace without the finding", "[minimize]") {
    const auto in = write_scratch("padded-seed000-pass.trace", kPaddedSeed000);
    const auto passes = run_kvsim("minimize " + in + " --variant v0.30.0");
    REQUIRE(passes.exit_code == 1);
    REQUIRE_THAT(passes.err, Catch::Contains("passes under v0.30.0"));
    const auto other = run_kvsim("minimize " + in + " --variant v0.29.0 --signature crash:something_else");
    REQUIRE(other.exit_code == 1);
    REQUIRE_THAT(other.err, Catch::Contains("gives signature=crash:missing_current_block_table, not signature=crash:something_else"));
    REQUIRE(run_kvsim("minimize " + in + " --variant v9.9.9").exit_code == 64);
}
