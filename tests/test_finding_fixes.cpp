// The fixes of the known root causes (properties/findings/known_findings.txt): every expect line of
// corpus/findings holds; a trace of several causes needs all of their fixes; each patch's branch does what its flag says; the
// store_save_computed_checker fires on a save over a failed synchronous load.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "properties/findings/classify.h"
#include "properties/findings/registry.h"
#include "properties/harness/matrix.h"
#include "properties/harness/run_trace.h"
#include "sim/common/event_log.h"
#include "sim/trace/trace_parser.h"
#include "sim/variant/variant.h"

using namespace kvsim;

namespace {

const std::string kFindings = std::string(KVSIM_SOURCE_DIR) + "/corpus/findings/";

Trace finding(const std::string& name) { return parse_trace_file(kFindings + name + ".trace"); }

RunResult run(const std::string& name, const std::string& variant) {
    return run_trace(finding(name), require_variant(variant));
}

std::vector<MatrixTrace> all_finding_traces() {
    std::vector<std::string> paths;
    for (const auto& entry : std::filesystem::directory_iterator(kFindings))
        if (entry.path().extension() == ".trace") paths.push_back(entry.path().string());
    std::sort(paths.begin(), paths.end());
    std::vector<MatrixTrace> traces;
    for (const auto& path : paths) traces.push_back({std::filesystem::path(path).stem().string(), parse_trace_file(path)});
    return traces;
}

bool any_event(const RunResult& r, EventCategory category, const std::string& request) {
    return std::any_of(r.events.begin(), r.events.end(),
                       [&](const LogEvent& e) { return e.category == category && e.request() == request; });
}

}  // namespace

TEST_CASE("corpus/findings: every expect line holds", "[findings][patch]") {
    const auto traces = all_finding_traces();
    REQUIRE(traces.size() >= 30);
    std::vector<Variant> variants;
    for (const auto& name : variants_in_expectations(traces)) variants.push_back(require_variant(name));
    const auto causes = [](const Trace& t, const Variant& v, const RunResult& r) {
        return expectation_causes(classify(builtin_registry(), t, v, r));
    };
    const Matrix m = run_matrix(traces, variants, causes);
    INFO(render_matrix(m));
    CHECK(m.unmet == 0);
    CHECK(m.met >= 3 * static_cast<int>(traces.size()));
}

TEST_CASE("corpus/findings: a trace of several causes passes only with every cause's fix", "[findings][patch]") {
    // (each cause's own fix on its witnesses: tests/test_registry.cpp)
    int compounds = 0;
    for (const MatrixTrace& t : all_finding_traces()) {
        for (const Expectation& x : t.trace.expectations) {
            if (x.causes.size() < 2) continue;
            INFO(t.name << " under " << x.variant);
            const Registry& registry = builtin_registry();
            // the fixes of every cause but the last leave a failure (the last cause's); all of them drain it
            Variant all = require_variant(x.variant);
            for (std::size_t i = 0; i < x.causes.size(); ++i) {
                const KnownEntry* entry = registry.find(x.causes[i]);
                REQUIRE(entry != nullptr);
                if (i + 1 == x.causes.size()) CHECK(run_trace(t.trace, all).verdict != Verdict::pass);
                if (!entry->fix.modelled()) break;
                all = *with_fix(all, entry->fix);
            }
            if (registry.find(x.causes.back())->fix.modelled()) CHECK(run_trace(t.trace, all).verdict == Verdict::pass);
            ++compounds;
        }
    }
    CHECK(compounds >= 10);
}

TEST_CASE("+pr50565: the aborted request's cleanup pull is answered but not reported", "[findings][patch]") {
    const RunResult fixed = run("p2p_abort_before_alloc_reports_notify_pull", "v0.30.0+pr50565");
    const auto pull_result = std::find_if(fixed.events.begin(), fixed.events.end(), [](const LogEvent& e) {
        return e.category == EventCategory::p2p && e.text("action") == "pull_result";
    });
    REQUIRE(pull_result != fixed.events.end());
    CHECK(pull_result->flag("notify_only"));
    CHECK_FALSE(pull_result->flag("reported"));
}

