#pragma once
// Classifies a failing run against the registry of known findings (registry.h) by residue: find the
// entry that explains the run's failure, apply that entry's fix (a variant edit), run the trace again,
// and repeat on what remains until the run passes or a failure matches no entry. A run is KNOWN with
// the set of causes in the order they were removed, or NEW with the causes removed before the failure
// that nothing explains. One re-run per cause removed: the fix's run is both the entry's proof (it
// removes or changes the failure) and the residue the next step classifies.
#include <cstdint>
#include <string>
#include <vector>

#include "properties/findings/registry.h"
#include "properties/harness/run_trace.h"
#include "sim/common/enum_names.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

// The counterfactual runs of the trace under other variants a classification asked for: those it
// made, and those it took from a run already made (the run itself, or an earlier re-run) whose variant
// agrees with the one asked for on every flag that run read.
struct VariantReruns {
    int made = 0;
    int shared = 0;
    std::int64_t steps = 0;  // engine steps the runs made took
};

enum class Outcome {
    none,         // nothing to classify: a pass, an internal error, a check mismatch, a rejected configuration
    known,        // every failure met matched an entry, and the causes' fixes drain the run (or see unexplored)
    new_finding,  // the run, or the residue after the causes' fixes, fails in a way no entry explains
};
inline constexpr EnumNames<Outcome, 3> kOutcomeNames = {{
    {Outcome::none, "none"},
    {Outcome::known, "known"},
    {Outcome::new_finding, "new"},
}};
std::string_view to_string(Outcome outcome);

struct Classification {
    Outcome outcome = Outcome::none;
    std::vector<const KnownEntry*> causes;  // in the order they were removed
    // known: the last cause has no modelled fix (`fix describe`), so what it may hide was not run.
    bool unexplored = false;
    // new_finding: the failure no entry explains (the run's own when no cause was removed), and the
    // variant it came from (the run's, with the removed causes' fixes).
    std::string residue_signature;
    std::string residue_message;
    std::string residue_variant;
    VariantReruns reruns;

    bool known() const { return outcome == Outcome::known; }
    bool is_new() const { return outcome == Outcome::new_finding; }
    // The cause ids joined with '+' in removal order ("" without causes).
    std::string cause_set() const;
    // One grouping key: "known:a+b", "new:SIGNATURE after a+b" or "new:SIGNATURE"; "" for none.
    std::string key() const;
};

// The run's classification. `options` are those the run had: a re-run uses them too, muted and without
// the determinism replay, so that a search's budgets (RunOptions::stall_steps, sweep_period) bound it.
Classification classify(const Registry& registry, const Trace& trace, const Variant& variant,
                        const RunResult& result, const RunOptions& options = {});

// What an expect line's `causes` is compared with: the cause ids in removal order, and "new" last when
// the run, or the residue after them, is NEW.
std::vector<std::string> expectation_causes(const Classification& classification);

// Whether `entry` explains the run on its own: its variants, a signature and every condition, and its
// fix (when modelled) removes or changes the failure.
bool entry_matches(const KnownEntry& entry, const Trace& trace, const Variant& variant, const RunResult& result,
                   const RunOptions& options = {});

// The variant with `fix` applied; none when the fix is not modelled or does not resolve.
std::optional<Variant> with_fix(const Variant& variant, const FixEdit& fix);

// Signature of a kvsim internal error: "internal-error:" plus the message's words, without
// numbers or ids (the fuzz target's and triage's grouping key).
std::string internal_error_signature(const std::string& message);

// The request the run's first finding names (a crash: the request its assertion names).
std::string finding_request(const RunResult& result);

}  // namespace kvsim
