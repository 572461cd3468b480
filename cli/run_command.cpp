#include "cli/run_command.h"

#include <fstream>
#include <iterator>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/trace_and_variant.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/run_json.h"
#include "properties/harness/run_trace.h"
#include "properties/harness/run_views.h"
#include "properties/harness/verdict_line.h"

namespace kvsim::cli {
namespace {

std::string rendered_log(const RunResult& result, const std::string& format) {
    return format == "jsonl" ? events_jsonl(result.events) : result.log;
}

bool write_file(const std::string& path, const std::string& text, const char* flag) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) std::cerr << "kvsim: " << flag << ": cannot write " << path << "\n";
    return static_cast<bool>(out);
}

// --html and --perfetto: the views of the run, from its timeline.
bool write_views(const RunCommandOptions& opts, const Trace& trace, const RunResult& result,
                 const std::string& variant) {
    std::ifstream in(opts.trace_path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const RunViewInput input{trace, result, opts.trace_path, text, variant};
    if (!opts.html_path.empty() && !write_file(opts.html_path, run_page_html(input), "--html")) return false;
    return opts.perfetto_path.empty() || write_file(opts.perfetto_path, perfetto_json(input).dump() + "\n", "--perfetto");
}

}  // namespace

int run_run(const RunCommandOptions& opts) {
    int failure = 0;
    auto loaded = load_trace_and_variant(opts.trace_path, opts.variant, &failure);
    if (!loaded) return failure;
    if (!opts.async_scheduling.empty()) loaded->trace.engine.async_scheduling = opts.async_scheduling == "on";
    const std::string& variant_name = loaded->variant_name;

    RunOptions run_options;
    run_options.check_determinism = opts.check_determinism;
    run_options.record_timeline = !opts.html_path.empty() || !opts.perfetto_path.empty();
    const RunResult result = run_trace(loaded->trace, loaded->variant, run_options);
    if (!write_views(opts, loaded->trace, result, variant_name)) return exit_code::kUsage;

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
        std::cout << verdict_line(result, opts.trace_path, variant_name, expectation)
                  << (opts.async_scheduling.empty() ? "" : " --async-scheduling " + opts.async_scheduling) << "\n";
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
    cmd->add_option("--html", opts->html_path,
                    "Also write the run as one self-contained HTML page (swimlanes, block tables, store jobs, the "
                    "finding and its causal slice; no network)");
    cmd->add_option("--perfetto", opts->perfetto_path,
                    "Also write the run as Chrome trace-event JSON (Perfetto, chrome://tracing): a track per request, "
                    "store rank and connector; 1 step = 1 ms");
    cmd->add_option("--async-scheduling", opts->async_scheduling,
                    "Run with async scheduling on or off whatever the trace's engine line says (the repro command "
                    "at the end of the verdict line carries it)")
        ->check(CLI::IsMember({"on", "off"}));
    return [opts]() -> int { return run_run(*opts); };
}

}  // namespace kvsim::cli
