// The fix patch of each known finding (corpus/findings/): every finding trace expects its failure
// on the release and a pass with its patch, and those expect lines hold; each patch's branch does
// what its flag says; the store_save_computed_checker fires on finding 6 and nowhere else.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli_runner.h"
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

// The finding trace of each fix patch.
const std::map<std::string, std::string>& trace_of_patch() {
    static const std::map<std::string, std::string> table = {
        {"pr50565", "p2p_abort_before_alloc_reports_notify_pull"},
        {"p2p_pull_only_when_loading", "multiconnector_store_first_p2p_notify_pull"},
        {"discard_inflight_on_failed_load", "failed_store_load_reserves_itself"},
        {"pr57841", "finished_load_behind_unadmittable_head"},
        {"pin_aware_preemption", "store_pins_make_preemption_free_nothing"},
        {"pin_aware_self_preemption", "store_pins_drive_head_to_preempt_itself"},
        {"store_tracker_rewind", "store_tracker_not_rewound_after_failed_load"},
        {"requeue_blockless_failed_load", "failed_load_leaves_blockless_head"},
        {"defer_save_over_sync_load", "failed_sync_load_shared_prefix_saved"},
        {"defer_save_over_inflight_sync_load+rollback_placeholders_on_failed_load",
         "async_inflight_save_over_failed_sync_load"},
        {"discard_inflight_on_failed_load+pr57841", "failed_load_self_reservation_with_pending_head"},
        {"rollback_placeholders_on_failed_load", "failed_load_keeps_async_placeholders"},
        {"pr49252+rollback_placeholders_on_failed_load+cap_rollback_full_prompt", "pr49252_discards_one_frame_too_few"},
        {"defer_free_for_loading_producer", "inflight_write_producer_store_load"},
        {"cap_failed_load_full_prompt", "shared_failed_block_keeps_full_prompt"},
        {"defer_save_over_sync_load+store_tracker_rewind", "failed_sync_load_shared_prefix_saved_with_tracker_not_rewound"},
        {"discard_inflight_on_failed_load+pin_aware_preemption", "async_load_self_reservation_with_pin_cascade"},
        {"pr57841+requeue_blockless_failed_load", "pending_head_hides_failed_load_blockless_head"},
        {"rollback_placeholders_on_failed_load+cap_rollback_full_prompt", "rollback_strands_full_prompt_sharer"},
        {"discard_inflight_on_failed_load+requeue_blockless_failed_load+pin_aware_self_preemption",
         "failed_load_blockless_head_with_pin_self_preemption"},
        {"pr57841+pin_aware_self_preemption", "pending_head_with_pin_self_preemption"},
        {"discard_inflight_on_failed_load+pr57841+pin_aware_preemption",
         "pending_head_hides_failed_load_self_reservation_with_pin_cascade"},
        {"discard_inflight_on_failed_load+pr57841+requeue_blockless_failed_load",
         "pending_head_hides_failed_load_blockless_head_and_self_reservation"},
        {"discard_inflight_on_failed_load+requeue_blockless_failed_load+pin_aware_preemption",
         "failed_load_blockless_head_with_pin_cascade"},
        {"discard_inflight_on_failed_load+pr57841+requeue_blockless_failed_load+pin_aware_preemption",
         "pending_head_hides_failed_load_blockless_head_and_self_reservation_with_pin_cascade"},
        {"rollback_placeholders_on_failed_load+pin_aware_preemption",
         "failed_load_keeps_async_placeholders_hang_with_pin_cascade"},
        {"pr57841+pin_aware_preemption", "store_pin_cascade_hides_finished_load_behind_unadmittable_head"},
        {"pr57841+rollback_placeholders_on_failed_load",
         "pending_head_hides_failed_load_keeps_async_placeholders_hang"},
    };
    return table;
}

