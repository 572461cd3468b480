// kvsim minimize: the smallest trace that still gives a finding's exact signature, printed as a
// trace with one expect line for the variant (fuzz/minimize/minimize_finding.h does the work).
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "cli/registry_option.h"
#include "cli/trace_and_variant.h"
#include "fuzz/minimize/minimize_finding.h"
#include "properties/harness/exit_codes.h"

namespace kvsim::cli {

struct MinimizeOptions {
    std::string trace_path;
    std::string variant;    // empty: the trace's run line
    std::string signature;  // empty: the one the trace gives now
    std::string out_path;   // empty: stdout
    int max_runs = FindingToMinimize{}.max_runs;
    std::string registry;  // empty: the built-in registry
};

namespace {

// Prints why nothing was minimised; returns the exit code.
int report_not_minimized(const MinimizedFinding& minimized, const MinimizeOptions& options,
                         const std::string& variant_name) {
    const std::string where = "kvsim minimize: " + options.trace_path;
    switch (minimized.outcome) {
        case MinimizeOutcome::internal_error:
            std::cerr << where << " under " << variant_name
                      << ": kvsim internal error, nothing to keep: " << minimized.original.message << "\n";
            return exit_code::kInternalError;
        case MinimizeOutcome::passes:
            std::cerr << where << " passes under " << variant_name << ": no finding to keep\n";
            return 1;
        case MinimizeOutcome::rejected:
            std::cerr << where << " under " << variant_name << ": " << minimized.original.message << "\n";
            return exit_code::kRejected;
        case MinimizeOutcome::not_reproduced:
        case MinimizeOutcome::kept: break;
    }
    const std::string& now = minimized.original.signature;
    std::cerr << where << " under " << variant_name << " gives "
              << (now.empty() ? std::string("pass") : "signature=" + now) << ", not signature=" << minimized.signature
              << "\n";
    return 1;
}

}  // namespace

int run_minimize(const MinimizeOptions& options) {
    int failure = 0;
    const Registry* registry = registry_from_option(options.registry, &failure);
    if (registry == nullptr) return failure;
    auto loaded = load_trace_and_variant(options.trace_path, options.variant, &failure);
    if (!loaded) return failure;
    const FindingToMinimize finding{.trace = std::move(loaded->trace),
                                    .source = options.trace_path,
                                    .variant = loaded->variant,
                                    .signature = options.signature,
                                    .max_runs = options.max_runs,
                                    .registry = registry};
    const MinimizedFinding minimized = minimize_finding(finding);
    if (minimized.outcome != MinimizeOutcome::kept) return report_not_minimized(minimized, options, loaded->variant_name);

    const std::string text = minimized_trace_text(minimized, finding);
    if (!options.out_path.empty()) {
        if (!write_output_file(options.out_path, text, "-o")) return exit_code::kOutputError;
    } else {
        std::cout << text;
    }
    std::cerr << minimize_summary_line(minimized, finding) << "\n";
    return exit_code::kPass;
}

Command add_minimize_command(CLI::App& app) {
    auto opts = std::make_shared<MinimizeOptions>();
    CLI::App* cmd = app.add_subcommand(
        "minimize", "Shrink a failing trace, keeping its exact signature and its registry classification; print the "
                    "minimal trace with its expect line");
    cmd->add_option("trace", opts->trace_path, "Failing trace (a fuzzer crash artifact is one)")->required();
    cmd->add_option("--variant", opts->variant, "Upstream variant (default: the trace's run line)");
    cmd->add_option("--signature", opts->signature, "Signature to keep (default: the one the trace gives now)");
    cmd->add_option("-o,--output", opts->out_path, "Write the minimal trace to FILE instead of stdout");
    cmd->add_option("--registry", opts->registry,
                    "Registry of known findings; the minimal trace keeps the input's classification (default: built in)");
    cmd->add_option("--max-runs", opts->max_runs, "Bound on replays while shrinking")->check(CLI::Range(1, 10'000'000));
    return [opts] { return run_minimize(*opts); };
}

}  // namespace kvsim::cli
