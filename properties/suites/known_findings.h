#pragma once
// Known findings of the clean presets: exact scenarios the clean property suites may meet on
// random traces and that are NOT a reason to turn CI red, each named, explained and matched
// precisely (a signature alone never matches: every matcher also checks the mechanism in the
// run's typed events and findings, or in a differential replay). Anything else a clean preset does is a failure.
//
// Keep this list short and honest. Each entry has a witness test in known_findings.cpp: a
// shrunk trace that must still produce the finding, so an entry whose cause gets fixed (or
// whose matcher stops matching) turns CI red until it is removed here.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "properties/harness/run_trace.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim::propgen {

enum class KnownFindingKind {
    upstream,      // (c) plausible real upstream behaviour, modelled on purpose
    known_bug,     // an upstream bug a clean preset still carries (fixed by a later PR)
    kvsim_bug,     // (a) a bug of kvsim itself (model or checker), reported, fix pending
};

struct KnownFinding {
    std::string_view name;
    KnownFindingKind kind;
    std::string_view signatures;  // the signatures it may carry, for the report
    std::string_view why;         // one paragraph: mechanism, upstream code, what to do
    // Precise matcher over the trace, the variant and the run.
    std::function<bool(const Trace&, const Variant&, const RunResult&)> matches;
};

const std::vector<KnownFinding>& known_findings();

// The known finding a failing run is, or nullptr.
const KnownFinding* match_known_finding(const Trace& trace, const Variant& variant, const RunResult& result);

}  // namespace kvsim::propgen
