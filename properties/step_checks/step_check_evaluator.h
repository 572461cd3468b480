#pragma once
// Evaluates a trace's step checks during one run, reading the model's state without changing
// it, and keeps every check whose value differs (the verdict `mismatch`, properties/harness).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/scheduler_output.h"
#include "sim/engine/engine.h"
#include "sim/trace/trace.h"

namespace kvsim {

// One key of one check line that read another value than the line states.
struct CheckMismatch {
    int step = 0;
    int line = 0;  // the check's source line (0: built in memory)
    CheckKind kind = CheckKind::request;
    std::string id;   // the request or block; empty for keys without one
    std::string key;  // the key's name
    std::string expected;
    std::string got;
};

class StepCheckEvaluator {
public:
    // The checks of `trace` that apply under the variant named `variant`.
    StepCheckEvaluator(const Trace& trace, const std::string& variant);

    // Checks of steps before `step` the run skipped (an idle engine changes nothing), read now.
    void before_step(const Engine& engine, int step);
    // After schedule() of `step`: keeps the batch, reads the at=schedule checks of `step`.
    void after_schedule(const Engine& engine, const SchedulerOutput& batch);
    // At the end of `step`: reads its at=end checks.
    void after_step(const Engine& engine, int step);
    // After the last step: every check left (steps the run never reached), on the final state.
    void after_run(const Engine& engine);

    const std::vector<CheckMismatch>& mismatches() const { return mismatches_; }

private:
    void evaluate(const Engine& engine, const StepCheck& check, int step);
    // Evaluates the pending checks of `phase` while their step is <= `step` (< when `before`).
    void drain(const Engine& engine, CheckPhase phase, int step, bool before);

    std::vector<const StepCheck*> schedule_checks_;
    std::vector<const StepCheck*> end_checks_;
    std::size_t next_schedule_ = 0;
    std::size_t next_end_ = 0;
    std::optional<SchedulerOutput> batch_;  // the batch of the step being run
    std::vector<CheckMismatch> mismatches_;
};

}  // namespace kvsim
