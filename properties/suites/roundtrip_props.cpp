// Generated traces are valid and round-trip: validate_trace accepts every trace the generators
// build (sim/trace/README.md rules, by construction), parse(print(t)) == t and printing is a
// fixed point, so every counterexample RapidCheck prints is a trace file kvsim replays as is.
#include "properties/suites/suite_common.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"

namespace kvsim::propgen {
namespace {

TEST_CASE("generated traces are valid and round-trip", "[property][roundtrip]") {
    require_property("print parse round trip", 1000, [] {
        const Trace trace = *gen_trace();
        try {
            validate_trace(trace, "generated.trace");
        } catch (const InputError& e) {
            RC_FAIL(std::string("the generator built an invalid trace: ") + e.what());
        }
        const std::string printed = print_trace(trace);
        const Trace parsed = parse_trace(printed, "generated.trace");
        RC_ASSERT(parsed == trace);
        RC_ASSERT(print_trace(parsed) == printed);
    });
}

TEST_CASE("build_trace is total over shrunk and hand-made specs", "[property][roundtrip]") {
    // Shrinking and hand edits produce specs the generators never would: out-of-range
    // numbers, dangling indices, empty pools. build_trace must still give a valid trace.
    require_property("build_trace total", 500, [] {
        TraceSpec spec = *gen_trace_spec();
        const int bump = *rc::gen::inRange(-1000, 1000);
        spec.engine.block_size_index += bump;
        spec.engine.pressure += bump;
        spec.engine.model_len_slack += bump % 7;
        if (!spec.requests.empty()) {
            spec.requests.front().prompt.push_back(bump);
            spec.requests.front().gap += bump;
            spec.requests.front().abort_after = bump;
        }
        spec.store.push_back(StoreRec{.request = bump, .take = bump});
        spec.faults.push_back(
            FaultRec{.kind = FaultKind::lookup_pending, .at = bump, .rank = bump, .steps = bump, .request = bump});
        const Trace trace = build_trace(spec);
        try {
            validate_trace(trace, "spec.trace");
        } catch (const InputError& e) {
            RC_FAIL(std::string("build_trace gave an invalid trace: ") + e.what());
        }
        RC_ASSERT(build_trace(spec) == trace);
    });
}

}  // namespace
}  // namespace kvsim::propgen
