// kvsim minimize: the smallest trace that still gives a finding's exact signature
// (fuzz/minimize/minimize.h), printed as a trace with one expect line for the variant.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/trace_and_variant.h"
#include "cli/verdict_line.h"
#include "properties/harness/exit_codes.h"
#include "fuzz/minimize/minimize.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/trace_printer.h"

namespace kvsim::cli {
namespace {

// Text safe for a trace comment: printable ASCII, one line, bounded.
std::string comment_text(std::string_view text) {
    std::string out;
    for (const char c : text) {
        if (out.size() >= 300) {
            out += "...";
            break;
        }
        out += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    return out;
}

}  // namespace

Command add_minimize_command(CLI::App& app) {
    struct Options {
        std::string trace_path;
        std::string variant;
        std::string signature;
        std::string out_path;
        int max_runs = MinimizeOptions{}.max_runs;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "minimize", "Shrink a failing trace, keeping its exact signature; print the minimal trace with its expect line");
    cmd->add_option("trace", opts->trace_path, "Failing trace (a fuzzer crash artifact is one)")->required();
    cmd->add_option("--variant", opts->variant, "Upstream variant (default: the trace's run line)");
    cmd->add_option("--signature", opts->signature, "Signature to keep (default: the one the trace gives now)");
    cmd->add_option("-o,--output", opts->out_path, "Write the minimal trace to FILE instead of stdout");
    cmd->add_option("--max-runs", opts->max_runs, "Bound on replays while shrinking")->check(CLI::Range(1, 10'000'000));

    return [opts]() -> int {
        int failure = 0;
        auto loaded = load_trace_and_variant(opts->trace_path, opts->variant, &failure);
        if (!loaded) return failure;
        Trace& trace = loaded->trace;
        const std::string& variant_name = loaded->variant_name;
        const Variant* variant = &loaded->variant;

        std::string signature = opts->signature;
        if (signature.empty()) {
            const RunResult first = run_trace(trace, *variant);
            if (first.internal_error) {
                std::cerr << "kvsim minimize: " << opts->trace_path << " under " << variant_name
                          << ": kvsim internal error, nothing to keep: " << first.message << "\n";
                return exit_code::kInternalError;
            }
            if (first.signature.empty()) {
                std::cerr << "kvsim minimize: " << opts->trace_path << " passes under " << variant_name
                          << ": no finding to keep\n";
                return 1;
            }
            signature = first.signature;
        }

        MinimizeStats stats;
        MinimizeOptions options;
        options.max_runs = opts->max_runs;
        options.stats = &stats;
        Trace minimal = minimize_trace(trace, *variant, signature, options);
        if (!stats.reproduced) {
            const RunResult now = run_trace(trace, *variant);
            std::cerr << "kvsim minimize: " << opts->trace_path << " under " << variant_name << " gives "
                      << (now.signature.empty() ? std::string("pass") : "signature=" + now.signature) << ", not signature="
                      << signature << "\n";
            return 1;
        }
        const RunResult result = run_trace(minimal, *variant);
        minimal.run.variant = variant_name;
        minimal.expectations = {Expectation{variant_name, result.verdict, signature}};

        std::string text = print_trace(minimal);
        const auto header_end = text.find('\n') + 1;
        std::string comments;
        comments += fmt::format("# Minimised by kvsim minimize from {} under {}, keeping signature={}\n",
                                comment_text(opts->trace_path), variant_name, comment_text(signature));
        comments += fmt::format("# ({} -> {} events, {} -> {} bytes, {} replays{}).\n", stats.events_before,
                                stats.events_after, stats.bytes_before, stats.bytes_after, stats.runs,
                                stats.budget_exhausted ? ", budget exhausted" : "");
        comments += fmt::format("# {}: {}\n", to_string(result.verdict), comment_text(result.message));
        text.insert(header_end, comments);

        if (!opts->out_path.empty()) {
            std::ofstream out(opts->out_path, std::ios::binary);
            out << text;
            if (!out) {
                std::cerr << "kvsim: -o: cannot write " << opts->out_path << "\n";
                return exit_code::kUsage;
            }
        } else {
            std::cout << text;
        }
        std::cerr << fmt::format("kvsim minimize: signature={} kept under {}: {} -> {} events, {} -> {} bytes, {} replays{}\n",
                                 signature, variant_name, stats.events_before, stats.events_after, stats.bytes_before,
                                 stats.bytes_after, stats.runs, stats.budget_exhausted ? " (budget exhausted)" : "");
        return exit_code::kPass;
    };
}

}  // namespace kvsim::cli
