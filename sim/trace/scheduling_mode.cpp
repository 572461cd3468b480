#include "sim/trace/scheduling_mode.h"

namespace kvsim {

bool resolved_async_scheduling(const EngineConfig& engine, const Variant& variant) {
    return engine.async_scheduling.value_or(variant.async_scheduling_default == AsyncSchedulingDefault::on);
}

}  // namespace kvsim