// Finding traces that have no fix patch yet (they expect their failure on every variant they name),
// and second witnesses of a finding whose patch has its own trace above.
const std::vector<std::string>& unfixed_findings() {
    static const std::vector<std::string> names = {};
    return names;
}
const std::vector<std::string>& second_witnesses() {
    static const std::vector<std::string> names = {"multiconnector_store_first_late_load_into_foreign_block",
                                                   "multiconnector_store_first_delayed_send",
                                                   "store_tracker_not_rewound_saves_uncomputed_tokens",
                                                   "stale_tracker_save_with_tracker_not_rewound",
                                                   "failed_load_keeps_async_placeholders_hang_with_fenced_victims",
                                                   "finished_load_behind_unadmittable_head_with_fenced_victims",
                                                   "fenced_victims_hide_failed_load_keeps_async_placeholders_hang",
                                                   "failed_load_keeps_async_placeholders_hang",
                                                   "pending_head_hides_failed_load_self_reservation",
                                                   "failed_sync_load_shared_prefix_saved_fail_policy",
                                                   "failed_load_keeps_async_placeholders_hang_with_stranded_sharer",
                                                   "failed_load_keeps_async_placeholders_double_rewind",
                                                   "failed_load_keeps_async_placeholders_dropped_stale_frame"};
    return names;
}
// Finding traces of a variant from before an upstream fix (a historical release, or a preset with a
// `+pre` patch): no kvsim patch; they fail there and pass on the releases that carry the fix, or fail
// there as another known finding that +all_fixes removes.
const std::vector<std::string>& fixed_upstream_findings() {
    static const std::vector<std::string> names = {"preempted_save_count_strands_finished_request",
                                                   "preempted_save_count_strands_blocks_of_waiting_request",
                                                   "preempted_save_count_strands_blocks_behind_pin_cascade",
                                                   "store_finished_sending_for_undelayed_free",
                                                   "fenced_victims_with_store_pin_cascade"};
    return names;
}

bool any_event(const RunResult& r, EventCategory category, const std::string& request) {
    return std::any_of(r.events.begin(), r.events.end(),
                       [&](const LogEvent& e) { return e.category == category && e.request() == request; });
}

}  // namespace

TEST_CASE("corpus/findings: every expect line holds", "[findings][patch]") {
    const auto traces = all_finding_traces();
    REQUIRE(traces.size() == trace_of_patch().size() + unfixed_findings().size() + second_witnesses().size() +
                                 fixed_upstream_findings().size());
    std::vector<Variant> variants;
    for (const auto& name : variants_in_expectations(traces)) variants.push_back(require_variant(name));
    const Matrix m = run_matrix(traces, variants);
    INFO(render_matrix(m));
    CHECK(m.unmet == 0);
    CHECK(m.met >= 3 * static_cast<int>(traces.size()));
}

