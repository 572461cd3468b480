// Out-of-line parts of the trace data model (trace.h).
#include "sim/trace/trace.h"

#include "sim/common/stable_hash.h"

namespace kvsim {

const Segment* Trace::find_segment(std::string_view name) const {
    for (const Segment& s : segments)
        if (s.name == name) return &s;
    return nullptr;
}

std::vector<std::int32_t> Trace::concat_segments(const std::vector<std::string>& names) const {
    std::vector<std::int32_t> out;
    for (const std::string& name : names) {
        // A validated trace names only defined segments; an unknown one contributes nothing.
        if (const Segment* s = find_segment(name)) out.insert(out.end(), s->tokens.begin(), s->tokens.end());
    }
    return out;
}

SegmentIndex::SegmentIndex(const Trace& trace) {
    for (const Segment& s : trace.segments) by_name_.try_emplace(s.name, &s);
}

std::vector<std::int32_t> SegmentIndex::concat(const std::vector<std::string>& names) const {
    std::vector<std::int32_t> out;
    for (const std::string& name : names)
        if (const auto it = by_name_.find(name); it != by_name_.end())
            out.insert(out.end(), it->second->tokens.begin(), it->second->tokens.end());
    return out;
}

std::vector<std::int32_t> Trace::prompt_tokens(const ArriveEvent& arrive) const {
    return concat_segments(arrive.prompt);
}

std::optional<KvRole> top_level_role(const Trace& trace) {
    if (trace.multi) return trace.multi->role;
    if (trace.connectors.size() == 1) return trace.connectors.front().role;
    return std::nullopt;
}

bool is_kv_consumer(KvRole role) { return role != KvRole::kv_producer; }
bool is_kv_producer(KvRole role) { return role != KvRole::kv_consumer; }

std::string_view to_string(KvRole role) { return enum_name(kKvRoleNames, role); }
std::string_view to_string(Verdict verdict) { return enum_name(kVerdictNames, verdict); }
std::string_view to_string(FaultKind kind) { return enum_name(kFaultKindNames, kind); }
std::string_view to_string(ReportKind kind) { return enum_name(kReportKindNames, kind); }
std::optional<ReportKind> parse_report_kind(std::string_view text) { return parse_enum(kReportKindNames, text); }

std::string* event_request_id(EventBody& body) {
    struct Visit {
        std::string* operator()(ArriveEvent& e) const { return &e.request_id; }
        std::string* operator()(AbortEvent& e) const { return &e.request_id; }
        std::string* operator()(FaultEvent& e) const { return e.request_id.empty() ? nullptr : &e.request_id; }
        std::string* operator()(ReportEvent& e) const { return &e.request_id; }
        std::string* operator()(StopEvent& e) const { return &e.request_id; }
        std::string* operator()(ResetPrefixCacheEvent&) const { return nullptr; }
    };
    return std::visit(Visit{}, body);
}

const std::string* event_request_id(const EventBody& body) {
    return event_request_id(const_cast<EventBody&>(body));
}

std::optional<FaultKind> parse_fault_kind(std::string_view text) { return parse_enum(kFaultKindNames, text); }
std::optional<KvRole> parse_role(std::string_view text) { return parse_enum(kKvRoleNames, text); }
std::optional<Verdict> parse_verdict(std::string_view text) { return parse_enum(kVerdictNames, text); }

std::vector<std::int32_t> generated_segment_tokens(std::string_view name, int length) {
    std::vector<std::int32_t> out;
    if (length <= 0) return out;
    out.reserve(static_cast<std::size_t>(length));
    const std::uint64_t base = fnv1a(name);
    for (int i = 0; i < length; ++i) {
        const std::uint64_t h = mix64(hash_combine(base, static_cast<std::uint64_t>(i)));
        out.push_back(static_cast<std::int32_t>(1 + h % 50000));
    }
    return out;
}

void derive_segment_tokens(Segment& segment) {
    if (segment.pending_len == 0) return;
    segment.tokens = generated_segment_tokens(segment.name, segment.pending_len);
    segment.pending_len = 0;
}

}  // namespace kvsim