TEST_CASE("+rollback_placeholders_on_failed_load: the recompute schedules the whole prompt, no more, and finishes",
          "[findings][patch][async]") {
    const auto scheduled_tokens = [](const RunResult& r) {
        std::vector<std::int64_t> tokens;
        for (const LogEvent& e : r.events)
            if (e.category == EventCategory::schedule && e.integer("tokens").value_or(0) > 0)
                tokens.push_back(*e.integer("tokens"));
        return tokens;
    };
    const RunResult broken = run("failed_load_keeps_async_placeholders", "v0.30.0");
    const RunResult fixed = run("failed_load_keeps_async_placeholders", "v0.30.0+rollback_placeholders_on_failed_load");
    CHECK(scheduled_tokens(broken) == std::vector<std::int64_t>{1, 18});
    CHECK(scheduled_tokens(fixed) == std::vector<std::int64_t>{1, 17});
    CHECK(any_event(fixed, EventCategory::finish, "r0"));
    CHECK_FALSE(any_event(broken, EventCategory::finish, "r0"));
}

TEST_CASE("+rollback_placeholders_on_failed_load: a step scheduled before the rewind has its output discarded",
          "[findings][patch][async]") {
    // max_tokens=3: step 1 decodes r0 before step 0's failed load is processed; its sampled token is stale.
    std::string text = testing::slurp(kFindings + "failed_load_keeps_async_placeholders.trace");
    text.replace(text.find("max_tokens=1"), 12, "max_tokens=3");
    const Trace trace = parse_trace(text, "failed_load_keeps_async_placeholders(max_tokens=3)");
    const RunResult broken = run_trace(trace, require_variant("v0.30.0"));
    CHECK(broken.signature == "violation:computed_beyond_tokens");
    const RunResult fixed = run_trace(trace, require_variant("v0.30.0+rollback_placeholders_on_failed_load"));
    REQUIRE(fixed.verdict == Verdict::pass);
    const auto finish = std::find_if(fixed.events.begin(), fixed.events.end(),
                                     [](const LogEvent& e) { return e.category == EventCategory::finish; });
    REQUIRE(finish != fixed.events.end());
    CHECK(finish->integer("output") == 3);  // the three tokens sampled after the recompute, not the stale one
}

TEST_CASE("+discard_inflight_on_failed_load: the re-lookup after a failed load parks and runs", "[findings][patch]") {
    const RunResult broken = run("failed_store_load_reserves_itself", "v0.30.0");
    const RunResult fixed = run("failed_store_load_reserves_itself", "v0.30.0+discard_inflight_on_failed_load");
    const auto parks = [](const RunResult& r) {
        return std::count_if(r.events.begin(), r.events.end(), [](const LogEvent& e) {
            return e.category == EventCategory::park && e.request() == "r1";
        });
    };
    CHECK(parks(broken) == 1);  // parked once; the second async load never fits its own reservation
    CHECK(parks(fixed) == 2);   // parked again after the failure, loaded, run
    CHECK(any_event(fixed, EventCategory::finish, "r1"));
}

TEST_CASE("+pr57841: the async load behind a pending lookup waits holding nothing", "[findings][patch]") {
    const RunResult fixed = run("finished_load_behind_unadmittable_head", "v0.30.0+pr57841");
    // r2's first park comes after r1 (the pending head) was admitted.
    std::size_t r1_admitted = fixed.events.size(), r2_parked = fixed.events.size();
    for (std::size_t i = 0; i < fixed.events.size(); ++i) {
        const LogEvent& e = fixed.events[i];
        if ((e.category == EventCategory::park || e.category == EventCategory::alloc) && e.request() == "r1")
            r1_admitted = std::min(r1_admitted, i);
        if (e.category == EventCategory::park && e.request() == "r2") r2_parked = std::min(r2_parked, i);
    }
    REQUIRE(r1_admitted < fixed.events.size());
    CHECK(r1_admitted < r2_parked);
    CHECK(any_event(fixed, EventCategory::finish, "r2"));
}

