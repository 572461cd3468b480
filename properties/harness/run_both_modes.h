#pragma once
// One trace under both scheduling modes (`kvsim run --async-scheduling both`): the engine's
// async_scheduling key forced off, then on, everything else as the trace states it.
#include <string_view>
#include <vector>

#include "properties/harness/run_trace.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

struct ModeRun {
    bool async_scheduling = false;
    Trace trace;  // the trace as run: its engine line states the mode
    RunResult result;
};

// "on" or "off", the value of the engine key and of `--async-scheduling`.
std::string_view mode_name(bool async_scheduling);

// Two runs: async_scheduling=off first, then on.
std::vector<ModeRun> run_both_modes(const Trace& trace, const Variant& variant, const RunOptions& options);

// The exit code of one run's verdict (exit_codes.h); `kvsim run` also weighs the expect line.
int exit_code_of(const RunResult& result);

}  // namespace kvsim
