// kvsim explain: the causal slice of a run's finding as a dozen lines to paste into an upstream
// issue (properties/harness/causal_slice.h does the work).
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/trace_and_variant.h"
#include "properties/harness/causal_slice.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/run_both_modes.h"

namespace kvsim::cli {

struct ExplainOptions {
    std::string trace_path;
    std::string variant;  // empty: the trace's run line
    std::size_t max_events = 12;
};

int run_explain(const ExplainOptions& options) {
    int failure = 0;
    const auto loaded = load_trace_and_variant(options.trace_path, options.variant, &failure);
    if (!loaded) return failure;
    const RunResult result = run_trace(loaded->trace, loaded->variant);
    std::cout << explain_run(loaded->trace, result, options.trace_path, loaded->variant, options.max_events);
    if (result.findings.empty()) return exit_code::kPass;
    return exit_code_of(result);
}

Command add_explain_command(CLI::App& app) {
    auto opts = std::make_shared<ExplainOptions>();
    CLI::App* cmd = app.add_subcommand(
        "explain", "Replay one trace; print its finding's causal slice (the events that touched the request, blocks "
                   "or job it names, and the trace lines that started them)");
    cmd->add_option("trace", opts->trace_path, "Trace file")->required();
    cmd->add_option("--variant", opts->variant, "Upstream variant (default: the trace's run line)");
    cmd->add_option("--max-events", opts->max_events, "Event lines to print; the middle of a longer slice is elided")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000}));
    return [opts] { return run_explain(*opts); };
}

}  // namespace kvsim::cli
