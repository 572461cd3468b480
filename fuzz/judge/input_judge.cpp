#include "fuzz/judge/input_judge.h"

#include <cstdint>
#include <optional>

namespace kvsim {

bool stopped_idle(const RunResult& result, const RunOptions& options) {
    if (result.verdict != Verdict::liveness || result.findings.empty()) return false;
    if (options.idle_steps <= 0 || options.idle_steps >= options.stall_steps) return false;
    return result.findings.front().fact("stalled") == std::optional<std::int64_t>(options.idle_steps);
}

namespace {

bool undecided(const InputJudgement& j) {
    return j.classification.is_new();
}

void add(VariantReruns* into, const VariantReruns& r) {
    if (into == nullptr) return;
    into->made += r.made;
    into->shared += r.shared;
    into->steps += r.steps;
}

Classification classified(const Registry& registry, const Trace& trace, const Variant& variant,
                          const RunResult& result, const RunOptions& options, VariantReruns* reruns) {
    Classification c = classify(registry, trace, variant, result, options);
    add(reruns, c.reruns);
    return c;
}

}  // namespace

InputJudgement judge_input(const Registry& registry, const Trace& trace, const Variant& variant, RunOptions options,
                           VariantReruns* reruns) {
    InputJudgement j;
    j.result = run_trace(trace, variant, options);
    j.steps += j.result.steps;
    j.classification = classified(registry, trace, variant, j.result, options, reruns);
    if (undecided(j) && stopped_idle(j.result, options)) {
        // a slow recomputation, or a counterfactual that drains slowly, fits the hang budget: cheaper
        // than a run to the step limit
        j.idle_rerun = true;
        options.idle_steps = 0;
        j.result = run_trace(trace, variant, options);
        j.steps += j.result.steps;
        j.classification = classified(registry, trace, variant, j.result, options, reruns);
    }
    if (undecided(j)) {
        j.new_rerun = true;
        options.sweep_period = 0;
        options.stall_steps = 0;
        options.idle_steps = 0;
        j.result = run_for_search(trace, variant, options);
        j.steps += j.result.steps;
        j.classification = classified(registry, trace, variant, j.result, options, reruns);
    }
    return j;
}

}  // namespace kvsim
