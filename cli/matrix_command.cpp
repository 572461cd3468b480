// kvsim matrix: traces x variants, one verdict per cell, checked against the traces'
// expect lines (the tables the seed reports measured, reproduced on a CPU).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/verdict_line.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"

namespace kvsim::cli {
namespace {

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t pos = text.find(',', start);
        std::string item = text.substr(start, pos == std::string::npos ? std::string::npos : pos - start);
        if (!item.empty()) out.push_back(item);
        if (pos == std::string::npos) break;
        start = pos + 1;
    }
    return out;
}

struct Cell {
    std::string text;
    bool unmet = false;
    bool expected = false;
};

Cell make_cell(const Trace& trace, const RunResult& result, const std::string& variant) {
    Cell cell;
    if (result.internal_error) {
        cell.text = "internal-error";
    } else {
        cell.text = std::string(to_string(result.verdict));
        const auto colon = result.signature.find(':');
        if (colon != std::string::npos) cell.text += " (" + result.signature.substr(colon + 1) + ")";
    }
    const std::string note = expectation_note(trace, result, variant);
    cell.expected = note != "none";
    cell.unmet = note.rfind("UNMET", 0) == 0;
    if (cell.unmet) cell.text += " !! " + note;
    return cell;
}

}  // namespace

Command add_matrix_command(CLI::App& app) {
    struct Options {
        std::vector<std::string> traces;
        std::string variants;
        bool verbose = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("matrix", "Run traces x variants; print a table; fail on any unmet expect line");
    cmd->add_option("traces", opts->traces, "Trace files")->required();
    cmd->add_option("--variants", opts->variants,
                    "Comma-separated variants (default: every variant named by the traces' expect lines)");
    cmd->add_flag("--verbose,-v", opts->verbose, "Also print each run's verdict line");

    return [opts]() -> int {
        std::vector<Trace> traces;
        for (const auto& path : opts->traces) {
            try {
                traces.push_back(parse_trace_file(path));
            } catch (const InputError& error) {
                std::cerr << "kvsim: " << error.what() << "\n";
                return exit_code::kInputError;
            }
        }
        std::vector<std::string> variant_names = split_list(opts->variants);
        if (variant_names.empty())
            for (const auto& t : traces)
                for (const auto& e : t.expectations)
                    if (std::find(variant_names.begin(), variant_names.end(), e.variant) == variant_names.end())
                        variant_names.push_back(e.variant);
        if (variant_names.empty()) {
            std::cerr << "kvsim: matrix: no variants: give --variants or expect lines in the traces\n";
            return exit_code::kUsage;
        }
        std::vector<Variant> variants;
        for (const auto& name : variant_names) {
            std::string error;
            auto v = resolve_variant(name, &error);
            if (!v) {
                std::cerr << "kvsim: --variants: " << error << "\n";
                return exit_code::kUsage;
            }
            variants.push_back(*v);
        }

        std::vector<std::string> header = {"variant"};
        for (const auto& path : opts->traces) header.push_back(std::filesystem::path(path).stem().string());
        std::vector<std::vector<std::string>> rows;
        int met = 0, unmet = 0, unchecked = 0;
        for (std::size_t v = 0; v < variants.size(); ++v) {
            std::vector<std::string> row = {variant_names[v]};
            for (std::size_t t = 0; t < traces.size(); ++t) {
                const RunResult result = run_trace(traces[t], variants[v]);
                const Cell cell = make_cell(traces[t], result, variant_names[v]);
                if (opts->verbose)
                    std::cout << verdict_line(result, opts->traces[t], variant_names[v],
                                              expectation_note(traces[t], result, variant_names[v]))
                              << "\n";
                (cell.unmet ? unmet : cell.expected ? met : unchecked) += 1;
                row.push_back(cell.text);
            }
            rows.push_back(std::move(row));
        }

        std::vector<std::size_t> width(header.size());
        for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
        for (const auto& row : rows)
            for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
        auto print_row = [&](const std::vector<std::string>& row) {
            std::string line = "|";
            for (std::size_t i = 0; i < row.size(); ++i) line += fmt::format(" {:<{}} |", row[i], width[i]);
            std::cout << line << "\n";
        };
        print_row(header);
        std::string rule = "|";
        for (std::size_t w : width) rule += std::string(w + 2, '-') + "|";
        std::cout << rule << "\n";
        for (const auto& row : rows) print_row(row);
        std::cout << fmt::format("expectations: {} met, {} unmet, {} cells without an expect line\n", met, unmet,
                                 unchecked);
        return unmet == 0 ? 0 : 1;
    };
}

}  // namespace kvsim::cli
