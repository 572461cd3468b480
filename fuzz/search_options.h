#pragma once
// The options kvsim_fuzz_trace runs an input with (fuzz/README.md, Search budgets): the trace's
// search budgets (its max_steps cut to the step budget), muted but for the event categories the
// registry reads, a full sweep every budget::kSweepPeriod steps, no step checks.
#include "fuzz/mutator/trace_mutator.h"
#include "properties/findings/registry.h"
#include "properties/harness/run_trace.h"

namespace kvsim::fuzz {

// The options for a trace whose run.max_steps already is budgets.steps.
inline RunOptions search_run_options(const SearchBudgets& budgets, bool check_determinism, EventCategories registry_reads) {
    return RunOptions{.check_determinism = check_determinism,
                      .text_log = false,
                      .events = false,
                      .muted_keeps = registry_reads,
                      .sweep_period = budget::kSweepPeriod,
                      .step_checks = false,
                      .stall_steps = budgets.stall,
                      .idle_steps = budgets.idle};
}

// Cuts trace.run.max_steps to its step budget, and gives the options.
inline RunOptions search_run_options(Trace& trace, bool check_determinism, EventCategories registry_reads) {
    const SearchBudgets budgets = search_budgets(trace);
    trace.run.max_steps = budgets.steps;
    return search_run_options(budgets, check_determinism, registry_reads);
}

}  // namespace kvsim::fuzz
