// The registry's parser: one line at a time, one handler per field keyword (a table), every error
// one line "FILE:LINE: FIELD: MESSAGE".
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <sstream>

#include "properties/checkers/finding.h"
#include "properties/findings/registry.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_schema.h"
#include "sim/variant/variant.h"

namespace kvsim {
namespace {

constexpr EnumNames<FindingClass, 3> kClassNames = {{
    {FindingClass::upstream, "upstream"},
    {FindingClass::known_bug, "known_bug"},
    {FindingClass::kvsim_bug, "kvsim_bug"},
}};
constexpr EnumNames<UpstreamState, 5> kStateNames = {{
    {UpstreamState::open, "open"},
    {UpstreamState::known, "known"},
    {UpstreamState::merged, "merged"},
    {UpstreamState::not_reported, "not_reported"},
    {UpstreamState::fixed, "fixed"},
}};
constexpr std::array kHistories = {"self_reserved_after_failed_load", "loaded_but_never_promoted",
                                   "repeated_whole_batch_preemption"};
constexpr std::array kConnectorSettings = {"role", "load_async", "lookup_async", "enable_lookup", "save_decode_cache"};
constexpr std::array kEngineSettings = {"async_scheduling", "kv_load_failure_policy"};
constexpr std::array kFindingFields = {"connector", "id", "request"};

struct Line {
    const std::string& file;
    int number;
    std::string keyword;
    std::vector<std::string> words;  // after the keyword
    std::string rest;                // the text after the keyword, trimmed
};

[[noreturn]] void fail(const Line& line, std::string_view field, std::string_view message) {
    throw InputError(line.file, line.number, field, message);
}

std::vector<std::string> split_words(std::string_view text) {
    std::vector<std::string> out;
    std::istringstream in{std::string(text)};
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

std::string trim(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(" \t\r");
    return std::string(text.substr(first, last - first + 1));
}

FieldMatch field_match(const Line& line, const std::string& word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == word.size())
        fail(line, line.keyword, fmt::format("{} is not KEY=VALUE", quote(word)));
    return {word.substr(0, eq), word.substr(eq + 1)};
}

std::vector<FieldMatch> field_matches(const Line& line, std::size_t from) {
    std::vector<FieldMatch> out;
    for (std::size_t i = from; i < line.words.size(); ++i) out.push_back(field_match(line, line.words[i]));
    return out;
}

const std::string& word(const Line& line, std::size_t i, std::string_view what) {
    if (i >= line.words.size()) fail(line, line.keyword, fmt::format("missing {}", what));
    return line.words[i];
}

void require_one_of(const Line& line, std::string_view value, const auto& allowed, std::string_view what) {
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
    std::string list;
    for (const auto& a : allowed) list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
    fail(line, line.keyword, fmt::format("unknown {} {} (expected {})", what, quote(value), list));
}

void parse_signature(KnownEntry& e, const Line& line) {
    SignatureMatch s{word(line, 0, "the signature"), field_matches(line, 1)};
    const auto colon = s.signature.find(':');
    const auto kind = parse_enum(kFindingKindNames, std::string_view(s.signature).substr(0, colon));
    if (colon == std::string::npos || colon + 1 == s.signature.size() || !kind || *kind == FindingKind::internal ||
        *kind == FindingKind::mismatch)  // a check mismatch is the trace's own statement, never a known cause
        fail(line, "signature", fmt::format("{} is not KIND:ID (violation, crash, liveness, nondeterminism)", quote(s.signature)));
    for (const auto& f : s.finding_fields) require_one_of(line, f.key, kFindingFields, "finding field");
    e.signatures.push_back(std::move(s));
}

Condition event_condition(const Line& line, ConditionKind kind) {
    const std::string& name = word(line, 0, "the event category");
    const auto category = parse_event_category(name);
    if (!category) fail(line, line.keyword, fmt::format("unknown event category {}", quote(name)));
    return Condition{.kind = kind, .category = *category, .fields = field_matches(line, 1), .line = line.number};
}

void check_flags(const Line& line, const std::vector<FieldMatch>& flags) {
    if (flags.empty()) fail(line, line.keyword, "missing FLAG=VALUE");
    for (const FieldMatch& f : flags) {
        Variant probe;
        if (!set_variant_flag(probe, f.key, f.value))
            fail(line, line.keyword, fmt::format("unknown variant flag or value {} (kvsim variants)", quote(f.key + "=" + f.value)));
    }
}

Condition condition(const Line& line) {
    if (line.keyword == "event") return event_condition(line, ConditionKind::event);
    if (line.keyword == "no_event") return event_condition(line, ConditionKind::no_event);
    if (line.keyword == "stack")
        return Condition{.kind = ConditionKind::stack, .value = word(line, 0, "the connector kinds"), .line = line.number};
    if (line.keyword == "history") {
        const std::string& name = word(line, 0, "the history name");
        require_one_of(line, name, kHistories, "history");
        return Condition{.kind = ConditionKind::history, .value = name, .line = line.number};
    }
    if (line.keyword == "engine") {
        Condition c{.kind = ConditionKind::engine, .fields = field_matches(line, 0), .line = line.number};
        if (c.fields.empty()) fail(line, "engine", "expected KEY=VALUE (async_scheduling, kv_load_failure_policy)");
        for (const auto& f : c.fields) require_one_of(line, f.key, kEngineSettings, "engine setting");
        return c;
    }
    if (line.keyword == "flag") {
        Condition c{.kind = ConditionKind::flag, .fields = field_matches(line, 0), .line = line.number};
        check_flags(line, c.fields);
        return c;
    }
    Condition c{.kind = ConditionKind::connector, .value = word(line, 0, "the connector kind"),
                .fields = field_matches(line, 1), .line = line.number};
    for (const auto& f : c.fields) require_one_of(line, f.key, kConnectorSettings, "connector setting");
    return c;
}

void parse_upstream(KnownEntry& e, const Line& line) {
    const std::string& state = word(line, 0, "the state");
    const auto parsed = parse_enum(kStateNames, state);
    if (!parsed) require_one_of(line, state, std::array{"open", "known", "merged", "not_reported", "fixed"}, "state");
    e.upstream.state = *parsed;
    const auto dash = line.rest.find(" -- ");
    const auto refs = split_words(std::string_view(line.rest).substr(0, dash));
    for (std::size_t i = 1; i < refs.size(); ++i) {
        if (refs[i].size() < 2 || refs[i][0] != '#' || refs[i].find_first_not_of("0123456789", 1) != std::string::npos)
            fail(line, "upstream", fmt::format("{} is not an upstream reference #N", quote(refs[i])));
        e.upstream.references.push_back(refs[i]);
    }
    if (dash != std::string::npos) e.upstream.note = trim(std::string_view(line.rest).substr(dash + 4));
}

// fix +PATCH | fix flags FLAG=VALUE... | fix describe TEXT
void parse_fix(KnownEntry& e, const Line& line) {
    const std::string& first = word(line, 0, "+PATCH, 'flags FLAG=VALUE...' or 'describe TEXT'");
    if (first == "describe") {
        e.fix.text = trim(std::string_view(line.rest).substr(8));
        if (e.fix.text.empty()) fail(line, "fix", "'describe' needs the text");
    } else if (first == "flags") {
        e.fix.flags = field_matches(line, 1);
        check_flags(line, e.fix.flags);
    } else if (first.size() >= 2 && first.front() == '+' && line.words.size() == 1) {
        Variant probe;
        if (!apply_variant_patch(probe, std::string_view(first).substr(1)))
            fail(line, "fix", fmt::format("unknown variant patch {} (kvsim variants)", quote(first)));
        e.fix.patch = first;
    } else {
        fail(line, "fix", "expected +PATCH (one variant patch), 'flags FLAG=VALUE...' or 'describe TEXT'");
    }
}

void parse_field(KnownEntry& e, const Line& line) {
    const std::string& k = line.keyword;
    if (k == "class") {
        const auto c = parse_enum(kClassNames, word(line, 0, "the class"));
        if (!c || line.words.size() != 1) fail(line, k, "expected upstream, known_bug or kvsim_bug");
        e.finding_class = *c;
    } else if (k == "variants") {
        for (const auto& v : split_words(line.rest))
            for (std::size_t at = 0; at <= v.size();) {
                const auto comma = std::min(v.find(',', at), v.size());
                if (comma > at) e.variants.push_back(v.substr(at, comma - at));
                at = comma + 1;
            }
        if (e.variants.empty()) fail(line, k, "missing the variant globs");
    } else if (k == "signature") {
        parse_signature(e, line);
    } else if (k == "upstream") {
        parse_upstream(e, line);
    } else if (k == "witness") {
        if (line.words.size() != 2) fail(line, k, "expected TRACE VARIANT");
        e.witnesses.push_back({line.words[0], line.words[1]});
    } else if (k == "fix") {
        parse_fix(e, line);
    } else if (k == "why") {
        e.why += (e.why.empty() ? "" : " ") + line.rest;
    } else {
        e.conditions.push_back(condition(line));
    }
}

constexpr std::array kKeywords = {"class", "variants", "signature", "stack",    "event",   "no_event", "flag",
                                  "connector", "engine", "history", "upstream", "witness", "fix",      "why"};

void check_complete(const KnownEntry& e, const std::string& file) {
    const auto missing = [&](std::string_view field) {
        throw InputError(file, e.line, fmt::format("{}.{}", e.id, field), "missing");
    };
    if (e.variants.empty()) missing("variants");
    if (e.signatures.empty()) missing("signature");
    if (e.witnesses.empty()) missing("witness");
    if (!e.fix.modelled() && e.fix.text.empty()) missing("fix");
    if (e.why.empty()) missing("why");
}

// A line is printable ASCII and tabs (one trailing CR aside), as a trace line is: no byte of it can
// reach a terminal as an escape when an error message quotes it.
void require_printable(const std::string& file, int number, std::string_view raw) {
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    for (const char c : raw) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte != '\t' && (byte < 0x20 || byte >= 0x7f))
            throw InputError(file, number, "line",
                             fmt::format("byte 0x{:02x} is not printable ASCII: {}", byte, quote(raw)));
    }
}

