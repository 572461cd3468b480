#include "cli/run_command.h"

#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "cli/registry_option.h"
#include "properties/findings/classification_view.h"
#include "cli/trace_and_variant.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/run_both_modes.h"
#include "properties/harness/run_json.h"
#include "properties/harness/run_trace.h"
#include "properties/harness/run_views.h"
#include "properties/harness/settings_view.h"
#include "properties/harness/verdict_line.h"

namespace kvsim::cli {
namespace {

std::string rendered_log(const RunResult& result, const std::string& format) {
    return format == "jsonl" ? events_jsonl(result.events) : result.log;
}

// --html and --perfetto: the views of the run, from its timeline.
bool write_views(const RunCommandOptions& opts, const TraceAndVariant& loaded, const RunResult& result,
                 const Classification& classification) {
    if (opts.html_path.empty() && opts.perfetto_path.empty()) return true;
    const Trace& trace = loaded.trace;
    const RunViewInput input{.trace = trace, .result = result, .trace_path = opts.trace_path, .trace_text = loaded.text,
                             .variant = loaded.variant.name,
                             .settings = settings_json(settings_diff(trace, loaded.variant)),
                             .registry = classification_json(classification)};
    if (!opts.html_path.empty() && !write_output_file(opts.html_path, run_page_html(input), "--html")) return false;
    return opts.perfetto_path.empty() ||
           write_output_file(opts.perfetto_path, perfetto_json(input).dump() + "\n", "--perfetto");
}

// The trace's expect line for the variant; one that names causes is judged by the built-in registry.
ExpectationCheck expectation_of(const Trace& trace, const Variant& variant, const RunResult& result) {
    if (expected_causes(trace, variant.name).empty()) return check_expectation(trace, result, variant.name);
    const std::vector<std::string> causes = causes_of_run(builtin_registry(), trace, variant, result);
    return check_expectation(trace, result, variant.name, &causes);
}

// The run's exit code: an internal error's, else 6 when the trace's expect line for the variant is
// not met (as `kvsim matrix` exits), else the verdict's.
int run_exit_code(const RunResult& result, const ExpectationCheck& expectation) {
    if (result.internal_error || expectation.status != ExpectationStatus::unmet) return exit_code_of(result);
    return exit_code::kUnmetExpectation;
}

// --async-scheduling both: the trace under each mode, each verdict line labelled with its mode
// (each log before it unless quiet), or one JSON object keyed by mode; exit: the worst code.
int run_both(const RunCommandOptions& opts, const TraceAndVariant& loaded) {
    if (!opts.log_path.empty() || !opts.html_path.empty() || !opts.perfetto_path.empty()) {
        std::cerr << "kvsim: --async-scheduling both: --log, --html and --perfetto need one mode (on or off)\n";
        return exit_code::kUsage;
    }
    RunOptions run_options;
    run_options.check_determinism = opts.check_determinism;
    const std::vector<ModeRun> runs = run_both_modes(loaded.trace, loaded.variant, run_options);
    Json json = Json::object();
    int worst = exit_code::kPass;
    for (const ModeRun& run : runs) {
        const std::string mode(mode_name(run.async_scheduling));
        const ExpectationCheck expectation = expectation_of(run.trace, loaded.variant, run.result);
        worst = std::max(worst, run_exit_code(run.result, expectation));
        if (opts.json) {
            json[mode] = run_json(run.trace, run.result, opts.trace_path, loaded.variant_name, expectation);
            json[mode]["settings"] = settings_json(settings_diff(run.trace, loaded.variant));
            continue;
        }
        if (run.result.verdict == Verdict::rejected) {
            std::cerr << "kvsim: [async_scheduling=" << mode << "] " << rejection_line(run.result, opts.trace_path)
                      << "\n";
            continue;
        }
        if (!opts.quiet) std::cout << "== async_scheduling=" << mode << "\n" << rendered_log(run.result, opts.log_format);
        std::cout << "[async_scheduling=" << mode << "] "
                  << verdict_line(run.result, opts.trace_path, loaded.variant_name, expectation)
                  << " --async-scheduling " << mode << "\n";
    }
    if (opts.json) std::cout << json.dump(2) << "\n";
    return worst;
}

// With --json or --quiet the log is written only to --log FILE: a --log-format without it would be
// dropped without a word.
bool log_format_dropped(const RunCommandOptions& opts) {
    if (!opts.log_format_given || !opts.log_path.empty() || (!opts.json && !opts.quiet)) return false;
    std::cerr << "kvsim: --log-format: with " << (opts.json ? "--json" : "--quiet")
              << " the event log is written only to --log FILE; give --log\n";
    return true;
}

}  // namespace

int run_run(const RunCommandOptions& opts) {
    if (log_format_dropped(opts)) return exit_code::kUsage;
    if (names_input(opts.log_path, opts.trace_path, "--log") || names_input(opts.html_path, opts.trace_path, "--html") ||
        names_input(opts.perfetto_path, opts.trace_path, "--perfetto"))
        return exit_code::kUsage;
    int failure = 0;
    auto loaded = load_trace_and_variant(opts.trace_path, opts.variant, &failure);
    if (!loaded) return failure;
    if (opts.async_scheduling == "both") return run_both(opts, *loaded);
    if (!opts.async_scheduling.empty()) loaded->trace.engine.async_scheduling = opts.async_scheduling == "on";
    const std::string& variant_name = loaded->variant_name;

    RunOptions run_options;
    run_options.check_determinism = opts.check_determinism;
    run_options.record_timeline = !opts.html_path.empty() || !opts.perfetto_path.empty();
    const RunResult result = run_trace(loaded->trace, loaded->variant, run_options);
    if (result.verdict == Verdict::rejected && !opts.json) {
        std::cerr << "kvsim: " << rejection_line(result, opts.trace_path) << "\n";
        return exit_code::kRejected;
    }
    const Classification classification = classify(builtin_registry(), loaded->trace, loaded->variant, result);
    if (!write_views(opts, *loaded, result, classification)) return exit_code::kOutputError;

    if (!opts.log_path.empty()) {
        if (!write_output_file(opts.log_path, rendered_log(result, opts.log_format), "--log")) return exit_code::kOutputError;
    } else if (!opts.quiet && !opts.json) {
        std::cout << rendered_log(result, opts.log_format);
    }
    const ExpectationCheck expectation = expectation_of(loaded->trace, loaded->variant, result);
    if (opts.json) {
        Json json = run_json(loaded->trace, result, opts.trace_path, variant_name, expectation);
        json["settings"] = settings_json(settings_diff(loaded->trace, loaded->variant));
        json["registry"] = classification_json(classification);
        std::cout << json.dump(2) << "\n";
    } else {
        // after the text log, before the verdict line that ends every run
        if (!opts.quiet && opts.log_format == "text" && classification.outcome != Outcome::none)
            std::cout << classification_line(classification) << "\n";
        std::cout << verdict_line(result, opts.trace_path, variant_name, expectation)
                  << (opts.async_scheduling.empty() ? "" : " --async-scheduling " + opts.async_scheduling) << "\n";
    }
    return run_exit_code(result, expectation);
}

Command add_run_command(CLI::App& app) {
    auto opts = std::make_shared<RunCommandOptions>();
    CLI::App* cmd = app.add_subcommand("run", "Replay one trace; print the event log and one verdict line");
    cmd->add_option("trace", opts->trace_path, "Trace file (format: kvsim format; - reads standard input)")->required();
    cmd->add_option("--variant", opts->variant, "Upstream variant, e.g. v0.29.0 or v0.29.0+pr55066 (default: the trace's run line)");
    cmd->add_option("--log", opts->log_path, "Write the event log to FILE instead of stdout");
    CLI::Option* log_format = cmd->add_option("--log-format", opts->log_format,
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
                    "at the end of the verdict line carries it); both: run off, then on, and print each log (unless "
                    "--quiet) and each verdict line prefixed [async_scheduling=MODE]; with --json one object "
                    "{\"off\": RESULT, \"on\": RESULT}; exit code: the larger of the two")
        ->check(CLI::IsMember({"on", "off", "both"}));
    return [opts, log_format]() -> int {
        opts->log_format_given = log_format->count() > 0;
        return run_run(*opts);
    };
}

}  // namespace kvsim::cli
