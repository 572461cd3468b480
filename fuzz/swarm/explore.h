#pragma once
// The swarm search behind `kvsim explore`: one generated trace per seed (fuzz/swarm/swarm.h),
// run under one variant; every failing seed is classified against the registry of known findings
// (properties/findings), tallied apart as known (by registry entry) or new (by signature), and a
// new one (or, with any_failure, every one) is reported with the command that regenerates and
// reruns exactly that trace.
#include <cstdint>
#include <map>
#include <ostream>
#include <optional>
#include <string>

#include "fuzz/swarm/swarm.h"
#include "properties/findings/classify.h"
#include "properties/harness/run_trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

struct ExploreConfig {
    std::uint64_t first_seed = 1;
    std::uint64_t seeds = 1;  // first_seed + seeds - 1 must fit in 64 bits
    Variant variant;
    RoleChoice role = RoleChoice::any;
    std::string out_dir;         // write each failing trace to DIR/<signature>/seed-S.trace (empty: none)
    std::uint64_t progress = 0;  // a progress line every K seeds (0: none)
    bool print_trace = false;    // print every generated trace before its result
    const Registry* registry = nullptr;  // nullptr: every failure is new
    bool any_failure = false;    // print known failures too, and count them as failures
    std::optional<bool> async_scheduling = std::nullopt;  // every seed's engine key forced to it; nullopt: the drawn mode
};

// One seed: its generated case and the run.
struct ExploreSeed {
    std::uint64_t seed = 0;
    SwarmCase swarm_case;
    RunResult result;
    std::string repro;   // "kvsim explore --seed S --seeds 1 --variant V --role R"
    std::string header;  // "# <repro>\n# knobs: ...\n", above a printed or written trace
    Classification classification;  // a failing run's causes (known), or the failure nothing explains (new)

    bool passed() const { return !result.internal_error && result.verdict == Verdict::pass; }
    bool known() const { return classification.known(); }
    // The signature ("SIGNATURE~CAUSE+CAUSE" for a known finding, "SIGNATURE after CAUSE+..." for a new
    // one behind known causes), or "internal-error".
    std::string failure_kind() const;
};

// Generates and runs one seed. A generated trace that validate_trace rejects is an internal error.
ExploreSeed explore_seed(std::uint64_t seed, const ExploreConfig& config);

// "seed=S NEW[ after=CAUSES residue=SIG]|known=CAUSES verdict=V signature=K steps=N async_scheduling=on|off -- message | repro: ...",
// without the trace part.
std::string failure_line(const ExploreSeed& seed);

struct SignatureTally {
    int count = 0;
    std::uint64_t first_seed = 0;
};

// The seeds run under one scheduling mode and how they ended.
struct ModeTally {
    std::uint64_t runs = 0, passed = 0, failed = 0, known = 0;
};

struct ExploreSummary {
    std::map<std::string, ModeTally> by_mode;  // "off" / "on" (the engine's resolved async_scheduling)
    std::uint64_t passed = 0;
    std::uint64_t failed = 0;  // new findings and internal errors
    std::uint64_t known = 0;
    std::map<std::string, SignatureTally> signatures;  // new: failure kind -> seeds, sorted
    std::map<std::string, SignatureTally> known_entries;  // known: cause set ("a+b") -> seeds, sorted
    bool internal_error = false;
    std::string unwritable;  // a failing trace that could not be written: the search stopped there
};

// Runs every seed; prints each failing seed's line (and, with print_trace, each trace) to `out`
// as it goes, and the progress lines to `progress`.
ExploreSummary explore(const ExploreConfig& config, std::ostream& out, std::ostream& progress);

// The closing line, the seeds by scheduling mode, then one row per new signature and one per known
// cause set.
std::string render_explore_summary(const ExploreSummary& summary, const ExploreConfig& config);

}  // namespace kvsim
