// The generators reach what the properties are about: every connector stack and role, prefix-cache,
// store and remote-prefill hits, preemption (so allocation failure) on starved pools, aborts in
// every lifecycle state, every fault kind, store saves, P2P sends, lookups left pending, failed
// loads, both scheduling modes with async's fenced frees. A fixed sample of generated traces is run under v0.30.0 and its event logs are counted;
// a scenario nobody reaches any more turns this red (the properties would then pass vacuously).
#include <iostream>
#include <map>
#include <set>

#include "properties/suites/suite_common.h"
#include "sim/trace/config_rules.h"

namespace kvsim::propgen {
namespace {

constexpr int kSamples = 600;

TEST_CASE("generators reach every scenario", "[property][generators]") {
    const Variant variant = require_variant("v0.30.0");
    const rc::Gen<TraceSpec> gen = gen_trace_spec();
    std::map<std::string, int> seen;
    auto count = [&](const std::string& what) { ++seen[what]; };
    for (int i = 0; i < kSamples; ++i) {
        const TraceSpec spec = gen(rc::Random(kDefaultSeed + static_cast<std::uint64_t>(i)), 100).value();
        const Trace trace = build_trace(spec);
        count(fmt::format("stack {}", to_string(spec.stack.kind)));
        for (const ConnectorSpec& c : trace.connectors) count(fmt::format("{} {}", c.kind, to_string(c.role)));
        if (trace.multi) count(fmt::format("multi {}", to_string(trace.multi->role)));
        if (trace.workers.load_delay_min == 0) count("load in its own step");
        if (trace.workers.store_delay_min == 0) count("store job in its own step");
        for (const char* v : {"v0.27.1", "v0.29.0", "v0.30.0"})
            if (const auto rejection = upstream_rejects(trace, require_variant(v)))
                count(fmt::format("rejected by upstream under {}: {}", v, rejection->rule->id));
        count(fmt::format("pressure {}", spec.engine.pressure));
        if (!trace.engine.prefix_caching) count("prefix caching off");
        if (!trace.engine.chunked_prefill) count("chunked prefill off");
        const auto policy = trace.engine.kv_load_failure_policy;
        count(policy ? fmt::format("kv_load_failure_policy={}", to_string(*policy)) : "kv_load_failure_policy unstated");
        const auto async = trace.engine.async_scheduling;
        count(async ? fmt::format("async_scheduling={}", *async ? "on" : "off") : "async_scheduling unstated");
        const bool recompute = policy.value_or(variant.load_failure_policy_default) == LoadFailurePolicy::recompute;
        const RunResult r = run_trace(trace, variant);
        REQUIRE_FALSE(r.internal_error);
        for (const LogEvent& e : r.events) {
            const std::string_view connector = e.text("connector"), action = e.text("action");
            if (e.category == EventCategory::preempt) count("preemption");
            if (e.category == EventCategory::abort) {
                if (e.has("status")) count("abort from " + std::string(e.text("status")));
                if (e.text("reason") == "already finished") count("abort of a finished request");
                if (e.text("reason") == "gone") count("abort of a freed request");
            }
            if (e.category == EventCategory::fault) count("fault " + std::string(e.text("kind")));
            if (e.category == EventCategory::lookup && !e.has("local")) count("lookup pending");
            if (e.category == EventCategory::lookup && e.integer("local").value_or(0) != 0)
                count("local and external hits overlap");
            if (e.category == EventCategory::park) count("async load");
            if (e.category == EventCategory::load && !e.flag("async")) count("sync store load (upstream rejects)");
            if (e.category == EventCategory::invalid && e.has("request"))
                count(recompute ? "failed load recomputed" : "failed load rewound under fail");
            if (e.category == EventCategory::finish && e.text("status") == "FINISHED_ERROR") count("failed load FINISHED_ERROR");
            if (e.category == EventCategory::meta && connector == "store" && action == "save") count("store save");
            if (e.category == EventCategory::meta && connector == "p2p" && action == "pull") count("p2p pull");
            if (e.category == EventCategory::send_done) count("p2p send finished");
            if (e.category == EventCategory::hold) count(e.has("fence") ? "deferred free fenced" : "delayed free");
            if (e.category == EventCategory::finish) count("finished");
        }
        count(r.verdict == Verdict::pass ? "verdict pass" : "verdict not pass");
    }
    std::string summary;
    for (const auto& [what, n] : seen) summary += fmt::format("  {}: {}\n", what, n);
    std::cout << "generator coverage over " << kSamples << " traces (v0.30.0):\n" << summary;
    INFO(summary);

    const std::vector<std::string> required = {
        "stack store", "stack p2p", "stack store+p2p", "stack p2p+store",
        "store kv_consumer", "store kv_both", "store kv_producer",
        "p2p kv_consumer", "p2p kv_both", "p2p kv_producer",
        "pressure 0", "pressure 3", "prefix caching off", "chunked prefill off",
        "multi kv_consumer", "multi kv_both", "multi kv_producer", "load in its own step", "store job in its own step",
        "preemption", "local and external hits overlap", "async load", "failed load recomputed",
        "failed load FINISHED_ERROR", "kv_load_failure_policy unstated", "kv_load_failure_policy=recompute",
        "kv_load_failure_policy=fail", "async_scheduling unstated", "async_scheduling=off", "async_scheduling=on",
        "abort from WAITING", "abort from WAITING_FOR_REMOTE_KVS", "abort from RUNNING", "abort from PREEMPTED",
        "abort of a finished request", "abort of a freed request",
        "fault store_delay", "fault store_fail", "fault load_fail", "fault lookup_pending", "lookup pending",
        "store save", "p2p pull", "p2p send finished", "delayed free", "deferred free fenced", "finished", "verdict pass",
    };
    for (const std::string& what : required) {
        INFO("never reached: " << what);
        CHECK(seen[what] > 0);
    }
    // The generators make only configurations upstream accepts, and never a synchronous store load.
    for (const auto& [what, n] : seen) {
        INFO(what);
        CHECK_FALSE(what.starts_with("rejected by upstream"));
        CHECK_FALSE(what.starts_with("sync store load"));
    }
    // Most generated traces must run to a clean pass under a clean preset, or the properties test little.
    CHECK(seen["verdict pass"] * 10 >= kSamples * 8);
}

}  // namespace
}  // namespace kvsim::propgen
