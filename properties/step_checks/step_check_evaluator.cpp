#include "properties/step_checks/step_check_evaluator.h"

#include <algorithm>

#include "properties/step_checks/check_readers.h"

namespace kvsim {

StepCheckEvaluator::StepCheckEvaluator(const Trace& trace, const std::string& variant) {
    for (const StepCheck& c : trace.checks) {
        const auto& v = c.body.variants;
        if (!v.empty() && std::find(v.begin(), v.end(), variant) == v.end()) continue;
        (c.body.at == CheckPhase::schedule ? schedule_checks_ : end_checks_).push_back(&c);
    }
}

void StepCheckEvaluator::evaluate(const Engine& engine, const StepCheck& check, int step) {
    const bool batch_of_step = batch_ && batch_->step == check.step && step == check.step;
    const CheckedState state{.engine = engine, .batch = batch_of_step ? &*batch_ : nullptr};
    for (const CheckAssert& a : check.body.asserts) {
        std::string got = read_check_key(a.key, check.body.id, state);
        if (got == a.expected) continue;
        mismatches_.push_back({.step = check.step,
                               .line = check.line,
                               .kind = check.body.kind,
                               .id = check.body.id,
                               .key = std::string(check_key_spec(a.key).name),
                               .expected = a.expected,
                               .got = std::move(got)});
    }
}

void StepCheckEvaluator::drain(const Engine& engine, CheckPhase phase, int step, bool before) {
    auto& checks = phase == CheckPhase::schedule ? schedule_checks_ : end_checks_;
    std::size_t& next = phase == CheckPhase::schedule ? next_schedule_ : next_end_;
    while (next < checks.size() && (before ? checks[next]->step < step : checks[next]->step <= step))
        evaluate(engine, *checks[next++], step);
}

void StepCheckEvaluator::before_step(const Engine& engine, int step) {
    batch_.reset();
    drain(engine, CheckPhase::schedule, step, true);
    drain(engine, CheckPhase::end, step, true);
}

void StepCheckEvaluator::after_schedule(const Engine& engine, const SchedulerOutput& batch) {
    batch_ = batch;
    drain(engine, CheckPhase::schedule, batch.step, false);
}

void StepCheckEvaluator::after_step(const Engine& engine, int step) { drain(engine, CheckPhase::end, step, false); }

void StepCheckEvaluator::after_run(const Engine& engine) {
    batch_.reset();
    constexpr int kEveryStep = 1 << 30;
    drain(engine, CheckPhase::schedule, kEveryStep, false);
    drain(engine, CheckPhase::end, kEveryStep, false);
}

}  // namespace kvsim
