#pragma once
// The rules every option value obeys, as a trace value does (sim/trace/README.md): never empty, and
// an integer is plain decimal digits (no sign, no leading zeros, no 0x), so that `--variant ""`,
// `--log=` or `--progress -5` is a usage error naming the option instead of a silent default or a
// wrapped-around number. apply_option_rules adds them to every option of every subcommand.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvsim::cli {

void apply_option_rules(CLI::App& app);

// A comma-separated list of names for `option`: nullopt after printing why when an item is empty
// or repeated.
std::optional<std::vector<std::string>> split_option_list(const std::string& text, std::string_view option);

}  // namespace kvsim::cli
