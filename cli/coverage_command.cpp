// kvsim coverage: which request lifecycle edges a set of traces exercises, and which it never
// reaches (properties/harness/lifecycle_coverage.h does the work).
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/lifecycle_coverage.h"
#include "sim/trace/input_error.h"

namespace kvsim::cli {

struct CoverageOptions {
    std::vector<std::string> paths;
    std::string variant;  // empty: each trace's run variant, else its first expect line
    bool any_name = false;
    bool json = false;
    std::string dot_path;  // non-empty: also write the lifecycle graph with its coverage as DOT
};

int run_coverage(const CoverageOptions& options) {
    std::optional<Variant> fixed_variant;
    if (!options.variant.empty()) {
        std::string error;
        fixed_variant = resolve_variant(options.variant, &error);
        if (!fixed_variant) {
            std::cerr << "kvsim: --variant: " << error << "\n";
            return exit_code::kUsage;
        }
    }
    const TraceFiles found = find_trace_files(options.paths, options.any_name);
    if (!found.missing.empty()) {
        std::cerr << "kvsim: coverage: " << found.missing << ": no such file or directory\n";
        return exit_code::kUsage;
    }
    LifecycleCoverage coverage;
    try {
        coverage = measure_lifecycle_coverage(found.files, fixed_variant, found.named);
    } catch (const InputError& bad) {
        std::cerr << "kvsim: " << bad.what() << "\n";
        return exit_code::kInputError;
    }
    if (!options.dot_path.empty()) {
        if (!write_output_file(options.dot_path, [&](std::ostream& dot) { write_lifecycle_dot(dot, coverage); }, "--dot"))
            return exit_code::kOutputError;
    }
    if (options.json)
        std::cout << coverage_json(coverage, options.variant).dump(2) << "\n";
    else
        std::cout << render_coverage(coverage, options.variant);
    return coverage.non_edges.empty() && coverage.mislabelled.empty() ? exit_code::kPass : 1;
}

Command add_coverage_command(CLI::App& app) {
    auto opts = std::make_shared<CoverageOptions>();
    CLI::App* cmd = app.add_subcommand(
        "coverage", "Run every trace under the directories; list the request lifecycle edges exercised and never reached");
    cmd->add_option("paths", opts->paths, "Directories (searched recursively for *.trace) or trace files")->required();
    cmd->add_option("--variant", opts->variant,
                    "Run every trace under this variant (default: each trace's run variant, else its first expect line)");
    cmd->add_flag("--any-name", opts->any_name,
                  "Take every regular file under the directories, not only *.trace (fuzzer corpora); invalid ones are counted as rejected");
    cmd->add_flag("--json", opts->json, "Print one JSON object instead of the table");
    cmd->add_option("--dot", opts->dot_path,
                    "Also write the lifecycle graph as Graphviz DOT: exercised edges solid, weighted by the traces "
                    "that made them; unreached edges dashed (render: dot -Tsvg FILE)");
    return [opts] { return run_coverage(*opts); };
}

}  // namespace kvsim::cli
