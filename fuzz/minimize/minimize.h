#pragma once
// Trace-level minimisation that keeps a finding's exact signature (`kvsim minimize` and the nightly
// triage). Delta debugging over the trace's structure, not its bytes: remove events (an
// arrive takes its aborts and faults along), connectors (with the store lines, faults and
// remote flags that need them), store lines, prompt segments and unused segments; then
// move numbers toward small or default values (max_tokens, segment lengths, num_blocks,
// max_steps, event steps, worker ranks and delays, fault steps) and booleans toward their
// defaults; then give long names short ones (r1.., s1..). Every candidate is checked with
// validate_trace and replayed with run_trace; it is kept only when the run gives exactly
// the same signature. The work is bounded by a number of runs (no wall clock: the result
// is deterministic).
#include <cstddef>
#include <functional>
#include <string>

#include "properties/harness/run_trace.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

struct MinimizeStats {
    bool reproduced = false;        // the input trace gave the signature (else nothing was done)
    bool budget_exhausted = false;  // stopped by max_runs before a fixed point
    int runs = 0;                   // run_trace calls
    int accepted = 0;               // candidates kept
    int rounds = 0;
    std::size_t events_before = 0, events_after = 0;
    std::size_t bytes_before = 0, bytes_after = 0;  // print_trace sizes
};

struct MinimizeOptions {
    int max_runs = 4000;   // bound on run_trace calls
    int max_rounds = 20;   // bound on rounds of all passes
    MinimizeStats* stats = nullptr;  // filled when set
    // When set, a candidate must also satisfy it (kvsim minimize: the same registry classification).
    std::function<bool(const Trace&, const RunResult&)> also_keep = {};
};

// The smallest trace found that gives `signature` under `variant`. Expect lines are dropped
// (they do not influence a run); the run line keeps its variant. Returns the input unchanged
// (stats->reproduced = false) when it is invalid or does not give `signature`. A liveness
// signature never has its max_steps or num_blocks lowered (a shorter step budget or a pool too
// small for a request would manufacture the finding), and a nondeterminism signature is judged
// with two replays.
Trace minimize_trace(const Trace& trace, const Variant& variant, const std::string& signature,
                     MinimizeOptions options = {});

}  // namespace kvsim
