#include "cli/option_rules.h"

#include <algorithm>
#include <iostream>

#include "sim/trace/trace_schema.h"

namespace kvsim::cli {
namespace {

std::string non_empty(const std::string& value) { return value.empty() ? "empty value" : std::string(); }

std::string plain_decimal(const std::string& value) {
    const bool digits = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits && (value.size() == 1 || value.front() != '0')) return {};
    return "expected plain decimal digits (no sign, no leading zeros), got " + quote(value);
}

void apply_to(CLI::App& app) {
    for (CLI::Option* option : app.get_options()) {
        if (option->get_items_expected_max() == 0) continue;  // a flag
        option->check(CLI::Validator(non_empty, ""));
        const std::string type = option->get_type_name();
        if (type.starts_with("UINT") || type.starts_with("INT")) option->check(CLI::Validator(plain_decimal, ""));
    }
    for (CLI::App* sub : app.get_subcommands({})) apply_to(*sub);
}

}  // namespace

void apply_option_rules(CLI::App& app) { apply_to(app); }

std::optional<std::vector<std::string>> split_option_list(const std::string& text, std::string_view option) {
    std::vector<std::string> out;
    for (std::size_t start = 0;;) {
        const std::size_t comma = text.find(',', start);
        std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (item.empty()) {
            std::cerr << "kvsim: " << option << ": empty item in " << quote(text) << "\n";
            return std::nullopt;
        }
        if (std::find(out.begin(), out.end(), item) != out.end()) {
            std::cerr << "kvsim: " << option << ": " << quote(item) << " is listed twice\n";
            return std::nullopt;
        }
        out.push_back(std::move(item));
        if (comma == std::string::npos) return out;
        start = comma + 1;
    }
}

}  // namespace kvsim::cli