TEST_CASE("+pin_aware_preemption: no preemption frees nothing", "[findings][patch]") {
    const auto preemptions = [](const RunResult& r) {
        return std::count_if(r.events.begin(), r.events.end(),
                             [](const LogEvent& e) { return e.category == EventCategory::preempt; });
    };
    const RunResult broken = run("store_pins_make_preemption_free_nothing", "v0.30.0");
    const RunResult fixed = run("store_pins_make_preemption_free_nothing", "v0.30.0+pin_aware_preemption");
    CHECK(preemptions(fixed) < preemptions(broken));
    CHECK(fixed.verdict == Verdict::pass);
}

TEST_CASE("+requeue_blockless_failed_load: the loaded request behind the failed head is promoted and runs first",
          "[findings][patch]") {
    // #57841 and the _inflight_prefills discard together leave the deadlock in place.
    const RunResult broken = run("failed_load_leaves_blockless_head", "v0.30.0+discard_inflight_on_failed_load+pr57841");
    CHECK(broken.verdict == Verdict::liveness);
    CHECK_FALSE(any_event(broken, EventCategory::promote, "r2"));
    const RunResult fixed = run("failed_load_leaves_blockless_head", "v0.30.0+requeue_blockless_failed_load");
    REQUIRE(fixed.verdict == Verdict::pass);
    const auto first = [&](EventCategory category, const std::string& request) {
        return std::find_if(fixed.events.begin(), fixed.events.end(), [&](const LogEvent& e) {
            return e.category == category && e.request() == request;
        }) - fixed.events.begin();
    };
    CHECK(first(EventCategory::promote, "r1") < first(EventCategory::promote, "r2"));  // r1 failed first
    CHECK(first(EventCategory::finish, "r2") < first(EventCategory::finish, "r1"));    // r2 no longer waits on r1
}

TEST_CASE("+cap_failed_load_full_prompt: the sharer of a failed block is promoted with its last token to compute",
          "[findings][patch]") {
    const auto promoted = [](const RunResult& r, const std::string& request) {
        const auto it = std::find_if(r.events.begin(), r.events.end(), [&](const LogEvent& e) {
            return e.category == EventCategory::promote && e.request() == request;
        });
        return it == r.events.end() ? std::optional<std::int64_t>{} : it->integer("computed");
    };
    // r1 marks the failed block and restarts from 0; r2 finds it marked and keeps its whole prompt (17 tokens).
    const RunResult broken = run("shared_failed_block_keeps_full_prompt", "v0.30.0");
    REQUIRE(broken.verdict == Verdict::crash);
    CHECK(promoted(broken, "r1") == std::optional<std::int64_t>{0});
    CHECK(promoted(broken, "r2") == std::optional<std::int64_t>{17});
    const RunResult fixed = run("shared_failed_block_keeps_full_prompt", "v0.30.0+cap_failed_load_full_prompt");
    REQUIRE(fixed.verdict == Verdict::pass);
    CHECK(promoted(fixed, "r2") == std::optional<std::int64_t>{16});
    CHECK(any_event(fixed, EventCategory::finish, "r2"));
}

