#include "properties/generators/rc_support.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "properties/harness/verdict_line.h"
#include "sim/common/enum_names.h"
#include "sim/trace/trace_parser.h"

namespace kvsim::propgen {
namespace {

std::optional<std::uint64_t> env_number(const char* name) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return std::nullopt;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 10);
    if (end == text || *end != '\0')
        throw std::invalid_argument(fmt::format("{}={}: expected a non-negative integer", name, text));
    return static_cast<std::uint64_t>(value);
}

int clamp_int(std::uint64_t v) { return static_cast<int>(std::min<std::uint64_t>(v, 1'000'000'000)); }

// Invariant ids of properties/checkers/worker_access_checker.cpp, and the upstream assertions
// that guard the same property (MooncakeStoreScheduler._apply_current_save_block_ids).
const std::vector<std::string_view> kSnapshotAccess = {
    "violation:save_without_current_table", "violation:save_block_not_in_snapshot",
    "violation:save_tokens_without_blocks", "violation:read_freed_block",
    "violation:read_foreign_block",         "violation:load_into_foreign_block",
    "crash:missing_current_block_table",    "crash:current_block_tables_required",
};
// properties/checkers/block_pool_checker.cpp
const std::vector<std::string_view> kBlockPool = {
    "violation:null_block_handed_out", "violation:free_queue_size",   "violation:null_block",
    "violation:null_block_freed",      "violation:null_block_cached", "violation:double_free",
    "violation:ref_count_mismatch",    "violation:free_queue_mismatch", "violation:prefix_map_stale",
};
// properties/checkers/request_state_checker.cpp
const std::vector<std::string_view> kRequestState = {
    "violation:queued_request_gone",  "violation:queue_status_mismatch", "violation:finished_request_queued",
    "violation:request_placement",    "violation:computed_beyond_tokens", "violation:computed_without_blocks",
    "violation:blocks_of_dead_request", "violation:live_block_in_free_queue", "violation:block_shared_unhashed",
    "violation:lifecycle_transition",  // properties/checkers/lifecycle_checker.cpp
};

bool contains(const std::vector<std::string_view>& list, std::string_view s) {
    return std::find(list.begin(), list.end(), s) != list.end();
}

}  // namespace

bool rc_params_set() {
    const char* text = std::getenv("RC_PARAMS");
    return text != nullptr && *text != '\0';
}

RcSettings rc_settings(int default_cases, bool fixed) {
    RcSettings s;
    s.cases = default_cases;
    if (fixed) return s;
    if (auto v = env_number("KVSIM_RC_MAX_SIZE")) s.max_size = std::max(1, clamp_int(*v));
    if (auto v = env_number("KVSIM_RC_NO_SHRINK")) s.shrink = *v == 0;
    if (auto v = env_number("KVSIM_RC_SEED")) s.seed = *v;
    if (auto v = env_number("KVSIM_RC_SCALE")) s.cases = clamp_int(static_cast<std::uint64_t>(default_cases) * *v);
    if (auto v = env_number("KVSIM_RC_CASES")) s.cases = clamp_int(*v);
    s.cases = std::max(1, s.cases);
    return s;
}

std::string result_text(const rc::detail::TestResult& result) {
    std::ostringstream os;
    rc::detail::printResultMessage(result, os);
    return os.str();
}

std::optional<Trace> counterexample_trace(const rc::detail::TestResult& result) {
    rc::detail::FailureResult failure;
    if (!result.match(failure)) return std::nullopt;
    for (const auto& [type, text] : failure.counterExample) {
        try {
            return parse_trace(text, "counterexample.trace");
        } catch (const InputError&) {
            continue;
        }
    }
    return std::nullopt;
}

std::vector<std::string> findings(const RunResult& result) {
    std::vector<std::string> out;
    auto add = [&](const std::string& signature) {
        if (!signature.empty() && std::find(out.begin(), out.end(), signature) == out.end()) out.push_back(signature);
    };
    for (const Finding& f : result.findings)
        if (f.kind == FindingKind::violation) add(f.signature());
    add(result.signature);
    if (result.internal_error) out.push_back("internal");
    return out;
}

Family family_of(std::string_view finding) {
    if (contains(kSnapshotAccess, finding)) return Family::snapshot_access;
    if (contains(kBlockPool, finding)) return Family::block_pool;
    if (contains(kRequestState, finding)) return Family::request_state;
    return Family::other;
}

std::string_view to_string(Family family) {
    static constexpr EnumNames<Family, 4> kNames = {{
        {Family::snapshot_access, "snapshot and block access"},
        {Family::block_pool, "block pool"},
        {Family::request_state, "request state"},
        {Family::other, "other"},
    }};
    return enum_name(kNames, family);
}

std::string repro_command(std::string_view variant, std::string_view file) {
    return kvsim::repro_command(file, variant);
}

std::string failure_report(const Trace& trace, std::string_view variant, const RunResult& result,
                           std::string_view what) {
    (void)trace;  // the counterexample itself is printed by RapidCheck (showValue) right above
    const std::string verdict = result.internal_error ? "internal error" : std::string(to_string(result.verdict));
    std::string found;
    for (const auto& f : findings(result)) found += (found.empty() ? "" : ", ") + f;
    return fmt::format(
        "{}\nvariant {}: {} {} after {} step(s); findings: {}\n{}\n"
        "reproduce: save the trace above as cex.trace, then: {}\n",
        what, variant, verdict, result.signature, result.steps, found.empty() ? "-" : found, result.message,
        repro_command(variant));
}

}  // namespace kvsim::propgen
