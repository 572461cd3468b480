// What each root cause needs, computed from its witnesses (entry_settings.h).
#include "properties/findings/entry_settings.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"

namespace kvsim {
namespace {

std::vector<SettingDifference> needed_of(const Trace& trace, const Variant& variant) {
    std::vector<SettingDifference> out = of_group(settings_diff(trace, variant), SettingGroup::setting);
    for (SettingDifference& d : of_group(settings_diff(trace, variant), SettingGroup::test_double))
        out.push_back(std::move(d));
    return out;
}

const SettingDifference* with_key(const std::vector<SettingDifference>& diff, const std::string& key) {
    auto it = std::find_if(diff.begin(), diff.end(), [&](const SettingDifference& d) { return d.key == key; });
    return it == diff.end() ? nullptr : &*it;
}

// The keys every witness differs in; a value they do not share becomes their values joined by '|'.
std::vector<SettingDifference> common_needs(const std::vector<WitnessSettings>& witnesses) {
    std::vector<SettingDifference> needs;
    if (witnesses.empty()) return needs;
    for (const SettingDifference& first : witnesses.front().settings) {
        SettingDifference need = first;
        bool everywhere = true;
        for (std::size_t i = 1; i < witnesses.size() && everywhere; ++i) {
            const SettingDifference* other = with_key(witnesses[i].settings, first.key);
            if (other == nullptr) {
                everywhere = false;
            } else if (other->value != first.value &&
                       need.value.find(other->value) == std::string::npos) {
                need.value += "|" + other->value;
            }
        }
        if (everywhere) needs.push_back(std::move(need));
    }
    return needs;
}

std::string cell(std::string text) {
    std::string out;
    for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
}

std::string needs_cell(const EntrySettings& e) {
    if (e.reachable_with_defaults) return "nothing: upstream's defaults";
    std::string out;
    for (const SettingDifference& d : e.needs)
        out += fmt::format("{}`{}={}`", out.empty() ? "" : ", ", d.key, d.value);
    return out.empty() ? "a setting that differs per witness" : out;
}

}  // namespace

WitnessLoader witness_loader(std::string root) {
    return [root = std::move(root)](const std::string& path) { return parse_trace_file(root + "/" + path); };
}

EntrySettings entry_settings(const KnownEntry& entry, const WitnessLoader& load, std::string_view registry_file) {
    EntrySettings out;
    out.entry = &entry;
    for (const Witness& w : entry.witnesses) {
        std::string error;
        std::optional<Variant> variant = resolve_variant(w.variant, &error);
        if (!variant) throw InputError(registry_file, entry.line, "witness", error);
        WitnessSettings ws{.witness = w, .settings = needed_of(load(w.trace), *variant)};
        if (ws.settings.empty()) out.reachable_with_defaults = true;
        out.witnesses.push_back(std::move(ws));
    }
    out.needs = common_needs(out.witnesses);
    return out;
}

std::vector<EntrySettings> registry_settings(const Registry& registry, const WitnessLoader& load) {
    std::vector<EntrySettings> out;
    out.reserve(registry.entries.size());
    for (const KnownEntry& e : registry.entries) out.push_back(entry_settings(e, load, registry.file));
    return out;
}

std::string findings_table(const std::vector<EntrySettings>& entries) {
    std::string out =
        "| id | class | upstream | reachable with upstream's defaults | needs (every witness) | fix |\n"
        "|---|---|---|---|---|---|\n";
    for (const EntrySettings& e : entries) {
        const KnownEntry& k = *e.entry;
        std::string refs;
        for (const std::string& r : k.upstream.references) refs += " " + r;
        out += fmt::format("| `{}` | {} | {}{} | {} | {} | {} |\n", k.id, to_string(k.finding_class),
                           to_string(k.upstream.state), refs, e.reachable_with_defaults ? "yes" : "no",
                           cell(needs_cell(e)), cell(k.fix.label()));
    }
    return out;
}

}  // namespace kvsim
