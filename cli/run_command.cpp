#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/trace_and_variant.h"
#include "cli/verdict_line.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/run_trace.h"

namespace kvsim::cli {

Command add_run_command(CLI::App& app) {
    struct Options {
        std::string trace_path;
        std::string variant;
        std::string log_path;
        bool quiet = false;
        bool check_determinism = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("run", "Replay one trace; print the event log and one verdict line");
    cmd->add_option("trace", opts->trace_path, "Trace file (format: kvsim format)")->required();
    cmd->add_option("--variant", opts->variant, "Upstream variant, e.g. v0.29.0 or v0.29.0+pr55066 (default: the trace's run line)");
    cmd->add_option("--log", opts->log_path, "Write the event log to FILE instead of stdout");
    cmd->add_flag("--quiet,-q", opts->quiet, "Print only the verdict line");
    cmd->add_flag("--check-determinism", opts->check_determinism, "Replay twice and compare the log digests");

    return [opts]() -> int {
        int failure = 0;
        const auto loaded = load_trace_and_variant(opts->trace_path, opts->variant, &failure);
        if (!loaded) return failure;
        const Trace& trace = loaded->trace;
        const std::string& variant_name = loaded->variant_name;
        const Variant* variant = &loaded->variant;

        RunOptions run_options;
        run_options.check_determinism = opts->check_determinism;
        const RunResult result = run_trace(trace, *variant, run_options);

        if (!opts->log_path.empty()) {
            std::ofstream log(opts->log_path, std::ios::binary);
            log << result.log;
            if (!log) {
                std::cerr << "kvsim: --log: cannot write " << opts->log_path << "\n";
                return exit_code::kUsage;
            }
        } else if (!opts->quiet) {
            std::cout << result.log;
        }
        std::cout << verdict_line(result, opts->trace_path, variant_name, expectation_note(trace, result, variant_name))
                  << "\n";
        return result.internal_error ? exit_code::kInternalError : exit_code::of(result.verdict);
    };
}

}  // namespace kvsim::cli
