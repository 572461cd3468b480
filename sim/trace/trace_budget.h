#pragma once
// The resource budget of one trace: what a run may hold or do at most, checked with the trace's other rules
// (validate_trace) before any segment's tokens are derived and before anything runs. The per-line limits
// (sim/trace/trace.h, limits) bound one value; these rows bound the sums a trace within every per-line limit
// can still reach (200 arrivals of 1 M-token prompts hold 200 M tokens). Each row is declared once, in
// trace_budget.cpp; the validator, `kvsim format` and sim/trace/README.md read it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kvsim {

enum class BudgetMeasure { segment_tokens, prompt_tokens, output_tokens, block_steps };
inline constexpr std::size_t kBudgetMeasures = static_cast<std::size_t>(BudgetMeasure::block_steps) + 1;

struct BudgetRow {
    BudgetMeasure measure;
    std::string_view name;    // e.g. "prompt_tokens"
    std::uint64_t limit;      // the sum may reach it, not pass it
    std::string_view counts;  // one line: what is summed, in trace terms
    std::string_view field;   // the field an error names, on the line where the sum passes the limit
    std::string_view why;     // one line: what the run spends on each unit
};

std::span<const BudgetRow> budget_rows();
const BudgetRow& budget_row(BudgetMeasure measure);

// The sums of one trace as the validator adds them up, line by line. add() returns the error message when
// the sum passes the row's limit at this line (the sums saturate; nothing wraps).
class BudgetTally {
public:
    std::optional<std::string> add(BudgetMeasure measure, std::uint64_t amount);
    std::uint64_t total(BudgetMeasure measure) const { return totals_[static_cast<std::size_t>(measure)]; }

private:
    std::uint64_t totals_[kBudgetMeasures] = {};
};

// engine.num_blocks x run.max_steps against the block_steps row: the message when above it.
std::optional<std::string> block_steps_over(std::uint64_t num_blocks, std::uint64_t max_steps);

// The rows as `kvsim format` lists them.
std::string budget_help();

}  // namespace kvsim
