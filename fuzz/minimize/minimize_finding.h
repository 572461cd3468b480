#pragma once
// The work behind `kvsim minimize`: shrink a failing trace with minimize_trace
// (fuzz/minimize/minimize.h), keeping one signature, and give the result back as a trace file
// with one expect line for the variant and a comment saying where it came from.
#include <string>

#include "fuzz/minimize/minimize.h"
#include "properties/findings/classify.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

struct FindingToMinimize {
    Trace trace;
    std::string source;     // where the trace came from (a path), for the comment
    Variant variant;
    std::string signature;  // empty: the one the trace gives now
    int max_runs = MinimizeOptions{}.max_runs;
    // Classification kept while shrinking: a known finding stays that registry entry, a new one
    // stays new (so that a new cause never shrinks into a known one). nullptr: the signature alone.
    const Registry* registry = nullptr;
};

enum class MinimizeOutcome {
    kept,            // `minimal` gives `signature`
    internal_error,  // the trace hits a kvsim internal error: nothing to keep
    passes,          // the trace gives no finding to keep
    rejected,        // upstream refuses the trace's configuration: it never runs
    not_reproduced,  // the trace does not give the signature asked for
};

struct MinimizedFinding {
    MinimizeOutcome outcome = MinimizeOutcome::kept;
    std::string signature;  // the one kept (or asked for)
    Classification classification;  // the input's, kept by the minimal trace (outcome none: no registry)
    RunResult original;     // the input trace's run, when the outcome is not `kept`
    Trace minimal;          // with its run variant and one expect line
    RunResult minimal_result;
    MinimizeStats stats;
};

MinimizedFinding minimize_finding(const FindingToMinimize& finding);

// The minimal trace as a file: print_trace with a comment below the header line naming the
// source, the signature, the shrink statistics and the finding's message.
std::string minimized_trace_text(const MinimizedFinding& minimized, const FindingToMinimize& finding);

// One line for stderr: "kvsim minimize: signature=... kept under V: a -> b events, ...".
std::string minimize_summary_line(const MinimizedFinding& minimized, const FindingToMinimize& finding);

}  // namespace kvsim
