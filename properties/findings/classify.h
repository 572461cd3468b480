#pragma once
// Classifies a run against the registry of known findings (registry.h): a failing run is KNOWN
// when an entry applies to its variant, carries its signature, and every condition of the entry
// holds for it; otherwise it is NEW. A new cause behind a known signature is NEW.
#include <cstdint>
#include <string>

#include "properties/findings/registry.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

// The counterfactual runs of the trace under other variants a classification asked for: those it
// made, and those it took from a run already made (the run itself, or an earlier entry's re-run)
// whose variant agrees with the one asked for on every flag that run read.
struct VariantReruns {
    int made = 0;
    int shared = 0;
    std::int64_t steps = 0;  // engine steps the runs made took
};

// The first entry the run is, or nullptr: a pass, an internal error, or a new finding. `options`
// are those the run had: a counterfactual (gone_with) runs with them too, muted and without the
// determinism replay, so that a search's budgets (RunOptions::stall_steps, sweep_period) bound it.
// With `reruns`, adds the classification's variant re-runs to it.
const KnownEntry* classify(const Registry& registry, const Trace& trace, const Variant& variant,
                           const RunResult& result, const RunOptions& options = {}, VariantReruns* reruns = nullptr);

// Whether `entry` matches the run (its variants, a signature, every condition). A known_with condition
// classifies its patched run against `registry`, and never holds without one.
bool entry_matches(const KnownEntry& entry, const Trace& trace, const Variant& variant, const RunResult& result,
                   const RunOptions& options = {}, const Registry* registry = nullptr);

// Signature of a kvsim internal error: "internal-error:" plus the message's words, without
// numbers or ids (the fuzz target's and triage's grouping key).
std::string internal_error_signature(const std::string& message);

// The request the run's first finding names (a crash: the request its assertion names).
std::string finding_request(const RunResult& result);

}  // namespace kvsim
