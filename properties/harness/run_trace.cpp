#include "properties/harness/run_trace.h"

#include <stdexcept>

#include "properties/checkers/checker.h"
#include "properties/checkers/determinism_checker.h"
#include "properties/checkers/liveness_checker.h"
#include "properties/checkers/worker_access_checker.h"
#include "properties/harness/finding_events.h"
#include "properties/lifecycle/lifecycle_graph.h"
#include "sim/common/upstream_assertion.h"
#include "sim/engine/engine.h"

namespace kvsim {
namespace {

void record_transitions(const Engine& engine, RunResult& result) {
    for (const StatusTransition& t : engine.scheduler().transitions()) result.lifecycle_edges.insert(transition_key(t));
}

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
    }
    result.signature = first.signature();
    result.message = first.message();
    result.findings = std::move(findings);
}

// Runs step `step` and judges it; false when the run ends here (a finding).
bool run_and_check_step(Engine& engine, int step, WorkerAccessChecker& access_checker,
                        const std::vector<std::unique_ptr<Checker>>& checkers, RunResult& result) {
    try {
        engine.run_step(step);
    } catch (const UpstreamAssertion& assertion) {
        record_transitions(engine, result);
        result.crash = UpstreamCrash{.id = assertion.id(),
                                     .site = parse_upstream_site(assertion.site()),
                                     .assertion = assertion.what(),
                                     .request = assertion.request(),
                                     .step = step};
        conclude(engine, result, {crash_finding(*result.crash)});
        return false;
    } catch (const std::logic_error& bug) {
        record_transitions(engine, result);
        conclude(engine, result, {internal_finding(bug.what(), step)});
        return false;
    }
    record_transitions(engine, result);
    std::vector<Violation> violations = access_checker.take_violations();
    for (const auto& checker : checkers) checker->check(engine, violations);
    if (violations.empty()) return true;
    std::vector<Finding> findings;
    for (const Violation& v : violations) findings.push_back(violation_finding(v, step));
    conclude(engine, result, std::move(findings));
    return false;
}

RunResult run_once(const Trace& trace, const Variant& variant, bool record_timeline) {
    RunResult result;
    Engine engine(trace, variant);
    WorkerAccessChecker access_checker(engine.scheduler());
    engine.set_observer(&access_checker);
    const auto checkers = make_core_checkers();
    std::optional<TimelineRecorder> recorder;
    if (record_timeline) recorder.emplace(engine);
    const int max_steps = trace.run.max_steps;

    int step = 0;
    bool finished = false;
    bool ended = false;
    while (step < max_steps) {
        if (engine.quiet()) {
            if (engine.events_exhausted()) {
                finished = true;
                break;
            }
            step = std::max(step, engine.next_event_step());  // idle engine: no steps to log
            if (step >= max_steps) break;
        }
        const bool go_on = run_and_check_step(engine, step, access_checker, checkers, result);
        if (recorder) recorder->record(step);
        if (!go_on) {
            ended = true;
            break;
        }
        ++step;
    }
    result.steps = ended ? step + 1 : step;
    if (!ended && !finished) {
        engine.log().set_step(step);
        if (auto stuck = LivenessChecker().check_at_step_limit(engine, max_steps)) conclude(engine, result, {*stuck});
    }
    result.log = engine.log().text();
    result.digest = engine.log().digest();
    result.events = engine.log().events();
    if (recorder) result.timeline = recorder->finish(result.events);
    return result;
}

}  // namespace

RunResult run_trace(const Trace& trace, const Variant& variant, const RunOptions& options) {
    RunResult first = run_once(trace, variant, options.record_timeline);
    if (!options.check_determinism || first.internal_error) return first;
    const RunResult second = run_once(trace, variant, false);
    if (auto differ = DeterminismChecker().compare(first.digest, first.log, second.digest, second.log)) {
        first.verdict = Verdict::nondeterminism;
        first.signature = differ->signature();
        first.message = differ->message();
        first.findings.insert(first.findings.begin(), std::move(*differ));
    }
    return first;
}

}  // namespace kvsim
