#pragma once
// Running RapidCheck properties over kvsim traces: fixed seed and case count by default,
// nightly scale from the environment, and failure reports that a person can replay.
//
// Environment (read once per property; see tests/README.md, "Property tests"):
//   KVSIM_RC_SEED=N        seed of every property (default kDefaultSeed)
//   KVSIM_RC_CASES=N       cases of every property (overrides the suite's default count)
//   KVSIM_RC_SCALE=N       multiply every suite's default count by N (nightly: e.g. 100)
//   KVSIM_RC_MAX_SIZE=N    RapidCheck's max size (default 100)
//   KVSIM_RC_NO_SHRINK=1   report the first counterexample without shrinking
//   RC_PARAMS="reproduce=..."  RapidCheck's own reproduce map is honoured (ids = test names)
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <rapidcheck.h>
#include <rapidcheck/detail/TestListenerAdapter.h>

#include "properties/harness/run_trace.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim::propgen {

inline constexpr std::uint64_t kDefaultSeed = 0x6b7673696d;  // "kvsim"

// The presets with no known defect (the clean suites run each of them).
inline const std::vector<std::string>& clean_variants() {
    static const std::vector<std::string> names = presets_with(PresetTag::clean);
    return names;
}

struct RcSettings {
    std::uint64_t seed = kDefaultSeed;
    int cases = 100;
    int max_size = 100;
    bool shrink = true;
};

// The settings of a property whose default case count is `default_cases`, after the
// environment. `fixed` ignores the environment altogether (canaries keep their own seed, count
// and size: they must find their bug deterministically).
RcSettings rc_settings(int default_cases, bool fixed = false);

bool rc_params_set();

// Runs a RapidCheck property with explicit settings (rc::check would take its seed from the
// clock unless RC_PARAMS says otherwise). Returns RapidCheck's result.
template <class Testable>
rc::detail::TestResult check_property(const std::string& name, const RcSettings& settings, Testable&& testable) {
    rc::detail::TestMetadata metadata;
    metadata.id = name;
    metadata.description = name;
    rc::detail::TestParams params;
    params.seed = settings.seed;
    params.maxSuccess = settings.cases;
    params.maxSize = settings.max_size;
    params.disableShrinking = !settings.shrink;
    rc::detail::TestListenerAdapter quiet;
    // Only RC_PARAMS's reproduce map is read from RapidCheck's configuration (loading it prints
    // RapidCheck's own random seed, which kvsim does not use).
    static const std::unordered_map<std::string, rc::detail::Reproduce> no_reproduce;
    const auto& reproduce = rc_params_set() ? rc::detail::configuration().reproduce : no_reproduce;
    return rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params, quiet, reproduce);
}

// RapidCheck's report of a result (counterexample, description, how to reproduce).
std::string result_text(const rc::detail::TestResult& result);

// The counterexample of a failed property as trace text: the first shown value that parses as
// a trace (the generators print traces via showValue). nullopt when there is none.
std::optional<Trace> counterexample_trace(const rc::detail::TestResult& result);

// Every finding of a run: each violation's signature "violation:<id>" (a step may report
// several), the run's signature, and "internal" when kvsim's own model precondition failed.
// Empty on a clean pass.
std::vector<std::string> findings(const RunResult& result);

// Invariant families (tests/README.md, Property tests), by the invariant ids the checkers emit.
enum class Family {
    snapshot_access,  // save/load/send block access (worker_access_checker) + upstream's own
                      // missing-current-block-table assertions
    block_pool,       // ref counts, free queue, double free, prefix map (block_pool_checker)
    request_state,    // queues, statuses, block tables of live requests (request_state_checker)
    other,            // any other finding (crashes, liveness, nondeterminism, new checkers)
};
Family family_of(std::string_view finding);
std::string_view to_string(Family family);

// The one-line reproduction of a failing run, and a report for RC_FAIL: what failed, verdict,
// signature, every finding, the run's message and the command (RapidCheck prints the trace itself,
// as the counterexample, right above the report).
std::string repro_command(std::string_view variant, std::string_view file = "cex.trace");
std::string failure_report(const Trace& trace, std::string_view variant, const RunResult& result,
                           std::string_view what);

}  // namespace kvsim::propgen
