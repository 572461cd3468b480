#include "sim/variant/variant.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>

namespace kvsim {
namespace {

// ---- the flags: one row each ----------------------------------------------------------------

struct FlagValue {
    std::string_view name;
    std::string_view origin;  // the PR (or fix) that brought this behaviour; empty for the oldest
};

// A flag: its name, its values in enum order, and the Variant member it sets.
struct FlagRow {
    std::string_view flag;
    std::vector<FlagValue> values;
    int (*get)(const Variant&);
    void (*set)(Variant&, int);
};

template <auto Member>
FlagRow flag_row(std::string_view flag, std::vector<FlagValue> values) {
    using Enum = std::remove_cvref_t<decltype(std::declval<Variant&>().*Member)>;
    return {flag, std::move(values), [](const Variant& v) { return static_cast<int>(v.*Member); },
            [](Variant& v, int value) { v.*Member = static_cast<Enum>(value); }};
}

const std::vector<FlagRow>& flag_rows() {
    static const std::vector<FlagRow> rows = {
        flag_row<&Variant::free_order>("free_order",
                                       {{"append_all", ""}, {"fresh_head", "#42656"}, {"fresh_head_lifo", "#51482"}}),
        flag_row<&Variant::snapshot_rule>("snapshot_rule",
                                          {{"none", ""}, {"eager", "#51358"}, {"every_scheduled", "#54853"}}),
        flag_row<&Variant::stale_save>(
            "stale_save", {{"tracker_ids", ""}, {"assert_missing", "#51358"}, {"drop_warn_rollback", "#55066"}}),
        flag_row<&Variant::pending_load_guard>("pending_load_guard", {{"off", ""}, {"on", "#54643"}}),
        flag_row<&Variant::pending_skip_save>("pending_skip_save", {{"none", ""}, {"is_consumer", "seed 000, rejected"}}),
        flag_row<&Variant::multi_loser_blocks>("multi_loser_blocks", {{"empty", ""}, {"real", "#46865"}}),
        flag_row<&Variant::save_block_refs>("save_block_refs", {{"delay_free", ""}, {"store_job_pins", "#52372"}}),
    };
    return rows;
}

const FlagRow& flag_named(std::string_view flag) {
    for (const FlagRow& row : flag_rows())
        if (row.flag == flag) return row;
    throw std::logic_error(fmt::format("variant tables: unknown flag '{}'", flag));
}

void set_flag(Variant& v, std::string_view flag, std::string_view value) {
    const FlagRow& row = flag_named(flag);
    for (std::size_t i = 0; i < row.values.size(); ++i)
        if (row.values[i].name == value) return row.set(v, static_cast<int>(i));
    throw std::logic_error(fmt::format("variant tables: flag '{}' has no value '{}'", flag, value));
}

// ---- releases, patches, presets -------------------------------------------------------------

// Release flag sets; a flag not named keeps Variant's default (the newest behaviour). Where the
// notes could not place a PR against a tag, the description says "derived".
struct Release {
    std::string_view name;
    std::string_view description;
    Variant flags;
};

const std::vector<Release>& releases() {
    static const std::vector<Release> table = {
        {"v0.27.1",
         "before #51358: no block-state snapshot, saves use tracker ids, store frees delayed via "
         "request_finished (L1; derived)",
         Variant{.free_order = FreeOrder::fresh_head,
                 .snapshot_rule = SnapshotRule::none,
                 .stale_save = StaleSave::tracker_ids,
                 .pending_load_guard = PendingLoadGuard::off,
                 .save_block_refs = SaveBlockRefs::delay_free}},
        {"v0.29.0", "#51358 eager snapshot + assertion, #52372 store-job pins, no #54643 guard",
         Variant{.snapshot_rule = SnapshotRule::eager, .pending_load_guard = PendingLoadGuard::off}},
        {"v0.30.0", "#54643 pending-load guard, #54853 every-scheduled snapshot; assertion kept", Variant{}},
    };
    return table;
}

// A patch sets one flag to one value.
struct Patch {
    VariantPatch info;
    std::string_view flag;
    std::string_view value;
};

const std::vector<Patch>& patches() {
    static const std::vector<Patch> table = {
        {{"003", "seed 000's backport of #54643 onto v0.29.0 (pending-load guard)"}, "pending_load_guard", "on"},
        {{"skip_save_is_consumer", "seed 000's rejected fix: pending branch uses skip_save=is_consumer"},
         "pending_skip_save", "is_consumer"},
        {{"pr54643", "upstream #54643: skip a pending LoadSpec whose load this connector does not own"},
         "pending_load_guard", "on"},
        {{"pr54853", "upstream #54853: snapshot every scheduled request"}, "snapshot_rule", "every_scheduled"},
        {{"pr55066", "upstream #55066: drop a stale save with a warning and roll the watermark back"}, "stale_save",
         "drop_warn_rollback"},
    };
    return table;
}

std::vector<std::string_view> split_plus(std::string_view name) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (true) {
        const std::size_t pos = name.find('+', start);
        parts.push_back(name.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
        if (pos == std::string_view::npos) break;
        start = pos + 1;
    }
    return parts;
}

std::string joined_names(auto const& items, auto name_of) {
    std::string out;
    for (auto const& item : items) {
        if (!out.empty()) out += ", ";
        out += name_of(item);
    }
    return out;
}

}  // namespace

std::string_view to_string(PresetTag tag) { return enum_name(kPresetTagNames, tag); }

std::optional<Variant> resolve_variant(std::string_view name, std::string* error) {
    const auto parts = split_plus(name);
    const auto base = std::find_if(releases().begin(), releases().end(),
                                   [&](const Release& r) { return r.name == parts.front(); });
    if (base == releases().end()) {
        if (error)
            *error = fmt::format("unknown variant '{}' (releases: {})", parts.front(),
                                 joined_names(releases(), [](const Release& r) { return r.name; }));
        return std::nullopt;
    }
    Variant v = base->flags;
    for (std::size_t i = 1; i < parts.size(); ++i) {
        const auto patch = std::find_if(patches().begin(), patches().end(),
                                        [&](const Patch& p) { return p.info.name == parts[i]; });
        if (patch == patches().end()) {
            if (error)
                *error = fmt::format("unknown variant patch '+{}' in '{}' (patches: {})", parts[i], name,
                                     joined_names(patches(), [](const Patch& p) { return p.info.name; }));
            return std::nullopt;
        }
        set_flag(v, patch->flag, patch->value);
    }
    v.name = std::string(name);
    return v;
}

Variant require_variant(std::string_view name) {
    std::string error;
    auto v = resolve_variant(name, &error);
    if (!v) throw std::invalid_argument(error);
    return *v;
}

const std::vector<VariantPreset>& variant_presets() {
    using enum PresetTag;
    static const std::vector<VariantPreset> table = {
        {"v0.27.1", "release; store saves use the tracker's ids", known_broken},
        {"v0.29.0", "release; seed 000 crashes here", known_broken},
        {"v0.29.0+003", "v0.29.0 with seed 000's backport of #54643", clean},
        {"v0.29.0+skip_save_is_consumer", "v0.29.0 with seed 000's rejected fix", known_broken},
        {"v0.29.0+pr55066", "v0.29.0 with the stale-save guard of #55066", clean},
        {"v0.30.0", "release; carries #54643 and #54853", clean, true},
    };
    return table;
}

const std::vector<VariantPatch>& variant_patches() {
    static const std::vector<VariantPatch> table = [] {
        std::vector<VariantPatch> out;
        for (const auto& p : patches()) out.push_back(p.info);
        return out;
    }();
    return table;
}

std::vector<std::string> presets_with(PresetTag tag) {
    std::vector<std::string> out;
    for (const VariantPreset& p : variant_presets())
        if (p.tag == tag) out.emplace_back(p.name);
    return out;
}

std::string_view default_variant() {
    for (const VariantPreset& p : variant_presets())
        if (p.is_default) return p.name;
    throw std::logic_error("variant tables: no default preset");
}

const std::vector<FlagDescription>& variant_flags() {
    static const std::vector<FlagDescription> table = [] {
        std::vector<FlagDescription> out;
        for (const FlagRow& row : flag_rows()) {
            std::string values;
            for (const FlagValue& value : row.values) {
                if (!values.empty()) values += " | ";
                values += value.origin.empty() ? std::string(value.name)
                                               : fmt::format("{} ({})", value.name, value.origin);
            }
            out.push_back({row.flag, std::move(values)});
        }
        return out;
    }();
    return table;
}

std::string_view variant_flag_value(const Variant& v, std::string_view flag) {
    const FlagRow& row = flag_named(flag);
    return row.values.at(static_cast<std::size_t>(row.get(v))).name;
}

bool set_variant_flag(Variant& v, std::string_view flag, std::string_view value) {
    for (const FlagRow& row : flag_rows()) {
        if (row.flag != flag) continue;
        for (std::size_t i = 0; i < row.values.size(); ++i)
            if (row.values[i].name == value) {
                row.set(v, static_cast<int>(i));
                return true;
            }
    }
    return false;
}

std::vector<std::string> variant_flag_values(const Variant& v) {
    std::vector<std::string> out;
    for (const FlagRow& row : flag_rows()) out.emplace_back(row.values.at(static_cast<std::size_t>(row.get(v))).name);
    return out;
}

namespace {

std::string aligned_columns(const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width(rows.front().size(), 0);
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    std::string out;
    for (const auto& row : rows) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i) line += fmt::format("{:<{}}  ", row[i], width[i]);
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
    return out;
}

}  // namespace

std::string variants_table() {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header = {"variant", "tag"};
    for (const auto& f : variant_flags()) header.emplace_back(f.flag);
    rows.push_back(header);
    for (const auto& preset : variant_presets()) {
        std::vector<std::string> row = {std::string(preset.name),
                                        fmt::format("{}{}", to_string(preset.tag), preset.is_default ? ",default" : "")};
        for (auto& value : variant_flag_values(require_variant(preset.name))) row.push_back(std::move(value));
        rows.push_back(std::move(row));
    }
    std::string out = aligned_columns(rows);
    out += "\nflags:\n";
    for (const auto& f : variant_flags()) out += fmt::format("  {:<20} {}\n", f.flag, f.values);
    out += "\npatches (compose with '+', applied left to right):\n";
    for (const auto& p : variant_patches()) out += fmt::format("  +{:<22} {}\n", p.name, p.description);
    out += "\npresets:\n";
    for (const auto& p : variant_presets()) out += fmt::format("  {:<30} {}\n", p.name, p.description);
    return out;
}

}  // namespace kvsim
