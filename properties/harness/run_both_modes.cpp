#include "properties/harness/run_both_modes.h"

#include <algorithm>

#include "properties/harness/exit_codes.h"
#include "sim/common/on_off.h"

namespace kvsim {

std::string_view mode_name(bool async_scheduling) { return on_off(async_scheduling); }

std::vector<ModeRun> run_both_modes(const Trace& trace, const Variant& variant, const RunOptions& options) {
    std::vector<ModeRun> runs;
    for (const bool async : {false, true}) {
        ModeRun run{.async_scheduling = async, .trace = trace, .result = {}};
        run.trace.engine.async_scheduling = async;
        run.result = run_trace(run.trace, variant, options);
        runs.push_back(std::move(run));
    }
    return runs;
}

int exit_code_of(const RunResult& result) {
    return result.internal_error ? exit_code::kInternalError : exit_code::of(result.verdict);
}

}  // namespace kvsim
