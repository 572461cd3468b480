// The connector check kinds (`store`, `p2p`, `multi`): they read the connectors' scheduler-side state
// (found on their own or as MultiConnector children), print as written, and never change the run.
#include <catch2/catch.hpp>

#include <string>

#include "properties/harness/run_trace.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"
#include "sim/variant/variant.h"

namespace kvsim {
namespace {

// A MultiConnector of p2p (child 0) and store (child 1): d1 pulls its prompt over p2p, s loads 32
// tokens from the store, e is a prefill-side request whose blocks the p2p send holds after it ends.
const std::string kMultiScenario =
    "kvsim-trace 1\n"
    "engine block_size=16 num_blocks=32 max_batched_tokens=256 max_running=8 max_model_len=496 "
    "async_scheduling=off\n"
    "run max_steps=60 variant=v0.30.0\n"
    "multi role=kv_both\n"
    "connector p2p role=kv_both\n"
    "connector store role=kv_both\n"
    "workers ranks=1 load_delay_min=2 load_delay_max=2 pull_delay=2\n"
    "segment s0 len=32\n"
    "segment p1 len=40\n"
    "segment p2 len=20\n"
    "store prefix=s0\n"
    "@0 arrive d1 prompt=p1 max_tokens=3 remote_prefill=on\n"
    "@0 arrive s prompt=s0+p2 max_tokens=2\n"
    "@0 arrive e prompt=p2 max_tokens=1 remote_decode=on\n";

// The model's values for kMultiScenario (its log: step 0 pulls d1 into [1,2,3], loads s into [4,5],
// saves e's block as store job 0 and queues e's send of [6,7]; step 3 saves d1 and s as jobs 1 and 2).
const std::string kMultiChecks =
    "@0 check multi d1 child=0 child_name=p2p at=schedule\n"
    "@0 check multi s child=1 child_name=store at=schedule\n"
    "@0 check multi e child=- child_name=- at=schedule\n"
    "@0 check p2p need_recv=- need_send=- not_processed=- at=schedule\n"
    "@0 check p2p d1 recv_blocks=absent at=schedule\n"
    "@0 check store s load=on load_from=0 load_tokens=32 load_spec=off tracked=on unfinished=on at=schedule\n"
    "@0 check store e save=on save_start=0 save_end=16 save_blocks=6,7 pins=6,7 jobs=1 saved=16 at=schedule\n"
    "@0 check store unfinished_ids=d1+e+s pinned=6,7 at=schedule\n"
    "@0 check p2p need_send=e\n"
    "@0 check p2p e send_blocks=6,7\n"
    "@1 check p2p need_send=-\n"
    "@3 check store d1 save=on save_end=32 save_blocks=1,2,3 load=off at=schedule\n"
    "@3 check store pinned=1,2,3,4,5,8,9 at=schedule\n"
    "@5 check store pinned=-\n";

RunResult run_text(const std::string& text) {
    return run_trace(parse_trace(text, "t.trace"), require_variant("v0.30.0"));
}

}  // namespace

TEST_CASE("store, p2p and multi checks read the connectors' state", "[step_checks][store][p2p][multi]") {
    const RunResult good = run_text(kMultiScenario + kMultiChecks);
    CHECK(good.verdict == Verdict::pass);
    CHECK(good.findings.empty());

    const RunResult bad = run_text(kMultiScenario +
                                   "@0 check multi s child=0 child_name=p2p at=schedule\n"
                                   "@0 check store s load_tokens=48 at=schedule\n"
                                   "@0 check p2p need_send=d1\n");
    REQUIRE(bad.verdict == Verdict::mismatch);
    CHECK(bad.signature == "mismatch:multi.child");
    REQUIRE(bad.findings.size() == 4);
    CHECK(bad.findings[1].message() == "check multi s child_name: expected p2p, got store at step 0");
    CHECK(bad.findings[2].message() == "check store s load_tokens: expected 48, got 32 at step 0");
    CHECK(bad.findings[3].message() == "check p2p need_send: expected d1, got e at step 0");
}

TEST_CASE("connector checks read absent without that connector", "[step_checks][store][p2p][multi]") {
    const std::string store_only =
        "kvsim-trace 1\n"
        "engine block_size=16 num_blocks=16 max_model_len=240\n"
        "run max_steps=20 variant=v0.30.0\n"
        "connector store role=kv_both\n"
        "segment p len=20\n"
        "@0 arrive a prompt=p max_tokens=1\n";
    const RunResult r = run_text(store_only +
                                 "@0 check multi a child=- at=schedule\n"
                                 "@0 check p2p need_recv=- at=schedule\n"
                                 "@0 check store a save=on tracked=on at=schedule\n");
    REQUIRE(r.findings.size() == 2);
    CHECK(r.findings[0].message() == "check multi a child: expected -, got absent at step 0");
    CHECK(r.findings[1].message() == "check p2p need_recv: expected -, got absent at step 0");
}

TEST_CASE("connector checks round-trip and never change the run", "[step_checks][store][p2p][multi]") {
    const Trace trace = parse_trace(kMultiScenario + kMultiChecks, "t.trace");
    REQUIRE(trace.checks.size() == 14);
    const std::string printed = print_trace(trace);
    CHECK_THAT(printed, Catch::EndsWith(kMultiChecks));
    CHECK(parse_trace(printed, "printed.trace") == trace);

    const RunResult plain = run_text(kMultiScenario);
    const RunResult checked = run_text(kMultiScenario + kMultiChecks);
    CHECK(checked.digest == plain.digest);
    CHECK(checked.steps == plain.steps);
    CHECK(checked.log == plain.log);
}

TEST_CASE("a multi line over one connector is a one-child MultiConnector", "[step_checks][multi]") {
    // upstream's kv_connector="MultiConnector" with one entry in `connectors`: the store child loads
    const std::string trace =
        "kvsim-trace 1\n"
        "engine block_size=16 num_blocks=32 max_batched_tokens=256 max_running=8 max_model_len=496 "
        "async_scheduling=off\n"
        "run max_steps=60 variant=v0.30.0\n"
        "multi role=kv_both\n"
        "connector store role=kv_both\n"
        "workers ranks=1 load_delay_min=2 load_delay_max=2\n"
        "segment s0 len=32\n"
        "segment p2 len=20\n"
        "store prefix=s0\n"
        "@0 arrive s prompt=s0+p2 max_tokens=2\n"
        "@0 check multi s child=0 child_name=store at=schedule\n"
        "@0 check store s load=on load_tokens=32 at=schedule\n";
    const RunResult r = run_text(trace);
    CHECK(r.verdict == Verdict::pass);
    CHECK(r.findings.empty());
}

}  // namespace kvsim

