// kvsim: deterministic simulation of vLLM's KV-connector scheduling.
#include <CLI/CLI.hpp>

#include <iostream>
#include <map>
#include <string>

#include "cli/commands.h"
#include "cli/output_file.h"
#include "properties/harness/exit_codes.h"

int main(int argc, char** argv) {
    CLI::App app{"kvsim: deterministic simulation and fuzzing of vLLM KV-connector scheduling"};
    app.require_subcommand(1);
    std::map<std::string, kvsim::cli::Command> commands;
    commands["run"] = kvsim::cli::add_run_command(app);
    commands["variants"] = kvsim::cli::add_variants_command(app);
    commands["format"] = kvsim::cli::add_format_command(app);
    commands["matrix"] = kvsim::cli::add_matrix_command(app);
    commands["coverage"] = kvsim::cli::add_coverage_command(app);
    commands["minimize"] = kvsim::cli::add_minimize_command(app);
    commands["explore"] = kvsim::cli::add_explore_command(app);
    commands["triage"] = kvsim::cli::add_triage_command(app);
    commands["report"] = kvsim::cli::add_report_command(app);
    commands["explain"] = kvsim::cli::add_explain_command(app);
    commands["findings"] = kvsim::cli::add_findings_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "kvsim: " << e.what() << " (see kvsim --help)\n";
        return kvsim::exit_code::kUsage;
    }
    int code = kvsim::exit_code::kUsage;
    for (auto* sub : app.get_subcommands()) code = commands.at(sub->get_name())();
    // what a command printed is only written once flushed: a full device fails here, not silently
    return kvsim::cli::flush_standard_output() ? code : kvsim::exit_code::kOutputError;
}
