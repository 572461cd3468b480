#include "properties/harness/run_json.h"

#include <fmt/format.h>

namespace kvsim {
namespace {

Json field_json(const Field& field) {
    switch (field.kind) {
        case FieldKind::integer: return std::get<std::int64_t>(field.value);
        case FieldKind::flag: return std::get<std::int64_t>(field.value) != 0;
        case FieldKind::text:
        case FieldKind::request:
        case FieldKind::status: return std::get<std::string>(field.value);
        case FieldKind::blocks: return std::get<IdList>(field.value);
        case FieldKind::block_groups: return std::get<GroupList>(field.value);
        case FieldKind::requests: return std::get<NameList>(field.value);
        case FieldKind::request_counts: {
            Json list = Json::array();
            for (const auto& [id, n] : std::get<CountList>(field.value)) list.push_back({{"request", id}, {"count", n}});
            return list;
        }
    }
    return nullptr;
}

template <class T>
Json or_null(const std::optional<T>& value) {
    return value ? Json(*value) : Json(nullptr);
}

Json text_or_null(const std::string& text) { return text.empty() ? Json(nullptr) : Json(text); }

Json crash_json(const UpstreamCrash& crash) {
    return {{"id", crash.id},
            {"file", crash.site.file},
            {"function", crash.site.function},
            {"assertion", crash.assertion},
            {"request", text_or_null(crash.request)},
            {"step", crash.step}};
}

}  // namespace

Json event_json(const LogEvent& event) {
    Json out = {{"step", event.step}, {"category", to_string(event.category)}};
    for (const Field& field : event.fields) out[std::string(field.key)] = field_json(field);
    return out;
}

std::string events_jsonl(const std::vector<LogEvent>& events) {
    std::string out;
    for (const LogEvent& event : events) out += event_json(event).dump() + "\n";
    return out;
}

Json finding_json(const Finding& f) {
    Json facts = Json::object();
    for (const Field& field : f.facts) facts[std::string(field.key)] = field_json(field);
    const bool checker = f.kind != FindingKind::crash && f.kind != FindingKind::internal;
    return {{"kind", to_string(f.kind)},
            {"signature", text_or_null(f.signature())},
            {"invariant", checker ? Json(f.id) : Json(nullptr)},
            {"upstream_file", f.upstream ? Json(f.upstream->file) : Json(nullptr)},
            {"upstream_function", f.upstream ? Json(f.upstream->function) : Json(nullptr)},
            {"step", f.step},
            {"request", text_or_null(f.request)},
            {"connector", text_or_null(f.connector)},
            {"job", or_null(f.job)},
            {"rank", or_null(f.rank)},
            {"blocks", f.blocks},
            {"tokens", f.tokens ? Json{{"start", f.tokens->start}, {"end", f.tokens->end}} : Json(nullptr)},
            {"detail", f.detail},
            {"facts", facts},
            {"message", f.message()}};
}

Json run_result_json(const RunResult& result) {
    Json findings = Json::array();
    for (const Finding& f : result.findings) findings.push_back(finding_json(f));
    return {{"verdict", result.internal_error ? "internal-error" : std::string(to_string(result.verdict))},
            {"signature", text_or_null(result.signature)},
            {"message", text_or_null(result.message)},
            {"steps", result.steps},
            {"digest", fmt::format("{:016x}", result.digest)},
            {"internal_error", result.internal_error},
            {"findings", findings},
            {"crash", result.crash ? crash_json(*result.crash) : Json(nullptr)},
            {"lifecycle_edges", result.lifecycle_edges}};
}

}  // namespace kvsim
