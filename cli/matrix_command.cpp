// kvsim matrix: traces x variants, one verdict per cell, checked against the traces' expect
// lines (properties/harness/matrix.h does the work).
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/option_rules.h"
#include "cli/registry_option.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/matrix.h"
#include "properties/harness/verdict_line.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"

namespace kvsim::cli {

struct MatrixOptions {
    std::vector<std::string> traces;
    std::string variants;  // comma-separated; empty: every variant the traces' expect lines name
    bool verbose = false;
    std::string async_scheduling;  // on | off: overrides every trace's engine key; empty: each trace's
};

namespace {

std::optional<std::vector<MatrixTrace>> load_traces(const std::vector<std::string>& paths) {
    std::vector<MatrixTrace> traces;
    for (const auto& path : paths) {
        try {
            traces.push_back({.name = std::filesystem::path(path).stem().string(), .trace = parse_trace_file(path)});
        } catch (const InputError& error) {
            std::cerr << "kvsim: " << error.what() << "\n";
            return std::nullopt;
        }
    }
    return traces;
}

std::optional<std::vector<Variant>> resolve_variants(const std::vector<std::string>& names) {
    if (names.empty()) {
        std::cerr << "kvsim: matrix: no variants: give --variants or expect lines in the traces\n";
        return std::nullopt;
    }
    std::vector<Variant> variants;
    for (const auto& name : names) {
        std::string error;
        auto v = resolve_variant(name, &error);
        if (!v) {
            std::cerr << "kvsim: --variants: " << error << "\n";
            return std::nullopt;
        }
        variants.push_back(*v);
    }
    return variants;
}

void print_verdict_lines(const Matrix& matrix, const MatrixOptions& options) {
    for (const auto& row : matrix.rows)
        for (std::size_t t = 0; t < row.cells.size(); ++t)
            std::cout << verdict_line(row.cells[t].result, options.traces[t], row.variant, row.cells[t].expectation)
                      << "\n";
}

}  // namespace

int run_matrix(const MatrixOptions& options) {
    auto traces = load_traces(options.traces);
    if (!traces) return exit_code::kInputError;
    if (!options.async_scheduling.empty())
        for (MatrixTrace& t : *traces) t.trace.engine.async_scheduling = options.async_scheduling == "on";
    std::vector<std::string> names;
    if (!options.variants.empty()) {
        auto listed = split_option_list(options.variants, "--variants");
        if (!listed) return exit_code::kUsage;
        names = std::move(*listed);
    } else {
        names = variants_in_expectations(*traces);
    }
    const auto variants = resolve_variants(names);
    if (!variants) return exit_code::kUsage;

    const Matrix matrix = kvsim::run_matrix(*traces, *variants, [](const Trace& t, const Variant& v, const RunResult& r) {
        return causes_of_run(builtin_registry(), t, v, r);
    });
    if (options.verbose) print_verdict_lines(matrix, options);
    std::cout << render_matrix(matrix);
    return matrix.unmet == 0 ? exit_code::kPass : exit_code::kUnmetExpectation;
}

Command add_matrix_command(CLI::App& app) {
    auto opts = std::make_shared<MatrixOptions>();
    CLI::App* cmd = app.add_subcommand("matrix", "Run traces x variants; print a table; fail on any unmet expect line");
    cmd->add_option("traces", opts->traces, "Trace files")->required();
    cmd->add_option("--variants", opts->variants,
                    "Comma-separated variants (default: every variant named by the traces' expect lines)");
    cmd->add_flag("--verbose,-v", opts->verbose, "Also print each run's verdict line");
    cmd->add_option("--async-scheduling", opts->async_scheduling,
                    "Run every trace with async scheduling on or off whatever its engine line says (the expect "
                    "lines are still checked)")
        ->check(CLI::IsMember({"on", "off"}));
    return [opts] { return run_matrix(*opts); };
}

}  // namespace kvsim::cli
