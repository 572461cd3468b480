// Sensitivity (the canaries of tests/README.md, Property tests): for variants known to be broken, RapidCheck must find the bug
// on random traces, with no hand-written trace, at a fixed seed and case count, and shrink it to
// a trace that still shows it. If the generators or the harness stop finding these, this turns
// CI red. Each canary's property is differential, so it pins the bug down exactly:
//   seed 000: crash:missing_current_block_table under v0.29.0 that the #54643 backport
//             (v0.29.0+003) removes, for kv_consumer and for kv_both MultiConnector(p2p, store);
//   stale ids: a store job reading/naming freed or reused blocks under v0.27.1 (tracker ids,
//             no pins) on a trace v0.30.0 (current tables, store-job pins) passes.
#include <iostream>

#include "properties/suites/suite_common.h"
#include "sim/trace/trace_printer.h"

namespace kvsim::propgen {
namespace {

constexpr int kCanaryCases = 400;  // upper bound; RapidCheck stops at the first failure

bool has_finding(const RunResult& r, std::initializer_list<std::string_view> ids) {
    for (const auto& f : findings(r))
        for (std::string_view id : ids)
            if (f == id) return true;
    return false;
}

// Runs the property at the canary's fixed settings and returns its shrunk counterexample.
template <class Testable>
Trace require_counterexample(const std::string& name, Testable&& testable) {
    const RcSettings settings = rc_settings(kCanaryCases, /*fixed=*/true);
    const auto result = check_property(name, settings, std::forward<Testable>(testable));
    INFO(result_text(result));
    rc::detail::FailureResult failure;
    REQUIRE(result.match(failure));  // the canary must find its bug
    const auto trace = counterexample_trace(result);
    REQUIRE(trace.has_value());
    std::cout << fmt::format("canary {}: found after {} passing case(s); shrunk counterexample:\n{}", name,
                             failure.numSuccess, print_trace(*trace));
    return *trace;
}

bool has_remote_prefill(const Trace& t) {
    for (const Event& e : t.events)
        if (const auto* a = std::get_if<ArriveEvent>(&e.body); a && a->remote_prefill) return true;
    return false;
}

void seed000_canary(const std::string& name, KvRole role) {
    const Variant broken = require_variant("v0.29.0");
    const Variant fixed = require_variant("v0.29.0+003");
    GenOptions options;
    options.roles = {role};
    const Trace cex = require_counterexample(name, [&] {
        const Trace trace = *gen_trace(options);
        const RunResult r = run_trace(trace, broken);
        if (r.signature != "crash:missing_current_block_table") return;
        const RunResult f = run_trace(trace, fixed);
        if (f.signature == "crash:missing_current_block_table") return;  // not what #54643 fixes
        RC_FAIL(failure_report(trace, "v0.29.0", r, "seed 000: the crash #54643 fixes"));
    });
    // The shrunk trace is seed 000's scenario: MultiConnector(p2p, store), both `role`, a remote
    // prefill whose prompt the store holds; it crashes under v0.29.0 and not with the backport.
    const RunResult r = run_trace(cex, broken);
    CHECK(r.signature == "crash:missing_current_block_table");
    CHECK(run_trace(cex, fixed).signature != "crash:missing_current_block_table");
    REQUIRE(cex.connectors.size() == 2);
    CHECK(cex.connectors[0].kind == "p2p");
    CHECK(cex.connectors[1].kind == "store");
    CHECK(cex.connectors[0].role == role);
    CHECK(cex.connectors[1].role == role);
    CHECK(has_remote_prefill(cex));
    CHECK_FALSE(cex.store.empty());
}

TEST_CASE("canary seed 000 crash found for kv_consumer under v0.29.0", "[property][canary]") {
    seed000_canary("canary seed 000 kv_consumer", KvRole::kv_consumer);
}

TEST_CASE("canary seed 000 crash found for kv_both under v0.29.0", "[property][canary]") {
    seed000_canary("canary seed 000 kv_both", KvRole::kv_both);
}

TEST_CASE("canary stale store-job block ids found under v0.27.1", "[property][canary]") {
    const Variant broken = require_variant("v0.27.1");
    const Variant clean = require_variant("v0.30.0");
    const auto stale = {std::string_view("violation:read_freed_block"), std::string_view("violation:read_foreign_block"),
                        std::string_view("violation:save_block_not_in_snapshot")};
    const Trace cex = require_counterexample("canary stale ids", [&] {
        const Trace trace = *gen_trace();
        const RunResult r = run_trace(trace, broken);
        if (!has_finding(r, stale)) return;
        if (run_trace(trace, clean).verdict != Verdict::pass) return;  // v0.30.0 must run this trace cleanly
        RC_FAIL(failure_report(trace, "v0.27.1", r, "stale tracker block ids read by a store job"));
    });
    const RunResult r = run_trace(cex, broken);
    CHECK(has_finding(r, stale));
    CHECK(run_trace(cex, clean).verdict == Verdict::pass);
    CHECK(std::any_of(cex.connectors.begin(), cex.connectors.end(),
                      [](const ConnectorSpec& c) { return c.kind == "store"; }));
}

}  // namespace
}  // namespace kvsim::propgen
