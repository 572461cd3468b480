#include "sim/trace/scheduling_mode.h"

namespace kvsim {

bool resolved_async_scheduling(const EngineConfig& engine, const Variant& variant) {
    if (engine.async_scheduling) return *engine.async_scheduling;
    return variant.flag<&Variant::async_scheduling_default>() == AsyncSchedulingDefault::on;
}

}  // namespace kvsim
