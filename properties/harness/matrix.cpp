#include "properties/harness/matrix.h"

#include <fmt/format.h>

#include <algorithm>

namespace kvsim {
namespace {

std::string cell_text(const RunResult& result, const ExpectationCheck& expectation) {
    std::string text;
    if (result.internal_error) {
        text = "internal-error";
    } else {
        text = std::string(to_string(result.verdict));
        const auto colon = result.signature.find(':');
        if (colon != std::string::npos) text += " (" + result.signature.substr(colon + 1) + ")";
    }
    if (expectation.status == ExpectationStatus::unmet) text += " !! " + to_string(expectation);
    return text;
}

MatrixCell run_cell(const MatrixTrace& trace, const Variant& variant, const CausesOf& causes_of) {
    MatrixCell cell;
    cell.result = run_trace(trace.trace, variant);
    std::optional<std::vector<std::string>> causes;
    if (causes_of && !expected_causes(trace.trace, variant.name).empty())
        causes = causes_of(trace.trace, variant, cell.result);
    cell.expectation = check_expectation(trace.trace, cell.result, variant.name, causes ? &*causes : nullptr);
    cell.text = cell_text(cell.result, cell.expectation);
    return cell;
}

std::string table_row(const std::vector<std::string>& row, const std::vector<std::size_t>& width) {
    std::string line = "|";
    for (std::size_t i = 0; i < row.size(); ++i) line += fmt::format(" {:<{}} |", row[i], width[i]);
    return line + "\n";
}

}  // namespace

std::vector<std::string> variants_in_expectations(const std::vector<MatrixTrace>& traces) {
    std::vector<std::string> names;
    for (const auto& t : traces)
        for (const auto& e : t.trace.expectations)
            if (std::find(names.begin(), names.end(), e.variant) == names.end()) names.push_back(e.variant);
    return names;
}

Matrix run_matrix(const std::vector<MatrixTrace>& traces, const std::vector<Variant>& variants,
                  const CausesOf& causes_of) {
    Matrix matrix;
    for (const auto& t : traces) matrix.columns.push_back(t.name);
    for (const auto& variant : variants) {
        MatrixRow row{.variant = variant.name, .cells = {}};
        for (const auto& trace : traces) {
            MatrixCell cell = run_cell(trace, variant, causes_of);
            switch (cell.expectation.status) {
                case ExpectationStatus::met: ++matrix.met; break;
                case ExpectationStatus::unmet: ++matrix.unmet; break;
                case ExpectationStatus::none: ++matrix.unchecked; break;
            }
            row.cells.push_back(std::move(cell));
        }
        matrix.rows.push_back(std::move(row));
    }
    return matrix;
}

std::string render_matrix(const Matrix& matrix) {
    std::vector<std::vector<std::string>> lines = {{"variant"}};
    lines.front().insert(lines.front().end(), matrix.columns.begin(), matrix.columns.end());
    for (const auto& row : matrix.rows) {
        std::vector<std::string> line = {row.variant};
        for (const auto& cell : row.cells) line.push_back(cell.text);
        lines.push_back(std::move(line));
    }
    std::vector<std::size_t> width(lines.front().size(), 0);
    for (const auto& line : lines)
        for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());

    std::string out = table_row(lines.front(), width);
    std::string rule = "|";
    for (std::size_t w : width) rule += std::string(w + 2, '-') + "|";
    out += rule + "\n";
    for (std::size_t i = 1; i < lines.size(); ++i) out += table_row(lines[i], width);
    out += fmt::format("expectations: {} met, {} unmet, {} cells without an expect line\n", matrix.met, matrix.unmet,
                       matrix.unchecked);
    return out;
}

}  // namespace kvsim