Line split_line(const std::string& file, int number, std::string_view raw) {
    require_printable(file, number, raw);
    const std::string text = trim(raw);
    const auto space = text.find_first_of(" \t");
    Line line{file, number, text.substr(0, space), {}, {}};
    if (space != std::string::npos) line.rest = trim(std::string_view(text).substr(space));
    line.words = split_words(line.rest);
    return line;
}

}  // namespace

std::string_view to_string(FindingClass c) { return enum_name(kClassNames, c); }
std::string_view to_string(UpstreamState s) { return enum_name(kStateNames, s); }

Registry parse_registry(std::string_view text, const std::string& file) {
    Registry registry{file, {}};
    std::vector<bool> has_upstream;
    int number = 0;
    for (std::size_t at = 0; at < text.size();) {
        const auto nl = std::min(text.find('\n', at), text.size());
        const Line line = split_line(file, ++number, text.substr(at, nl - at));
        at = nl + 1;
        if (line.keyword.empty() || line.keyword.front() == '#') continue;
        if (line.keyword == "finding") {
            if (line.words.size() != 1) fail(line, "finding", "expected 'finding ID'");
            if (registry.find(line.words[0])) fail(line, "finding", fmt::format("duplicate id {}", quote(line.words[0])));
            if (!registry.entries.empty()) check_complete(registry.entries.back(), file);
            registry.entries.push_back(KnownEntry{.id = line.words[0], .line = number});
            has_upstream.push_back(false);
            continue;
        }
        require_one_of(line, line.keyword, kKeywords, "field");
        if (registry.entries.empty()) fail(line, line.keyword, "a field before the first 'finding ID' line");
        if (line.keyword == "upstream") has_upstream.back() = true;
        parse_field(registry.entries.back(), line);
    }
    if (registry.entries.empty()) throw InputError(file, number, "finding", "the registry has no entry");
    check_complete(registry.entries.back(), file);
    for (std::size_t i = 0; i < registry.entries.size(); ++i)
        if (!has_upstream[i])
            throw InputError(file, registry.entries[i].line, registry.entries[i].id + ".upstream", "missing");
    return registry;
}

}  // namespace kvsim
