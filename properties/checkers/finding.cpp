#include "properties/checkers/finding.h"

#include <fmt/format.h>

namespace kvsim {
namespace {

// The connector whose upstream file an assertion names; empty for the core.
std::string connector_of(const UpstreamSite& site) {
    if (site.file.find("/mooncake/store/") != std::string::npos) return "store";
    if (site.file.ends_with("/mooncake/mooncake_connector.py")) return "p2p";
    if (site.file.ends_with("/multi_connector.py")) return "multi";
    return "";
}

}  // namespace

std::string_view to_string(FindingKind kind) { return enum_name(kFindingKindNames, kind); }

UpstreamSite parse_upstream_site(std::string_view site) {
    const auto space = site.find(' ');
    if (space == std::string_view::npos) return {.file = std::string(site), .function = ""};
    return {.file = std::string(site.substr(0, space)), .function = std::string(site.substr(space + 1))};
}

std::string Finding::signature() const {
    return kind == FindingKind::internal ? std::string() : fmt::format("{}:{}", to_string(kind), id);
}

std::optional<std::int64_t> Finding::fact(std::string_view key) const {
    for (const Field& f : facts)
        if (const auto* v = std::get_if<std::int64_t>(&f.value); f.key == key && v != nullptr) return *v;
    return std::nullopt;
}

std::string Finding::fact_text(std::string_view key) const {
    for (const Field& f : facts)
        if (const auto* v = std::get_if<std::string>(&f.value); f.key == key && v != nullptr) return *v;
    return "";
}

std::string Finding::message() const {
    switch (kind) {
        case FindingKind::violation:
            return fmt::format("step {}: {}", step,
                               describe(Violation{.invariant = id, .request = request, .blocks = blocks, .detail = detail}));
        case FindingKind::crash:
            return fmt::format("step {}: {}{}{}: AssertionError: {}", step, upstream->file,
                               upstream->function.empty() ? "" : " ", upstream->function, detail);
        case FindingKind::internal: return fmt::format("step {}: kvsim internal error: {}", step, detail);
        case FindingKind::liveness:
            if (const auto stalled = fact("stalled"))
                return fmt::format("no progress in {} steps after the last event (step {}, limit {}): {} request(s) "
                                   "unfinished, {} finished but holding blocks",
                                   *stalled, step, fact("max_steps").value_or(0), fact("unfinished").value_or(0),
                                   fact("held").value_or(0));
            return fmt::format("step limit {} reached: {} request(s) unfinished, {} finished but holding blocks",
                               fact("max_steps").value_or(0), fact("unfinished").value_or(0), fact("held").value_or(0));
        case FindingKind::mismatch: {
            const std::string item = fact_text("check_id");
            return fmt::format("check {}{}{} {}: expected {}, got {} at step {}", fact_text("check_kind"),
                               item.empty() ? "" : " ", item, fact_text("key"), fact_text("expected"), fact_text("got"),
                               step);
        }
        case FindingKind::nondeterminism:
            return fmt::format("two replays disagree: digest {} vs {}", fact_text("first_digest"),
                               fact_text("second_digest"));
        case FindingKind::rejected: return detail;
    }
    return detail;
}

Finding violation_finding(const Violation& v, int step) {
    return {.kind = FindingKind::violation,
            .id = v.invariant,
            .step = step,
            .request = v.request,
            .connector = v.connector,
            .job = v.job,
            .rank = v.rank,
            .blocks = v.blocks,
            .tokens = v.tokens,
            .upstream = std::nullopt,
            .detail = v.detail,
            .facts = {}};
}

Finding crash_finding(const UpstreamCrash& crash) {
    return {.kind = FindingKind::crash,
            .id = crash.id,
            .step = crash.step,
            .request = crash.request,
            .connector = connector_of(crash.site),
            .job = std::nullopt,
            .rank = std::nullopt,
            .blocks = {},
            .tokens = std::nullopt,
            .upstream = crash.site,
            .detail = crash.assertion,
            .facts = {}};
}

Finding internal_finding(std::string what, int step) {
    return {.kind = FindingKind::internal,
            .id = "kvsim_internal_error",
            .step = step,
            .request = {},
            .connector = {},
            .job = std::nullopt,
            .rank = std::nullopt,
            .blocks = {},
            .tokens = std::nullopt,
            .upstream = std::nullopt,
            .detail = std::move(what),
            .facts = {}};
}

}  // namespace kvsim