TEST_CASE("corpus/findings: each trace fails on v0.30.0 and passes with its own patch and with all_fixes",
          "[findings][patch]") {
    for (const auto& [patch, name] : trace_of_patch()) {
        INFO(name << " +" << patch);
        const Trace trace = finding(name);
        auto expects = [&](const std::string& variant, bool pass) {
            return std::any_of(trace.expectations.begin(), trace.expectations.end(), [&](const Expectation& e) {
                return e.variant == variant && (e.verdict == Verdict::pass) == pass;
            });
        };
        CHECK(expects("v0.30.0", false));
        CHECK(expects("v0.30.0+" + patch, true));
        CHECK(expects("v0.30.0+all_fixes", true));
        CHECK(run(name, "v0.30.0").verdict != Verdict::pass);
        CHECK(run(name, "v0.30.0+" + patch).verdict == Verdict::pass);
    }
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

TEST_CASE("+defer_save_over_sync_load: the save over a block loaded in the same step waits, then stores computed KV",
          "[findings][patch]") {
    const RunResult fixed = run("failed_sync_load_shared_prefix_saved", "v0.30.0+defer_save_over_sync_load");
    REQUIRE(fixed.verdict == Verdict::pass);
    CHECK(fixed.findings.empty());
    std::vector<int> r5_saves;
    int deferred_at = -1;
    for (const LogEvent& e : fixed.events) {
        if (e.request() != "r5") continue;
        if (e.category == EventCategory::warn && deferred_at < 0) deferred_at = e.step;
        if (e.category == EventCategory::meta && e.text("action") == "save") r5_saves.push_back(e.step);
    }
    REQUIRE(deferred_at >= 0);
    REQUIRE_FALSE(r5_saves.empty());
    CHECK(r5_saves.front() > deferred_at);  // saved on a later step, after the failed load was recomputed
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

TEST_CASE("kv_load_failure_policy=fail: a save emitted for a request that ends FINISHED_ERROR in the same step is "
          "judged with its rewound tokens",
          "[findings][checker]") {
    const RunResult broken = run("failed_sync_load_shared_prefix_saved_fail_policy", "v0.30.0");
    REQUIRE(broken.verdict == Verdict::violation);
    REQUIRE(broken.findings.size() == 1);
    const Finding& f = broken.findings.front();
    CHECK(f.signature() == "violation:save_beyond_computed_tokens");
    CHECK(f.request == "r5");
    CHECK(f.tokens == std::optional<TokenRange>(TokenRange{0, 8}));
    // r5 is gone by the end of that step: it ended FINISHED_ERROR and was freed, as upstream's fail policy does.
    const auto ended = std::find_if(broken.events.begin(), broken.events.end(), [](const LogEvent& e) {
        return e.request() == "r5" && e.category == EventCategory::free;
    });
    REQUIRE(ended != broken.events.end());
    CHECK(ended->step == f.step);
    CHECK(run("failed_sync_load_shared_prefix_saved_fail_policy", "v0.30.0+defer_save_over_sync_load").verdict ==
          Verdict::pass);
}

// Finding 6 with r1 alone: the recompute's first chunk (48 tokens) ends inside the prompt, while the
// tracker saves through the load's whole length (56 tokens): blocks exist for all of them, so only
// the new checker sees that tokens [48, 56) go to the store under valid hashes with no KV computed.
constexpr const char* kStaleSaveTrace =
    "kvsim-trace 1\n"
    "engine block_size=8 num_blocks=18 max_batched_tokens=48 max_running=16 max_model_len=2048 prefix_caching=off "
    "kv_load_failure_policy=recompute async_scheduling=off\n"
    "run seed=0 max_steps=400\n"
    "connector store role=kv_both load_async=off\n"
    "workers ranks=1 store_delay_min=1 store_delay_max=1 load_delay_min=1 load_delay_max=1 pull_delay=1\n"
    "segment s0 len=19\n"
    "store prefix=s0\n"
    "@0 arrive r1 prompt=s0+s0+s0 max_tokens=1\n"
    "@0 fault load_fail request=r1\n";

TEST_CASE("store_save_computed_checker: a save past the computed tokens after a failed sync load",
          "[findings][patch][checker]") {
    const Trace t = parse_trace(kStaleSaveTrace, "stale_save.trace");
    const RunResult broken = run_trace(t, require_variant("v0.30.0"));
    REQUIRE(broken.verdict == Verdict::violation);
    CHECK(broken.signature == "violation:save_beyond_computed_tokens");
    REQUIRE(broken.findings.size() == 1);
    const Finding& f = broken.findings.front();
    CHECK(f.request == "r1");
    CHECK(f.connector == "store");
    CHECK(f.step == 1);
    CHECK(f.blocks == std::vector<BlockId>{7});  // tokens [48, 56)
    REQUIRE(f.tokens);
    CHECK(f.tokens->end == 56);
    const RunResult fixed = run_trace(t, require_variant("v0.30.0+store_tracker_rewind"));
    CHECK(fixed.verdict == Verdict::pass);
    // Under kv_load_failure_policy=fail (every release's default) r1 ends FINISHED_ERROR: no recompute, no save.
    Trace failing = t;
    failing.engine.kv_load_failure_policy = LoadFailurePolicy::fail;
    CHECK(run_trace(failing, require_variant("v0.30.0")).verdict == Verdict::pass);

    // The corpus trace: the checker fires in the same step, after the missing-block finding.
    const RunResult corpus = run("store_tracker_not_rewound_after_failed_load", "v0.30.0");
    CHECK(corpus.signature == "violation:save_tokens_without_blocks");
    CHECK(std::any_of(corpus.findings.begin(), corpus.findings.end(),
                      [](const Finding& x) { return x.signature() == "violation:save_beyond_computed_tokens"; }));
    CHECK(run("store_tracker_not_rewound_after_failed_load", "v0.30.0+store_tracker_rewind").findings.empty());
}

TEST_CASE("store_save_computed_checker stays quiet on saves of computed tokens", "[findings][checker]") {
    // The same store, the same prompts, no failed load: every save covers computed tokens only.
    Trace t = finding("store_tracker_not_rewound_after_failed_load");
    std::erase_if(t.events, [](const Event& e) { return std::holds_alternative<FaultEvent>(e.body); });
    const RunResult r = run_trace(t, require_variant("v0.30.0"));
    CHECK(r.verdict == Verdict::pass);
    CHECK(std::any_of(r.events.begin(), r.events.end(), [](const LogEvent& e) {
        return e.category == EventCategory::meta && e.text("action") == "save";
    }));
}
