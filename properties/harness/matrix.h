#pragma once
// Traces x variants: one run per cell, each judged against the trace's expect line for the
// variant (the tables the seed reports measured, reproduced on a CPU). `kvsim matrix` prints it.
#include <functional>
#include <string>
#include <vector>

#include "properties/harness/expectation_check.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

struct MatrixTrace {
    std::string name;  // the column header
    Trace trace;
};

struct MatrixCell {
    RunResult result;
    ExpectationCheck expectation;
    std::string text;  // e.g. "crash (missing_current_block_table)", "pass !! UNMET(expected crash)"
};

struct MatrixRow {
    std::string variant;
    std::vector<MatrixCell> cells;  // one per trace, in column order
};

struct Matrix {
    std::vector<std::string> columns;
    std::vector<MatrixRow> rows;
    int met = 0;
    int unmet = 0;
    int unchecked = 0;  // cells whose trace has no expect line for the row's variant
};

// Every variant the traces' expect lines name, in order of first appearance.
std::vector<std::string> variants_in_expectations(const std::vector<MatrixTrace>& traces);

// A cell's cause set, for the expect lines that name one (the classifier is a floor above the matrix).
using CausesOf = std::function<std::vector<std::string>(const Trace&, const Variant&, const RunResult&)>;

// `causes_of` classifies the cells whose expect line names causes (none: such a line is unmet).
Matrix run_matrix(const std::vector<MatrixTrace>& traces, const std::vector<Variant>& variants,
                  const CausesOf& causes_of = {});

// The table (header, rule, one row per variant) and the closing "expectations:" line.
std::string render_matrix(const Matrix& matrix);

}  // namespace kvsim
