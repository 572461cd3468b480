#include "cli/run_command.h"

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/trace_and_variant.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/run_json.h"
#include "properties/harness/run_trace.h"
#include "properties/harness/verdict_line.h"

namespace kvsim::cli {
namespace {

std::string rendered_log(const RunResult& result, const std::string& format) {
    return format == "jsonl" ? events_jsonl(result.events) : result.log;
}

}  // namespace

int run_run(const RunCommandOptions& opts) {
    int failure = 0;
    const auto loaded = load_trace_and_variant(opts.trace_path, opts.variant, &failure);
    if (!loaded) return failure;
    const std::string& variant_name = loaded->variant_name;

    RunOptions run_options;
    run_options.check_determinism = opts.check_determinism;
    const RunResult result = run_trace(loaded->trace, loaded->variant, run_options);

    if (!opts.log_path.empty()) {
        std::ofstream log(opts.log_path, std::ios::binary);
        log << rendered_log(result, opts.log_format);
        if (!log) {
            std::cerr << "kvsim: --log: cannot write " << opts.log_path << "\n";
            return exit_code::kUsage;
        }
    } else if (!opts.quiet && !opts.json) {
        std::cout << rendered_log(result, opts.log_format);
    }
    const ExpectationCheck expectation = check_expectation(loaded->trace, result, variant_name);
    if (opts.json)
        std::cout << run_json(loaded->trace, result, opts.trace_path, variant_name, expectation).dump(2) << "\n";
    else
        std::cout << verdict_line(result, opts.trace_path, variant_name, expectation) << "\n";
    return result.internal_error ? exit_code::kInternalError : exit_code::of(result.verdict);
}

Command add_run_command(CLI::App& app) {
    auto opts = std::make_shared<RunCommandOptions>();
    CLI::App* cmd = app.add_subcommand("run", "Replay one trace; print the event log and one verdict line");
    cmd->add_option("trace", opts->trace_path, "Trace file (format: kvsim format)")->required();
    cmd->add_option("--variant", opts->variant, "Upstream variant, e.g. v0.29.0 or v0.29.0+pr55066 (default: the trace's run line)");
    cmd->add_option("--log", opts->log_path, "Write the event log to FILE instead of stdout");
    cmd->add_option("--log-format", opts->log_format,
                    "Event log format: text (the step log), or jsonl (one JSON object per event: step, category, fields)")
        ->check(CLI::IsMember({"text", "jsonl"}));
    cmd->add_flag("--quiet,-q", opts->quiet, "Print only the verdict line");
    cmd->add_flag("--check-determinism", opts->check_determinism, "Replay twice and compare the log digests");
    cmd->add_flag("--json", opts->json,
                  "Print the whole result as one JSON object (verdict, signature, steps, digest, findings, expect, "
                  "repro) instead of the log and the verdict line; the log still goes to --log FILE");
    return [opts]() -> int { return run_run(*opts); };
}

}  // namespace kvsim::cli
