// kvsim: deterministic simulation of vLLM's KV-connector scheduling.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <map>
#include <new>
#include <string>

#include "cli/commands.h"
#include "cli/escaping_stderr.h"
#include "cli/option_rules.h"
#include "cli/output_file.h"
#include "properties/harness/exit_codes.h"
#include "sim/trace/trace_schema.h"

namespace {

std::map<std::string, kvsim::cli::Command> add_commands(CLI::App& app) {
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
    return commands;
}

// The first argument, when it is not an option, names the subcommand: one of `commands`.
bool known_subcommand(int argc, char** argv, const std::map<std::string, kvsim::cli::Command>& commands) {
    if (argc < 2 || argv[1][0] == '-' || commands.contains(argv[1])) return true;
    std::string names;
    for (const auto& [name, command] : commands) names += (names.empty() ? "" : ", ") + name;
    std::cerr << "kvsim: unknown subcommand " << kvsim::quote(argv[1]) << " (subcommands: " << names << ")\n";
    return false;
}

// `--log=`: CLI11 drops an empty value given after '=', so the rule of option_rules.h is kept here.
bool no_empty_assignment(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--") return true;
        if (arg.starts_with("--") && arg.size() > 3 && arg.back() == '=' && arg.find('=') == arg.size() - 1) {
            const std::string name = arg.substr(0, arg.size() - 1);
            const bool plain = name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
            std::cerr << "kvsim: " << (plain ? name : kvsim::quote(name)) << ": empty value\n";
            return false;
        }
    }
    return true;
}

// A parse error's hint: the help of the subcommand given, if one was.
std::string help_hint(int argc, char** argv, const std::map<std::string, kvsim::cli::Command>& commands) {
    return argc >= 2 && commands.contains(argv[1]) ? std::string("kvsim ") + argv[1] + " --help" : "kvsim --help";
}

int run_kvsim(int argc, char** argv) {
    CLI::App app{"kvsim: deterministic simulation and fuzzing of vLLM KV-connector scheduling"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("kvsim ") + KVSIM_VERSION, "Print kvsim's version and exit");
    std::map<std::string, kvsim::cli::Command> commands = add_commands(app);
    kvsim::cli::apply_option_rules(app);
    if (!known_subcommand(argc, argv, commands) || !no_empty_assignment(argc, argv)) return kvsim::exit_code::kUsage;
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "kvsim: " << e.what() << " (see " << help_hint(argc, argv, commands) << ")\n";
        return kvsim::exit_code::kUsage;
    }
    int code = kvsim::exit_code::kUsage;
    for (auto* sub : app.get_subcommands()) code = commands.at(sub->get_name())();
    // what a command printed is only written once flushed: a full device fails here, not silently
    return kvsim::cli::flush_standard_output() ? code : kvsim::exit_code::kOutputError;
}

}  // namespace

int main(int argc, char** argv) {
    const kvsim::cli::EscapedStandardError escaped_stderr;
    try {
        return run_kvsim(argc, argv);
    } catch (const std::bad_alloc&) {
        // what is left of the heap may not hold a formatted message: a fixed line, written unbuffered
        std::fputs("kvsim: out of memory: the run needs more than this process may allocate (kvsim format lists "
                   "the trace budget)\n",
                   stderr);
        return kvsim::exit_code::kOutOfMemory;
    }
}
