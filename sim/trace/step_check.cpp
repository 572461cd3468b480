// The step-check key table and the check line's codec (step_check.h).
#include "sim/trace/step_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "sim/trace/trace.h"
#include "sim/trace/trace_schema.h"
#include "sim/variant/variant.h"

namespace kvsim {
namespace {

using K = CheckKey;
using T = CheckValueType;
using C = CheckKind;

// One row per key of check_keys.def, in CheckKey order (check_key_spec indexes it).
constexpr CheckKeySpec kCheckKeys[] = {
#define KVSIM_CHECK_KEY(kind, name, type, needs_id, help) {C::kind, #name, K::kind##_##name, T::type, needs_id, help},
#include "sim/trace/check_keys.def"
#undef KVSIM_CHECK_KEY
};

constexpr EnumNames<CheckValueType, 6> kValueTypeNames = {{
    {T::integer, "N"},
    {T::boolean, "on|off"},
    {T::status, "STATUS"},
    {T::names, "ID+ID...|-"},
    {T::blocks, "B,B,...|-"},
    {T::index, "N|-"},
}};

constexpr std::size_t kMaxVariants = 16;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_' || c == '.' || c == '-';
}

bool is_integer(std::string_view s) {
    if (s.empty() || s.size() > 10 || (s.size() > 1 && s[0] == '0')) return false;
    for (char c : s)
        if (!is_digit(c)) return false;
    return true;
}

bool is_name(std::string_view s) {
    if (s.empty() || s.size() > static_cast<std::size_t>(limits::kMaxIdLen)) return false;
    for (char c : s)
        if (!is_name_char(c)) return false;
    return true;
}

template <class Pred>
bool is_list(std::string_view s, char sep, Pred element) {
    if (s == "-") return true;
    std::size_t start = 0;
    while (true) {
        const std::size_t pos = s.find(sep, start);
        if (!element(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start)))
            return false;
        if (pos == std::string_view::npos) return true;
        start = pos + 1;
    }
}

bool is_status(std::string_view s) {
    return std::find(std::begin(kCheckStatusNames), std::end(kCheckStatusNames), s) != std::end(kCheckStatusNames);
}

bool value_ok(CheckValueType type, std::string_view s) {
    if (s == "absent") return true;  // the item the key reads does not exist (any value form)
    switch (type) {
        case T::integer: return is_integer(s);
        case T::boolean: return s == "on" || s == "off";
        case T::status: return is_status(s);
        case T::names: return is_list(s, '+', is_name);
        case T::blocks: return is_list(s, ',', is_integer);
        case T::index: return s == "-" || is_integer(s);
    }
    return false;
}

const CheckKeySpec* find_key(CheckKind kind, std::string_view name) {
    for (const CheckKeySpec& k : kCheckKeys)
        if (k.kind == kind && k.name == name) return &k;
    return nullptr;
}

std::string kind_names() {
    std::string out;
    for (const auto& [kind, name] : kCheckKindNames) out += fmt::format("{}{}", out.empty() ? "" : ", ", name);
    return out;
}

std::string keys_of(CheckKind kind) {
    std::string out;
    for (const CheckKeySpec& k : kCheckKeys) {
        if (k.kind != kind) continue;
        if (!out.empty()) out += ", ";
        out += k.name;
    }
    return out;
}

std::optional<CheckError> check_id(const CheckEvent& check) {
    bool needs_id = false;
    bool no_id = false;
    for (const CheckAssert& a : check.asserts) (check_key_spec(a.key).needs_id ? needs_id : no_id) = true;
    if (needs_id && no_id)
        return CheckError{"check.id", fmt::format("{} keys that read one item and keys that read all cannot share a "
                                                  "line",
                                                  to_string(check.kind))};
    if (needs_id && check.id.empty()) return CheckError{"check.id", "missing ID: these keys read one item"};
    if (!needs_id && !check.id.empty())
        return CheckError{"check.id", fmt::format("unexpected ID {}: these keys take none", quote(check.id))};
    const bool numeric = check.kind == CheckKind::block;
    if (!check.id.empty() && !(numeric ? is_integer(check.id) : is_name(check.id)))
        return CheckError{"check.id", fmt::format("expected {}, got {}", numeric ? "a block id" : "a request id",
                                                  quote(check.id))};
    return std::nullopt;
}

std::optional<CheckError> check_variants(const std::vector<std::string>& variants) {
    if (variants.size() > kMaxVariants)
        return CheckError{"check.variants", fmt::format("more than {} variants", kMaxVariants)};
    for (const std::string& v : variants) {
        std::string error;
        if (v.size() > kMaxVariantNameLen || !resolve_variant(v, &error))
            return CheckError{"check.variants", error.empty() ? fmt::format("bad variant {}", quote(v)) : error};
    }
    return std::nullopt;
}

// One key=value argument into `out`; false + *error when it is not one.
bool parse_argument(std::string_view arg, CheckEvent& out, std::vector<std::string_view>& seen, CheckError* error) {
    const std::size_t eq = arg.find('=');
    const std::string_view key = arg.substr(0, eq);
    const std::string_view value = arg.substr(eq + 1);
    for (std::string_view s : seen)
        if (s == key) return *error = {fmt::format("check.{}", key), "duplicate key"}, false;
    seen.push_back(key);
    if (value.empty()) return *error = {fmt::format("check.{}", key), "empty value"}, false;
    if (key == "at") {
        const auto phase = parse_enum(kCheckPhaseNames, value);
        if (!phase) return *error = {"check.at", fmt::format("expected schedule or end, got {}", quote(value))}, false;
        out.at = *phase;
    } else if (key == "variants") {
        std::size_t start = 0;
        while (true) {  // ',' separates variants: '+' joins a variant's patches
            const std::size_t comma = value.find(',', start);
            out.variants.emplace_back(value.substr(start, comma == std::string_view::npos ? comma : comma - start));
            if (comma == std::string_view::npos) break;
            start = comma + 1;
        }
    } else if (const CheckKeySpec* spec = find_key(out.kind, key)) {
        out.asserts.push_back({.key = spec->key, .expected = std::string(value)});
    } else {
        *error = {"check", fmt::format("unknown key {} for check {} (keys: {}, at, variants)", quote(key),
                                       to_string(out.kind), keys_of(out.kind))};
        return false;
    }
    return true;
}

}  // namespace

