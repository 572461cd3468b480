#include "properties/harness/run_trace.h"

#include <fmt/format.h>

#include <stdexcept>

#include "properties/checkers/checker.h"
#include "properties/checkers/worker_access_checker.h"
#include "properties/lifecycle/lifecycle_graph.h"
#include "sim/common/upstream_assertion.h"
#include "sim/engine/engine.h"

namespace kvsim {
namespace {

std::string describe(const Violation& v) {
    std::string text = v.invariant;
    if (!v.request.empty()) text += fmt::format(" request={}", v.request);
    if (!v.blocks.empty()) text += fmt::format(" blocks={}", format_blocks(v.blocks));
    return text + ": " + v.detail;
}

void record_transitions(const Engine& engine, RunResult& result) {
    for (const StatusTransition& t : engine.scheduler().transitions()) result.lifecycle_edges.insert(transition_key(t));
}

int count_unfinished(const Engine& engine) {
    int n = 0;
    for (const auto& [id, req] : engine.scheduler().requests()) n += is_finished(req->status) ? 0 : 1;
    return n;
}

RunResult run_once(const Trace& trace, const Variant& variant) {
    RunResult result;
    Engine engine(trace, variant);
    WorkerAccessChecker access_checker(engine.scheduler());
    engine.set_observer(&access_checker);
    const auto checkers = make_core_checkers();
    const int max_steps = trace.run.max_steps;

    int step = 0;
    bool finished = false;
    while (step < max_steps) {
        if (engine.quiet()) {
            if (engine.events_exhausted()) {
                finished = true;
                break;
            }
            step = std::max(step, engine.next_event_step());  // idle engine: no steps to log
            if (step >= max_steps) break;
        }
        try {
            engine.run_step(step);
        } catch (const UpstreamAssertion& assertion) {
            record_transitions(engine, result);
            engine.log().emitf("crash", "{}: AssertionError: {}", assertion.site(), assertion.what());
            result.verdict = Verdict::crash;
            result.signature = "crash:" + assertion.id();
            result.message = fmt::format("step {}: {}: AssertionError: {}", step, assertion.site(), assertion.what());
            result.steps = step + 1;
            break;
        } catch (const std::logic_error& bug) {
            record_transitions(engine, result);
            engine.log().emitf("internal", "{}", bug.what());
            result.internal_error = true;
            result.message = fmt::format("step {}: kvsim internal error: {}", step, bug.what());
            result.steps = step + 1;
            break;
        }
        record_transitions(engine, result);
        std::vector<Violation> violations = access_checker.take_violations();
        for (const auto& checker : checkers) checker->check(engine, violations);
        if (!violations.empty()) {
            for (const auto& v : violations) engine.log().emitf("violation", "{}", describe(v));
            result.verdict = Verdict::violation;
            result.signature = "violation:" + violations.front().invariant;
            result.message = fmt::format("step {}: {}", step, describe(violations.front()));
            result.steps = step + 1;
            break;
        }
        ++step;
    }

    if (result.verdict == Verdict::pass && !result.internal_error) {
        result.steps = step;
        if (!finished) {
            const int unfinished = count_unfinished(engine);
            const int alive = static_cast<int>(engine.scheduler().requests().size());
            engine.log().set_step(step);
            engine.log().emitf("liveness", "max_steps={} unfinished={} held={}", max_steps, unfinished, alive - unfinished);
            result.verdict = Verdict::liveness;
            result.signature = unfinished > 0 ? "liveness:requests_not_finished" : "liveness:blocks_not_released";
            result.message = fmt::format("step limit {} reached: {} request(s) unfinished, {} finished but holding blocks",
                                         max_steps, unfinished, alive - unfinished);
        }
    }
    result.log = engine.log().text();
    result.digest = engine.log().digest();
    return result;
}

}  // namespace

RunResult run_trace(const Trace& trace, const Variant& variant, const RunOptions& options) {
    RunResult first = run_once(trace, variant);
    if (!options.check_determinism || first.internal_error) return first;
    const RunResult second = run_once(trace, variant);
    if (second.digest != first.digest || second.log != first.log) {
        first.verdict = Verdict::nondeterminism;
        first.signature = "nondeterminism:log_digest";
        first.message = fmt::format("two replays disagree: digest {:016x} vs {:016x}", first.digest, second.digest);
    }
    return first;
}

}  // namespace kvsim
