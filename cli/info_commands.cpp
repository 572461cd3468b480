#include <iostream>

#include "cli/commands.h"
#include "sim/trace/trace_schema.h"
#include "sim/variant/variant.h"

namespace kvsim::cli {

Command add_variants_command(CLI::App& app) {
    app.add_subcommand("variants", "Print the table of variant presets and their behaviour flags");
    return [] {
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
