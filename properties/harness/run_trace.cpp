#include "properties/harness/run_trace.h"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <stdexcept>
#include <utility>

#include "properties/checkers/checker.h"
#include "properties/checkers/determinism_checker.h"
#include "properties/checkers/liveness_checker.h"
#include "properties/harness/finding_events.h"
#include "properties/harness/worker_observers.h"
#include "properties/lifecycle/lifecycle_graph.h"
#include "properties/step_checks/step_check_evaluator.h"
#include "sim/common/upstream_assertion.h"
#include "sim/engine/engine.h"
#include "sim/trace/config_rules.h"

namespace kvsim {
namespace {

// The lifecycle edges of a run's steps, into RunResult::lifecycle_edges: each edge's key is built
// and inserted once per run, not once per step that takes it.
class EdgeRecorder {
public:
    void record(const Engine& engine, RunResult& result) {
        for (const StatusTransition& t : engine.scheduler().transitions()) {
            const LifecycleState from = from_state(t.from), to = to_state(t.to);
            bool& once = seen_[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
            if (!once) result.lifecycle_edges.insert(transition_key(from, to));
            once = true;
        }
    }

private:
    std::array<std::array<bool, kNumLifecycleStates>, kNumLifecycleStates> seen_{};
};

// Ends the run on `findings` (non-empty): logs each, and the first decides the verdict.
void conclude(Engine& engine, RunResult& result, std::vector<Finding> findings) {
    for (const Finding& f : findings) log_finding(engine.log(), f);
    const Finding& first = findings.front();
    switch (first.kind) {
        case FindingKind::violation: result.verdict = Verdict::violation; break;
        case FindingKind::crash: result.verdict = Verdict::crash; break;
        case FindingKind::liveness: result.verdict = Verdict::liveness; break;
        case FindingKind::nondeterminism: result.verdict = Verdict::nondeterminism; break;
        case FindingKind::internal: result.internal_error = true; break;
        case FindingKind::mismatch: result.verdict = Verdict::mismatch; break;
        case FindingKind::rejected: result.verdict = Verdict::rejected; break;
    }
    result.signature = first.signature();
    result.message = first.message();
    result.findings = std::move(findings);
}

// Ends the run on `violations` found after step `step`; false when there are none.
bool conclude_on_violations(Engine& engine, int step, const std::vector<Violation>& violations, RunResult& result) {
    if (violations.empty()) return false;
    std::vector<Finding> findings;
    for (const Violation& v : violations) findings.push_back(violation_finding(v, step));
    conclude(engine, result, std::move(findings));
    return true;
}

// Runs step `step` and judges it (every checker sweeps everything when `full_sweep`); false when
// the run ends here (a finding).
bool run_and_check_step(Engine& engine, int step, bool full_sweep, WorkerObservers& access_checker,
                        const std::vector<std::unique_ptr<Checker>>& checkers, EdgeRecorder& edges,
                        RunResult& result) {
    try {
        engine.run_step(step);
    } catch (const UpstreamAssertion& assertion) {
        edges.record(engine, result);
        result.crash = UpstreamCrash{.id = assertion.id(),
                                     .site = parse_upstream_site(assertion.site()),
                                     .assertion = assertion.what(),
                                     .request = assertion.request(),
                                     .step = step};
        conclude(engine, result, {crash_finding(*result.crash)});
        return false;
    } catch (const std::logic_error& bug) {
        edges.record(engine, result);
        conclude(engine, result, {internal_finding(bug.what(), step)});
        return false;
    }
    edges.record(engine, result);
    std::vector<Violation> violations = access_checker.take_violations();
    for (const auto& checker : checkers) checker->check_step(engine, violations, full_sweep);
    return !conclude_on_violations(engine, step, violations, result);
}

// The full sweep after the last step, when the last step judged only what it touched.
void sweep_after_last_step(Engine& engine, int last_step, const std::vector<std::unique_ptr<Checker>>& checkers,
                           RunResult& result) {
    std::vector<Violation> violations;
    for (const auto& checker : checkers) checker->check(engine, violations);
    conclude_on_violations(engine, last_step, violations, result);
}

Finding mismatch_finding(const CheckMismatch& m) {
    Finding f;
    f.kind = FindingKind::mismatch;
    f.id = fmt::format("{}.{}", to_string(m.kind), m.key);
    f.step = m.step;
    if (m.kind != CheckKind::block) f.request = m.id;
    const auto text = [](std::string_view key, std::string value) {
        return Field{.key = key, .kind = FieldKind::text, .value = std::move(value)};
    };
    f.facts = {text("check_kind", std::string(to_string(m.kind))), text("check_id", m.id), text("key", m.key),
               text("expected", m.expected), text("got", m.got),
               Field{.key = "line", .kind = FieldKind::integer, .value = std::int64_t{m.line}}};
    return f;
}

// The checks' mismatches: the verdict when nothing else failed, else listed after the findings.
void conclude_checks(Engine& engine, const StepCheckEvaluator& checks, RunResult& result) {
    std::vector<Finding> mismatches;
    for (const CheckMismatch& m : checks.mismatches()) mismatches.push_back(mismatch_finding(m));
    if (mismatches.empty()) return;
    if (result.findings.empty() && !result.internal_error) return conclude(engine, result, std::move(mismatches));
    for (Finding& f : mismatches) result.findings.push_back(std::move(f));
}

void take_log(Engine& engine, bool render_text, RunResult& result) {
    if (render_text) {
        result.log = engine.log().text();
        result.digest = engine.log().digest();
    }
    result.events_fingerprint = engine.log().fingerprint();
    result.events = engine.log().take_events();
}

// The evaluator of the trace's checks; none without checks (or with RunOptions::step_checks off).
std::optional<StepCheckEvaluator> attach_checks(const Trace& trace, const Variant& variant, const RunOptions& options) {
    if (!options.step_checks || trace.checks.empty()) return std::nullopt;
    std::optional<StepCheckEvaluator> checks(std::in_place, trace, variant.name);
    return checks;
}

// A log nobody reads (no events, text or timeline asked for) keeps only RunOptions::muted_keeps; for
// the determinism replay it also folds every event into its fingerprint.
void mute_unread_log(Engine& engine, const RunOptions& options, RunResult& result) {
    if (options.events || options.text_log || options.record_timeline) return;
    engine.log().mute(options.muted_keeps, options.check_determinism || options.fingerprint);
    result.events_kept = options.muted_keeps;
}

RunResult run_once(const Trace& trace, const Variant& variant, const RunOptions& options) {
    RunResult result;
    Engine engine(trace, variant);
    mute_unread_log(engine, options, result);
    WorkerObservers access_checker(engine.scheduler());
    engine.set_observer(&access_checker);
    const auto checkers = make_core_checkers();
    std::optional<StepCheckEvaluator> checks = attach_checks(trace, variant, options);
    if (checks) engine.set_schedule_probe([&](const SchedulerOutput& batch) { checks->after_schedule(engine, batch); });
    std::optional<TimelineRecorder> recorder;
    if (options.record_timeline) recorder.emplace(engine);
    const int max_steps = trace.run.max_steps;
    const int period = sweep_period(options, trace.engine.num_blocks);
    int last_swept = -1;  // the last step judged by a full sweep (-1: as if before step 0)
    int last_run = -1;
    EdgeRecorder edges;

    std::optional<StallWatch> stall;
    if (options.stall_steps > 0 || options.idle_steps > 0) stall.emplace(options.stall_steps, options.idle_steps);
    int step = 0;
    bool finished = false;
    bool ended = false;
    bool stalled = false;
    while (step < max_steps) {
        if (engine.quiet()) {
            if (engine.events_exhausted()) {
                finished = true;
                break;
            }
            step = std::max(step, engine.next_event_step());  // idle engine: no steps to log
            if (step >= max_steps) break;
        }
        const bool full_sweep = step - last_swept >= period;
        if (full_sweep) last_swept = step;
        last_run = step;
        if (checks) checks->before_step(engine, step);
        const bool go_on = run_and_check_step(engine, step, full_sweep, access_checker, checkers, edges, result);
        if (recorder) recorder->record(step);
        if (!go_on) {
            ended = true;
            break;
        }
        if (checks) checks->after_step(engine, step);
        ++step;
        if (stall && stall->stalled(engine, step - 1)) {
            stalled = true;
            break;
        }
    }
    result.steps = ended ? step + 1 : step;
    if (!ended && last_run != last_swept) {
        sweep_after_last_step(engine, last_run, checkers, result);
        ended = !result.findings.empty();
    }
    if (!ended && !finished && !(engine.quiet() && engine.events_exhausted())) {  // drained on the last step
        engine.log().set_step(step);
        const LivenessChecker liveness;
        auto stuck = stalled ? liveness.check_stalled(engine, step, max_steps, stall->spent())
                             : liveness.check_at_step_limit(engine, max_steps);
        if (stuck) conclude(engine, result, {*stuck});
    }
    if (checks) {
        if (!ended) checks->after_run(engine);
        conclude_checks(engine, *checks, result);
    }
    take_log(engine, options.text_log, result);
    result.flags_read = engine.flags_read();
    if (recorder) result.timeline = recorder->finish(result.events);
    return result;
}

bool same_event(const LogEvent& a, const LogEvent& b) {
    const auto same_field = [](const Field& x, const Field& y) {
        return x.key == y.key && x.kind == y.kind && x.value == y.value;
    };
    return a.step == b.step && a.category == b.category && a.format == b.format &&
           std::equal(a.fields.begin(), a.fields.end(), b.fields.begin(), b.fields.end(), same_field);
}

// The text and digest of `events` as the run's event log renders them.
std::pair<std::string, std::uint64_t> rendered(const std::vector<LogEvent>& events) {
    EventLog log;
    for (const LogEvent& e : events) {
        log.set_step(e.step);
        log.append(e);
    }
    return {log.text(), log.digest()};
}

// The nondeterminism finding when the two replays' logs differ. Without the text log the typed
// events are compared (the text is rendered from them, so the same events are the same text), and
// the texts are rendered only when the events differ. Not inlined: the fuzz builds' coverage
// ignorelist names it (fuzz/coverage_ignorelist.txt), since its branches count the log's events.
[[gnu::noinline]] std::optional<Finding> compare_replays(const RunResult& first, const RunResult& second, bool text_log) {
    if (text_log) return DeterminismChecker().compare(first.digest, first.log, second.digest, second.log);
    if (std::equal(first.events.begin(), first.events.end(), second.events.begin(), second.events.end(), same_event))
        return std::nullopt;
    const auto [first_log, first_digest] = rendered(first.events);
    const auto [second_log, second_digest] = rendered(second.events);
    return DeterminismChecker().compare(first_digest, first_log, second_digest, second_log);
}

// A muted pair's nondeterminism finding: their fingerprints compared, and when they differ the pair
// run again with every event says where (a difference that does not show again: the fingerprints).
std::optional<Finding> compare_muted_replays(const Trace& trace, const Variant& variant, RunOptions options,
                                             const RunResult& first, const RunResult& second) {
    if (first.events_fingerprint == second.events_fingerprint) return std::nullopt;
    options.events = true;
    const RunResult again = run_trace(trace, variant, options);
    if (again.verdict == Verdict::nondeterminism) return again.findings.front();
    return DeterminismChecker().compare(first.events_fingerprint, "", second.events_fingerprint, "");
}

}  // namespace

int sweep_period(const RunOptions& options, int num_blocks) {
    if (options.sweep_period > 0) return options.sweep_period;
    return std::max(1, num_blocks / kBlocksPerSweepStep);
}

RunResult run_for_search(const Trace& trace, const Variant& variant, RunOptions options) {
    options.text_log = false;
    options.events = false;
    RunResult result = run_trace(trace, variant, options);
    if ((result.verdict == Verdict::pass && !result.internal_error) || result.events_kept == EventCategories::all())
        return result;
    options.events = true;
    return run_trace(trace, variant, options);
}

namespace {

// A configuration upstream refuses never runs: the result names the rule (sim/trace/config_rules.h).
std::optional<RunResult> rejected_run(const Trace& trace, const Variant& variant) {
    FlagReads reads;
    const std::optional<ConfigRejection> rejection = upstream_rejects(trace, variant, &reads);
    if (!rejection) return std::nullopt;
    RunResult result;
    Finding f;
    f.kind = FindingKind::rejected;
    f.id = std::string(rejection->rule->id);
    f.detail = rejection->message();
    f.facts.push_back(Field{.key = "field", .kind = FieldKind::text, .value = rejection->breach.field});
    f.facts.push_back(
        Field{.key = "line", .kind = FieldKind::integer, .value = std::int64_t{rejection->breach.line}});
    result.verdict = Verdict::rejected;
    result.signature = f.signature();
    result.message = f.message();
    result.findings.push_back(std::move(f));
    result.flags_read = reads.bits();
    return result;
}

}  // namespace

RunResult run_trace(const Trace& trace, const Variant& variant, const RunOptions& options) {
    if (auto rejected = rejected_run(trace, variant)) return std::move(*rejected);
    RunResult first = run_once(trace, variant, options);
    if (!options.check_determinism || first.internal_error) return first;
    RunOptions replay = options;
    replay.record_timeline = false;
    const RunResult second = run_once(trace, variant, replay);
    std::optional<Finding> differ = first.events_kept == EventCategories::all()
                                        ? compare_replays(first, second, options.text_log)
                                        : compare_muted_replays(trace, variant, options, first, second);
    if (differ) {
        first.verdict = Verdict::nondeterminism;
        first.signature = differ->signature();
        first.message = differ->message();
        first.findings.insert(first.findings.begin(), std::move(*differ));
    }
    return first;
}

}  // namespace kvsim
