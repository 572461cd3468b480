#pragma once
// How kvsim_fuzz_trace judges one input (fuzz/README.md, Search budgets): run under the search's
// options (its budgets), then classified against the registry. A hang that the idle budget stopped
// and the registry does not know is run again on the hang budget alone; a finding still NEW is run
// again as `kvsim run` runs it (run_for_search: a sweep every step, no budgets), and that run decides.
#include "properties/findings/classify.h"
#include "properties/harness/run_trace.h"

namespace kvsim {

struct InputJudgement {
    RunResult result;                  // the run that decided
    Classification classification;     // its causes (outcome none on a pass or an internal error)
    bool idle_rerun = false;           // run again on the hang budget alone
    bool new_rerun = false;            // run again as kvsim run runs it
    std::int64_t steps = 0;            // engine steps of the judge's own runs (the classifier's are its reruns')
};

// A hang the idle budget stopped: its fact `stalled` is that budget, below the hang budget.
bool stopped_idle(const RunResult& result, const RunOptions& options);

// Stops at the first run with a kvsim internal error (result.internal_error), unclassified.
InputJudgement judge_input(const Registry& registry, const Trace& trace, const Variant& variant, RunOptions options,
                           VariantReruns* reruns = nullptr);

}  // namespace kvsim
