#pragma once
// Liveness, judged once when a run reaches its step limit without draining: every request
// finishes, and every finished request releases its blocks. Invariant ids:
// requests_not_finished, blocks_not_released.
#include <cstdint>
#include <optional>

#include "properties/checkers/finding.h"
#include "sim/common/ordered_map.h"

namespace kvsim {

class LivenessChecker {
public:
    std::string_view name() const { return "liveness_checker"; }
    // The liveness finding of an engine stopped at `max_steps` with work left, if any: none when no
    // request is left and the connector is idle (a batch in flight holds nothing).
    std::optional<Finding> check_at_step_limit(const Engine& engine, int max_steps) const;
    // The same finding for an engine a StallWatch stopped at `step`, below `max_steps`, after
    // `stall_steps` steps without progress (the facts say so, and the message).
    std::optional<Finding> check_stalled(const Engine& engine, int step, int max_steps, int stall_steps) const;
};

// A search's hang budgets (RunOptions::stall_steps and idle_steps). After the trace's last event, a
// step makes progress when fewer requests are left, fewer are unfinished, or the requests left have
// more output tokens than ever since the last request left. Every such count is bounded, so a run
// that makes none for `limit` steps in a row repeats itself or waits on nothing. The idle budget
// counts from the last event too, and a step is busy there when it makes progress, some request
// computes past the most it ever computed (a prefill advances, a recomputation after a preemption
// does not), a fault is in effect (a store lookup held pending) or an armed failure fires. A
// failure armed for a job that never comes changes nothing, so it does not keep the run busy. Those
// counts are bounded too; the idle budget (0: off) can be far shorter than `limit`, which must
// cover a whole prefill done chunk by chunk.
class StallWatch {
public:
    // A budget of 0 is off.
    explicit StallWatch(int limit, int idle_limit = 0) : limit_(limit), idle_limit_(idle_limit) {}
    // Called after each step that ran; true once either budget ran out.
    bool stalled(const Engine& engine, int step);
    // The budget that ran out (the finding's fact `stalled`); meaningful once stalled() said so.
    int spent() const { return spent_; }

private:
    struct Progress {
        std::size_t left = 0;  // requests the scheduler still holds
        int unfinished = 0;
        std::int64_t output_tokens = 0;  // of the requests left
    };
    // Whether this step made progress (updates best_).
    bool progressed(const Engine& engine);
    // Whether some request computed past its high-water mark (updates computed_).
    bool computed_further(const Engine& engine);

    int limit_;
    int idle_limit_;
    int spent_ = 0;
    int last_progress_step_ = 0;
    int last_busy_step_ = 0;
    int faults_fired_ = 0;  // FaultSchedule::fired() after the last step watched
    std::optional<Progress> best_;
    OrderedMap<int> computed_;  // request -> the most tokens it ever computed (with the idle budget on)
};

}  // namespace kvsim
