#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "sim/trace/trace_schema.h"
#include "sim/variant/variant.h"

namespace kvsim::cli {

Command add_variants_command(CLI::App& app) {
    CLI::App* cmd = app.add_subcommand("variants", "Print the table of variant presets and their behaviour flags");
    auto names = std::make_shared<bool>(false);
    cmd->add_flag("--names", *names, "Print one preset a line: its name and its tag (clean or known_broken)");
    return [names] {
        if (*names) {
            for (const VariantPreset& p : variant_presets()) std::cout << p.name << " " << to_string(p.tag) << "\n";
            return 0;
        }
        std::cout << variants_table();
        return 0;
    };
}

Command add_format_command(CLI::App& app) {
    app.add_subcommand("format", "Print the trace format reference (every line kind and key)");
    return [] {
        std::cout << format_help();
        return 0;
    };
}

}  // namespace kvsim::cli
