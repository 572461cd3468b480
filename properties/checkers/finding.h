#pragma once
// What a run found, as values: every violation, the upstream crash, a liveness or determinism
// failure, or kvsim's own internal error. The one-line message is rendered from the fields.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "properties/checkers/checker.h"
#include "sim/common/enum_names.h"
#include "sim/common/event_log.h"

namespace kvsim {

enum class FindingKind { violation, crash, liveness, nondeterminism, internal, mismatch, rejected };
inline constexpr EnumNames<FindingKind, 7> kFindingKindNames = {{
    {FindingKind::violation, "violation"},
    {FindingKind::crash, "crash"},
    {FindingKind::liveness, "liveness"},
    {FindingKind::nondeterminism, "nondeterminism"},
    {FindingKind::internal, "internal"},
    {FindingKind::mismatch, "mismatch"},  // a step check of the trace read another value
    {FindingKind::rejected, "rejected"},  // upstream refuses the configuration: id is the rule's
}};
std::string_view to_string(FindingKind kind);

// Where upstream fails: "vllm/v1/core/sched/scheduler.py" and "Scheduler._free_blocks".
struct UpstreamSite {
    std::string file;
    std::string function;
    bool operator==(const UpstreamSite&) const = default;
};
// An UpstreamAssertion's site text ("FILE Class.function"), split at its first space.
UpstreamSite parse_upstream_site(std::string_view site);

// The modelled engine died on an upstream assertion.
struct UpstreamCrash {
    std::string id;  // the assertion's stable slug, e.g. "missing_current_block_table"
    UpstreamSite site;
    std::string assertion;  // upstream's message
    std::string request;    // the request it names; may be empty
    int step = 0;
};

struct Finding {
    FindingKind kind = FindingKind::violation;
    // The invariant (violation, liveness, nondeterminism) or assertion (crash) id;
    // "kvsim_internal_error" for kvsim's own failed precondition; "KIND.KEY" for a check mismatch
    // (its facts: check_kind, check_id, key, expected, got).
    std::string id;
    int step = 0;
    std::string request;
    std::string connector;  // "store", "p2p"...; empty when the finding is not about one connector
    std::optional<std::int64_t> job;
    std::optional<int> rank;
    std::vector<BlockId> blocks;
    std::optional<TokenRange> tokens;
    std::optional<UpstreamSite> upstream;  // crashes: the failing upstream file and function
    std::string detail;  // violations: the checker's line; crashes: upstream's message; internal: kvsim's
    std::vector<Field> facts;  // typed extras (liveness counts, replay digests)

    // "<kind>:<id>"; empty for an internal error.
    std::string signature() const;
    // The one-line message of the verdict line, rendered from the fields.
    std::string message() const;
    std::optional<std::int64_t> fact(std::string_view key) const;
    std::string fact_text(std::string_view key) const;
};

Finding violation_finding(const Violation& violation, int step);
Finding crash_finding(const UpstreamCrash& crash);
Finding internal_finding(std::string what, int step);

}  // namespace kvsim
