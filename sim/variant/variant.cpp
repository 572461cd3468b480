#include "sim/variant/variant.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace kvsim {
namespace {

struct Release {
    std::string_view name;
    std::string_view description;
    Variant flags;
};

Variant make(FreeOrder fo, SnapshotRule sr, StaleSave ss, PendingLoadGuard g, PendingSkipSave sk,
             MultiLoserBlocks lb, SaveBlockRefs br) {
    Variant v;
    v.free_order = fo;
    v.snapshot_rule = sr;
    v.stale_save = ss;
    v.pending_load_guard = g;
    v.pending_skip_save = sk;
    v.multi_loser_blocks = lb;
    v.save_block_refs = br;
    return v;
}

// Release flag sets. Where the notes could not place a PR against a tag, the choice
// is marked "derived" in the description and in the issue note.
const std::vector<Release>& releases() {
    static const std::vector<Release> table = {
        {"v0.27.1",
         "before #51358: no block-state snapshot, saves use tracker ids, store frees delayed via "
         "request_finished (L1; derived)",
         make(FreeOrder::fresh_head, SnapshotRule::none, StaleSave::tracker_ids, PendingLoadGuard::off,
              PendingSkipSave::none, MultiLoserBlocks::real, SaveBlockRefs::delay_free)},
        {"v0.29.0", "#51358 eager snapshot + assertion, #52372 store-job pins, no #54643 guard",
         make(FreeOrder::fresh_head_lifo, SnapshotRule::eager, StaleSave::assert_missing,
              PendingLoadGuard::off, PendingSkipSave::none, MultiLoserBlocks::real,
              SaveBlockRefs::store_job_pins)},
        {"v0.30.0", "#54643 pending-load guard, #54853 every-scheduled snapshot; assertion kept",
         make(FreeOrder::fresh_head_lifo, SnapshotRule::every_scheduled, StaleSave::assert_missing,
              PendingLoadGuard::on, PendingSkipSave::none, MultiLoserBlocks::real,
              SaveBlockRefs::store_job_pins)},
    };
    return table;
}

struct Patch {
    VariantPatch info;
    std::function<void(Variant&)> apply;
};

const std::vector<Patch>& patches() {
    static const std::vector<Patch> table = {
        {{"003", "seed 000's backport of #54643 onto v0.29.0 (pending-load guard)"},
         [](Variant& v) { v.pending_load_guard = PendingLoadGuard::on; }},
        {{"skip_save_is_consumer", "seed 000's rejected fix: pending branch uses skip_save=is_consumer"},
         [](Variant& v) { v.pending_skip_save = PendingSkipSave::is_consumer; }},
        {{"pr54643", "upstream #54643: skip a pending LoadSpec whose load this connector does not own"},
         [](Variant& v) { v.pending_load_guard = PendingLoadGuard::on; }},
        {{"pr54853", "upstream #54853: snapshot every scheduled request"},
         [](Variant& v) { v.snapshot_rule = SnapshotRule::every_scheduled; }},
        {{"pr55066", "upstream #55066: drop a stale save with a warning and roll the watermark back"},
         [](Variant& v) { v.stale_save = StaleSave::drop_warn_rollback; }},
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
        patch->apply(v);
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
    static const std::vector<VariantPreset> table = {
        {"v0.27.1", "release; store saves use the tracker's ids"},
        {"v0.29.0", "release; seed 000 crashes here"},
        {"v0.29.0+003", "v0.29.0 with seed 000's backport of #54643"},
        {"v0.29.0+skip_save_is_consumer", "v0.29.0 with seed 000's rejected fix"},
        {"v0.29.0+pr55066", "v0.29.0 with the stale-save guard of #55066"},
        {"v0.30.0", "release; carries #54643 and #54853"},
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

const std::vector<FlagDescription>& variant_flags() {
    static const std::vector<FlagDescription> table = {
        {"free_order", "append_all | fresh_head (#42656) | fresh_head_lifo (#51482)"},
        {"snapshot_rule", "none | eager (#51358) | every_scheduled (#54853)"},
        {"stale_save", "tracker_ids | assert_missing (#51358) | drop_warn_rollback (#55066)"},
        {"pending_load_guard", "off | on (#54643)"},
        {"pending_skip_save", "none | is_consumer (seed 000, rejected)"},
        {"multi_loser_blocks", "empty | real (#46865)"},
        {"save_block_refs", "delay_free | store_job_pins (#52372)"},
    };
    return table;
}

namespace {
std::string_view name_of(FreeOrder v) {
    switch (v) {
        case FreeOrder::append_all: return "append_all";
        case FreeOrder::fresh_head: return "fresh_head";
        case FreeOrder::fresh_head_lifo: return "fresh_head_lifo";
    }
    return "?";
}
std::string_view name_of(SnapshotRule v) {
    switch (v) {
        case SnapshotRule::none: return "none";
        case SnapshotRule::eager: return "eager";
        case SnapshotRule::every_scheduled: return "every_scheduled";
    }
    return "?";
}
std::string_view name_of(StaleSave v) {
    switch (v) {
        case StaleSave::tracker_ids: return "tracker_ids";
        case StaleSave::assert_missing: return "assert_missing";
        case StaleSave::drop_warn_rollback: return "drop_warn_rollback";
    }
    return "?";
}
std::string_view name_of(PendingLoadGuard v) { return v == PendingLoadGuard::on ? "on" : "off"; }
std::string_view name_of(PendingSkipSave v) { return v == PendingSkipSave::is_consumer ? "is_consumer" : "none"; }
std::string_view name_of(MultiLoserBlocks v) { return v == MultiLoserBlocks::real ? "real" : "empty"; }
std::string_view name_of(SaveBlockRefs v) {
    return v == SaveBlockRefs::store_job_pins ? "store_job_pins" : "delay_free";
}
}  // namespace

std::vector<std::string> variant_flag_values(const Variant& v) {
    return {std::string(name_of(v.free_order)),         std::string(name_of(v.snapshot_rule)),
            std::string(name_of(v.stale_save)),         std::string(name_of(v.pending_load_guard)),
            std::string(name_of(v.pending_skip_save)),  std::string(name_of(v.multi_loser_blocks)),
            std::string(name_of(v.save_block_refs))};
}

std::string variants_table() {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header = {"variant"};
    for (const auto& f : variant_flags()) header.emplace_back(f.flag);
    rows.push_back(header);
    for (const auto& preset : variant_presets()) {
        std::string error;
        const auto v = resolve_variant(preset.name, &error);
        std::vector<std::string> row = {std::string(preset.name)};
        for (auto& value : variant_flag_values(*v)) row.push_back(std::move(value));
        rows.push_back(std::move(row));
    }
    std::vector<std::size_t> width(header.size(), 0);
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    std::string out;
    for (const auto& row : rows) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i) line += fmt::format("{:<{}}  ", row[i], width[i]);
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
    out += "\nflags:\n";
    for (const auto& f : variant_flags()) out += fmt::format("  {:<20} {}\n", f.flag, f.values);
    out += "\npatches (compose with '+', applied left to right):\n";
    for (const auto& p : variant_patches()) out += fmt::format("  +{:<22} {}\n", p.name, p.description);
    out += "\npresets:\n";
    for (const auto& p : variant_presets()) out += fmt::format("  {:<30} {}\n", p.name, p.description);
    return out;
}

}  // namespace kvsim
