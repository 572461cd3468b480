#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "sim/cli/commands.h"
#include "sim/cli/verdict_line.h"
#include "sim/harness/exit_codes.h"
#include "sim/harness/run_trace.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"

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
        Trace trace;
        try {
            trace = parse_trace_file(opts->trace_path);
        } catch (const InputError& error) {
            std::cerr << "kvsim: " << error.what() << "\n";
            return exit_code::kInputError;
        }
        std::string variant_name = opts->variant.empty() ? trace.run.variant : opts->variant;
        if (variant_name.empty()) {
            std::cerr << "kvsim: " << opts->trace_path
                      << ": no variant: give --variant or a 'run variant=' line in the trace\n";
            return exit_code::kUsage;
        }
        std::string error;
        const auto variant = resolve_variant(variant_name, &error);
        if (!variant) {
            std::cerr << "kvsim: --variant: " << error << "\n";
            return exit_code::kUsage;
        }
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