TEST_CASE("+cap_rollback_full_prompt: a sharer left with every token computed by the rollback computes its last one",
          "[findings][patch][async]") {
    const auto last_invalid = [](const RunResult& r, const std::string& request) {
        std::optional<std::int64_t> computed;
        for (const LogEvent& e : r.events)
            if (e.category == EventCategory::invalid && e.request() == request) computed = e.integer("computed");
        return computed;
    };
    const std::string name = "rollback_strands_full_prompt_sharer";
    // req-0 found block 1 marked by r4 and keeps its count before the processed step: its whole prompt.
    const RunResult stranded = run(name, "v0.30.0+rollback_placeholders_on_failed_load");
    REQUIRE(stranded.verdict == Verdict::liveness);
    CHECK(last_invalid(stranded, "req-0") == std::optional<std::int64_t>{2});
    CHECK(any_event(stranded, EventCategory::finish, "r4"));
    CHECK_FALSE(any_event(stranded, EventCategory::finish, "req-0"));
    const RunResult fixed = run(name, "v0.30.0+rollback_placeholders_on_failed_load+cap_rollback_full_prompt");
    REQUIRE(fixed.verdict == Verdict::pass);
    CHECK(any_event(fixed, EventCategory::finish, "req-0"));
    // Without the rollback the cap has nothing to act on: the placeholders keep req-0 scheduled (#45138).
    CHECK(run(name, "v0.30.0+cap_rollback_full_prompt").signature == "violation:computed_beyond_tokens");
}

// A MultiConnector whose first child loads synchronously (upstream's test MockKVConnector, standing for
// LMCache) and a MooncakeStoreConnector that saves: the store's job for r1 covers tokens [0, 56), which
// the mock's failed load should have filled; _update_requests_with_invalid_blocks rewinds r1 to 0, so
// the save stores KV nobody computed. Only the checker sees it (no block is missing or reused).
constexpr const char* kStaleSaveTrace =
    "kvsim-trace 1\n"
    "engine block_size=8 num_blocks=18 max_batched_tokens=48 max_running=16 max_model_len=136 prefix_caching=off "
    "kv_load_failure_policy=recompute async_scheduling=off\n"
    "run seed=0 max_steps=400\n"
    "multi role=kv_both\n"
    "connector mock role=kv_both matched=56 async=off\n"
    "connector store role=kv_both\n"
    "segment s0 len=19\n"
    "@0 arrive r1 prompt=s0+s0+s0 max_tokens=1\n"
    "@0 report invalid_blocks r1 index=0\n";

TEST_CASE("store_save_computed_checker: a store save over a sibling's failed synchronous load",
          "[findings][checker]") {
    const Trace t = parse_trace(kStaleSaveTrace, "stale_save.trace");
    const RunResult broken = run_trace(t, require_variant("v0.30.0"));
    REQUIRE(broken.verdict == Verdict::violation);
    CHECK(broken.signature == "violation:save_beyond_computed_tokens");
    REQUIRE(broken.findings.size() == 1);
    const Finding& f = broken.findings.front();
    CHECK(f.request == "r1");
    CHECK(f.connector == "store");
    CHECK(f.step == 0);
    CHECK(f.blocks == std::vector<BlockId>{1, 2, 3, 4, 5, 6, 7});  // tokens [0, 56)
    REQUIRE(f.tokens);
    CHECK(f.tokens->end == 56);
    // Under kv_load_failure_policy=fail (upstream's default) r1 ends FINISHED_ERROR: judged with its rewound
    // count, the save still covers what the failed load left.
    Trace failing = t;
    failing.engine.kv_load_failure_policy = LoadFailurePolicy::fail;
    CHECK(run_trace(failing, require_variant("v0.30.0")).signature == "violation:save_beyond_computed_tokens");
}

TEST_CASE("store_save_computed_checker stays quiet on saves of computed tokens", "[findings][checker]") {
    // The same stack and prompt, no failed load: every save covers computed tokens only.
    Trace t = parse_trace(kStaleSaveTrace, "stale_save.trace");
    std::erase_if(t.events, [](const Event& e) { return !std::holds_alternative<ArriveEvent>(e.body); });
    const RunResult r = run_trace(t, require_variant("v0.30.0"));
    CHECK(r.verdict == Verdict::pass);
    CHECK(std::any_of(r.events.begin(), r.events.end(), [](const LogEvent& e) {
        return e.category == EventCategory::meta && e.text("action") == "save";
    }));
}
