#pragma once
// Liveness, judged once when a run reaches its step limit without draining: every request
// finishes, and every finished request releases its blocks. Invariant ids:
// requests_not_finished, blocks_not_released.
#include <optional>

#include "properties/checkers/finding.h"

namespace kvsim {

class LivenessChecker {
public:
    std::string_view name() const { return "liveness_checker"; }
    // The liveness finding of an engine stopped at `max_steps` with work left, if any.
    std::optional<Finding> check_at_step_limit(const Engine& engine, int max_steps) const;
};

}  // namespace kvsim