std::span<const CheckKeySpec> check_keys() { return kCheckKeys; }
const CheckKeySpec& check_key_spec(CheckKey key) { return kCheckKeys[static_cast<std::size_t>(key)]; }

std::string_view to_string(CheckKind kind) { return enum_name(kCheckKindNames, kind); }
std::string_view to_string(CheckPhase phase) { return enum_name(kCheckPhaseNames, phase); }
std::string_view to_string(CheckValueType type) { return enum_name(kValueTypeNames, type); }

std::optional<CheckEvent> parse_check(std::span<const std::string_view> args, CheckError* error) {
    if (args.empty()) {
        *error = {"check.kind", fmt::format("missing check kind (kinds: {})", kind_names())};
        return std::nullopt;
    }
    const auto kind = parse_enum(kCheckKindNames, args[0]);
    if (!kind) {
        *error = {"check.kind", fmt::format("unknown check kind {} (kinds: {})", quote(args[0]), kind_names())};
        return std::nullopt;
    }
    CheckEvent out;
    out.kind = *kind;
    std::size_t a = 1;
    if (a < args.size() && args[a].find('=') == std::string_view::npos) out.id = std::string(args[a++]);
    std::vector<std::string_view> seen;
    for (; a < args.size(); ++a) {
        if (args[a].find('=') == std::string_view::npos) {
            *error = {"check", fmt::format("unexpected argument {}", quote(args[a]))};
            return std::nullopt;
        }
        if (!parse_argument(args[a], out, seen, error)) return std::nullopt;
    }
    if (auto bad = validate_check(out)) {
        *error = std::move(*bad);
        return std::nullopt;
    }
    return out;
}

std::optional<CheckError> validate_check(const CheckEvent& check) {
    if (check.asserts.empty())
        return CheckError{"check", fmt::format("no key to check (keys of {}: {})", to_string(check.kind),
                                               keys_of(check.kind))};
    for (std::size_t i = 0; i < check.asserts.size(); ++i) {
        const CheckKeySpec& spec = check_key_spec(check.asserts[i].key);
        const std::string field = fmt::format("check.{}", spec.name);
        if (spec.kind != check.kind)
            return CheckError{field, fmt::format("a key of check {}, not {}", to_string(spec.kind),
                                                 to_string(check.kind))};
        for (std::size_t j = 0; j < i; ++j)
            if (check.asserts[j].key == check.asserts[i].key) return CheckError{field, "duplicate key"};
        if (!value_ok(spec.type, check.asserts[i].expected))
            return CheckError{field, fmt::format("expected {}, got {}", to_string(spec.type),
                                                 quote(check.asserts[i].expected))};
    }
    if (auto bad = check_id(check)) return bad;
    return check_variants(check.variants);
}

std::optional<CheckError> check_block_ids(const CheckEvent& check, int num_blocks) {
    const auto out_of_range = [&](std::string_view text) {
        std::size_t start = 0;
        while (text != "-" && text != "absent") {
            const std::size_t comma = text.find(',', start);
            const std::string_view id = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
            if (id.size() > 9 || std::stoll(std::string(id)) >= num_blocks) return true;
            if (comma == std::string_view::npos) break;
            start = comma + 1;
        }
        return false;
    };
    const auto message = [&](std::string_view text) {
        return fmt::format("block id {} out of range: engine.num_blocks={} (ids 0 to {})", quote(text), num_blocks,
                           num_blocks - 1);
    };
    if (check.kind == CheckKind::block && !check.id.empty() && out_of_range(check.id))
        return CheckError{"check.id", message(check.id)};
    for (const CheckAssert& a : check.asserts) {
        const CheckKeySpec& spec = check_key_spec(a.key);
        if (spec.type == CheckValueType::blocks && out_of_range(a.expected))
            return CheckError{fmt::format("check.{}", spec.name), message(a.expected)};
    }
    return std::nullopt;
}

std::string format_check(const CheckEvent& check) {
    std::string out = fmt::format("check {}", to_string(check.kind));
    if (!check.id.empty()) out += " " + check.id;
    for (const CheckAssert& a : check.asserts) out += fmt::format(" {}={}", check_key_spec(a.key).name, a.expected);
    if (check.at != CheckPhase::end) out += fmt::format(" at={}", to_string(check.at));
    if (!check.variants.empty()) out += fmt::format(" variants={}", fmt::join(check.variants, ","));
    return out;
}

std::string check_format_help() {
    std::string out =
        "@STEP check KIND [ID] KEY=VALUE... [at=schedule|end] [variants=V,V...]\n"
        "    the model's state at STEP must be as stated; a difference is the verdict mismatch\n"
        "    at=schedule: after schedule() and build_connector_meta; at=end (default): after the step\n"
        "    variants: the variants the check applies to (default every variant)\n";
    for (const CheckKeySpec& k : kCheckKeys) {
        const std::string left = fmt::format("{} {}{}={}", to_string(k.kind), k.needs_id ? "ID " : "", k.name,
                                             to_string(k.type));
        out += fmt::format("    {:<36} {}\n", left, k.help);
    }
    return out;
}

}  // namespace kvsim
