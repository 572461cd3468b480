#pragma once
// Liveness, judged once when a run reaches its step limit without draining: every request
// finishes, and every finished request releases its blocks. Invariant ids:
// requests_not_finished, blocks_not_released.
#include <cstdint>
#include <optional>

#include "properties/checkers/finding.h"

namespace kvsim {

class LivenessChecker {
public:
    std::string_view name() const { return "liveness_checker"; }
    // The liveness finding of an engine stopped at `max_steps` with work left, if any.
    std::optional<Finding> check_at_step_limit(const Engine& engine, int max_steps) const;
    // The same finding for an engine a StallWatch stopped at `step`, below `max_steps`, after
    // `stall_steps` steps without progress (the facts say so, and the message).
    std::optional<Finding> check_stalled(const Engine& engine, int step, int max_steps, int stall_steps) const;
};

// A search's hang budget (RunOptions::stall_steps). After the trace's last event, a step makes
// progress when fewer requests are left, fewer are unfinished, or the requests left have more
// output tokens than ever since the last request left. Every such count is bounded, so a run that
// makes none for `limit` steps in a row repeats itself or waits on nothing.
class StallWatch {
public:
    explicit StallWatch(int limit) : limit_(limit) {}
    // Called after each step that ran; true once `limit` steps in a row made no progress.
    bool stalled(const Engine& engine, int step);

private:
    struct Progress {
        std::size_t left = 0;  // requests the scheduler still holds
        int unfinished = 0;
        std::int64_t output_tokens = 0;  // of the requests left
    };
    int limit_;
    int last_progress_step_ = 0;
    std::optional<Progress> best_;
};

}  // namespace kvsim
