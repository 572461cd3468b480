#include "sim/trace/trace_budget.h"

#include <fmt/format.h>

#include <iterator>
#include <limits>

namespace kvsim {
namespace {

// The limits keep a run within about 1 GiB and minutes of CPU on a 2-core machine (sim/trace/README.md,
// Rules across lines: Budget): a token costs 4 bytes where it is held; a block-step is one checker judging one block.
constexpr BudgetRow kBudget[] = {
    {BudgetMeasure::segment_tokens, "segment_tokens", std::uint64_t{1} << 24, "tokens of all segment lines",
     "segment.len", "each segment's tokens are derived once and held for the whole run"},
    {BudgetMeasure::prompt_tokens, "prompt_tokens", std::uint64_t{1} << 26, "prompt tokens summed over arrive lines",
     "event.prompt", "each arrival copies its prompt into its request, which holds it until it is freed"},
    {BudgetMeasure::output_tokens, "output_tokens", std::uint64_t{1} << 26, "max_tokens summed over arrive lines",
     "event.max_tokens", "each output token is one request-step of scheduling, checking and event log"},
    {BudgetMeasure::block_steps, "block_steps", 10'000'000'000, "engine.num_blocks times run.max_steps",
     "run.max_steps", "after every step the checkers judge every block a request holds"},
};

constexpr bool rows_in_measure_order() {
    for (std::size_t i = 0; i < std::size(kBudget); ++i)
        if (static_cast<std::size_t>(kBudget[i].measure) != i) return false;
    return std::size(kBudget) == kBudgetMeasures;
}
static_assert(rows_in_measure_order(), "kBudget: one row per BudgetMeasure, in its order");

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
    return b > std::numeric_limits<std::uint64_t>::max() - a ? std::numeric_limits<std::uint64_t>::max() : a + b;
}

}  // namespace

std::span<const BudgetRow> budget_rows() { return kBudget; }

const BudgetRow& budget_row(BudgetMeasure measure) { return kBudget[static_cast<std::size_t>(measure)]; }

std::optional<std::string> BudgetTally::add(BudgetMeasure measure, std::uint64_t amount) {
    std::uint64_t& total = totals_[static_cast<std::size_t>(measure)];
    total = saturating_add(total, amount);
    const BudgetRow& row = budget_row(measure);
    if (total <= row.limit) return std::nullopt;
    return fmt::format("{} reach {} here, above the budget {} = {} ({})", row.counts, total, row.name, row.limit,
                       row.why);
}

std::optional<std::string> block_steps_over(std::uint64_t num_blocks, std::uint64_t max_steps) {
    const BudgetRow& row = budget_row(BudgetMeasure::block_steps);
    if (num_blocks == 0 || max_steps <= row.limit / num_blocks) return std::nullopt;
    return fmt::format("engine.num_blocks {} x run.max_steps {} is above the budget {} = {} ({})", num_blocks,
                       max_steps, row.name, row.limit, row.why);
}

std::string budget_help() {
    std::string out =
        "\nBudget: sums a trace within every per-line limit can still reach, checked before the run (input error,\n"
        "exit 65); a run that still runs out of memory exits 71 with one line.\n";
    for (const BudgetRow& row : kBudget)
        out += fmt::format("  {} <= {}: {}; {}\n", row.name, row.limit, row.counts, row.why);
    return out;
}

}  // namespace kvsim
