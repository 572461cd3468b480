#pragma once
// The scheduling mode a trace runs under: the engine line's async_scheduling, else the variant's default.
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

// SchedulerConfig.async_scheduling as resolved (VllmConfig.__post_init__ where the trace does not state it).
bool resolved_async_scheduling(const EngineConfig& engine, const Variant& variant);

}  // namespace kvsim
