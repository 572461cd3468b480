#pragma once
// kvsim subcommands. Each registers its flags on a CLI11 app (the one table that feeds parsing
// and help) and returns the command, which returns an exit code (properties/harness/exit_codes.h).
#include <CLI/CLI.hpp>

#include <functional>

namespace kvsim::cli {

using Command = std::function<int()>;

Command add_run_command(CLI::App& app);
Command add_variants_command(CLI::App& app);
Command add_format_command(CLI::App& app);
Command add_matrix_command(CLI::App& app);
Command add_coverage_command(CLI::App& app);
Command add_minimize_command(CLI::App& app);
Command add_explore_command(CLI::App& app);
Command add_triage_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_explain_command(CLI::App& app);
Command add_findings_command(CLI::App& app);

}  // namespace kvsim::cli
