#pragma once
// Kept apart from the generators: sim/engine's ConnectorStack and trace_builder's share a name.
#include <string>

#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim::propgen {

// Steps the engine like run_trace and compares, after every step, each core checker's step check
// (never sweeping) with a fresh reference's full sweep. Empty when a step check reports nothing or
// exactly the sweep's report at every step; otherwise what differed first.
std::string step_checks_disagree(const Trace& trace, const Variant& variant);

}  // namespace kvsim::propgen
