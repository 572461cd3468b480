#pragma once
// What each step-check key reads from the model (one reader per row of sim/trace/check_keys.def,
// in check_readers.cpp), as the key's canonical text, so expected and got compare as text and print as written.
#include <string>

#include "sim/core/scheduler_output.h"
#include "sim/engine/engine.h"
#include "sim/trace/step_check.h"

namespace kvsim {

// The state a check reads: the engine, and the step's batch (null when the step scheduled none).
struct CheckedState {
    const Engine& engine;
    const SchedulerOutput* batch;
};

// The value `key` reads for the item `id` (a request or block id; empty for keys without one).
std::string read_check_key(CheckKey key, const std::string& id, const CheckedState& state);

}  // namespace kvsim
