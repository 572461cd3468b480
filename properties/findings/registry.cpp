#include "properties/findings/registry.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "properties/findings/registry_text.h"
#include "sim/trace/input_error.h"

namespace kvsim {

bool glob_matches(std::string_view pattern, std::string_view text) {
    if (pattern.empty()) return text.empty();
    if (pattern.front() == '*') {
        for (std::size_t skip = 0; skip <= text.size(); ++skip)
            if (glob_matches(pattern.substr(1), text.substr(skip))) return true;
        return false;
    }
    return !text.empty() && pattern.front() == text.front() && glob_matches(pattern.substr(1), text.substr(1));
}

std::string FixEdit::label() const {
    if (!patch.empty()) return patch;
    if (flags.empty()) return text;
    std::string out = "flags";
    for (const FieldMatch& f : flags) out += " " + f.key + "=" + f.value;
    return out;
}

bool KnownEntry::applies_to(std::string_view variant) const {
    return std::any_of(variants.begin(), variants.end(), [&](const std::string& g) { return glob_matches(g, variant); });
}

const SignatureMatch* KnownEntry::signature_named(std::string_view signature) const {
    for (const SignatureMatch& s : signatures)
        if (s.signature == signature) return &s;
    return nullptr;
}

EventCategories events_read(const Condition& c) {
    switch (c.kind) {
        case ConditionKind::event: case ConditionKind::no_event: return {c.category};
        case ConditionKind::history: return EventCategories::all();
        default: return {};
    }
}

EventCategories Registry::events_read() const {
    EventCategories read;
    for (const KnownEntry& e : entries)
        for (const Condition& c : e.conditions) read.insert(kvsim::events_read(c));
    return read;
}

const KnownEntry* Registry::find(std::string_view id) const {
    for (const KnownEntry& e : entries)
        if (e.id == id) return &e;
    return nullptr;
}

Registry load_registry(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw InputError(path, 0, "registry", "is a directory, not a registry");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, 0, "registry", "cannot read the file");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_registry(text.str(), path);
}

const Registry& builtin_registry() {
    static const Registry registry = parse_registry(registry_text(), std::string(registry_source_path()));
    return registry;
}

}  // namespace kvsim
