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
    int bit;  // in FlagReads
};

template <auto Member>
FlagRow flag_row(std::string_view flag, std::vector<FlagValue> values) {
    using Enum = std::remove_cvref_t<decltype(std::declval<Variant&>().*Member)>;
    return {.flag = flag,
            .values = std::move(values),
            .get = [](const Variant& v) { return static_cast<int>(v.*Member); },
            .set = [](Variant& v, int value) { v.*Member = static_cast<Enum>(value); },
            .bit = FlagBit<Member>::value};
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
        flag_row<&Variant::load_failure_policy_default>("load_failure_policy_default",
                                                        {{"recompute", "#26813"}, {"fail", "#34896"}}),
        flag_row<&Variant::p2p_abort_pull>("p2p_abort_pull", {{"reported", ""}, {"silent", "#50565, open"}}),
        flag_row<&Variant::p2p_empty_pull>("p2p_empty_pull",
                                           {{"reported", ""}, {"only_when_loading", "NIXL's #56640, kvsim fix"}}),
        flag_row<&Variant::failed_load_inflight>("failed_load_inflight", {{"kept", ""}, {"discarded", "kvsim fix"}}),
        flag_row<&Variant::async_load_behind_blockless>("async_load_behind_blockless",
                                                        {{"admitted", ""}, {"deferred", "#57841, open"}}),
        flag_row<&Variant::pinned_victim>("pinned_victim",
                                          {{"preempted", ""}, {"stops_retry", "#49675's guard on pins, kvsim fix"}}),
        flag_row<&Variant::pinned_self_victim>("pinned_self_victim",
                                               {{"preempted", ""}, {"waits_for_pins", "kvsim fix"}}),
        flag_row<&Variant::blockless_failed_load>(
            "blockless_failed_load", {{"stays_skipped", ""}, {"requeued_waiting", "#57841's limit, kvsim fix"}}),
        flag_row<&Variant::failed_load_placeholders>(
            "failed_load_placeholders",
            {{"kept", ""}, {"rolled_back", "#45430, closed"}, {"rolled_back_but_one", "#49252, open"}}),
        flag_row<&Variant::failed_load_full_prompt>("failed_load_full_prompt", {{"kept", ""}, {"capped", "kvsim fix"}}),
        flag_row<&Variant::rollback_full_prompt>("rollback_full_prompt", {{"stranded", ""}, {"capped", "kvsim fix"}}),
        // vllm/config/vllm.py VllmConfig.__post_init__ @ 09f030eaf851400a83ad3d99f730868f76df0ca7 and
        // @ 000fc94b754f66aeb60ef5acf1ea2e94cdc65164: an unset async_scheduling resolves to on unless pipeline
        // parallelism (the older), a pooling model (the newer), a non-EAGLE spec-decode method or an executor
        // without async support rules it out; the KV connector is no condition. None of these is modelled.
        flag_row<&Variant::async_scheduling_default>("async_scheduling_default",
                                                     {{"off", ""}, {"on", "#27614, VllmConfig.__post_init__"}}),
        flag_row<&Variant::deferred_block_free>("deferred_block_free", {{"immediate", ""}, {"fenced", "#45357"}}),
        flag_row<&Variant::deferred_free_scope>("deferred_free_scope",
                                                {{"kv_consumer", ""}, {"any_loader", "kvsim fix"}}),
        flag_row<&Variant::fenced_victim>("fenced_victim", {{"preempted", ""}, {"stops_retry", "#49675"}}),
        flag_row<&Variant::async_load_accounting>("async_load_accounting",
                                                  {{"uncounted", ""}, {"counted", "#42568, open"}}),
        flag_row<&Variant::blocked_head>("blocked_head", {{"stops_scan", ""}, {"skipped_for_holders", "#45406, closed"}}),
        flag_row<&Variant::preempted_output>(
            "preempted_output",
            {{"placeholders_kept", ""}, {"stale_delivered", "#48245"}, {"stale_dropped_for_producers", "#50297"}}),
        flag_row<&Variant::store_sync_load>(
            "store_sync_load", {{"asserts", ""}, {"hotfix_loads_before_forward", "a downstream hotfix"}}),
        flag_row<&Variant::kv_cache_check>("kv_cache_check",
                                           {{"max_model_len", "#41069"}, {"max_model_len_and_null_block", "#47272"}}),
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
        {.name = "v0.27.1",
         .description = "before #51358: no block-state snapshot, saves use tracker ids, store frees delayed via "
                        "request_finished (L1; derived); #48245's stale output without #50297's drop (derived); "
                        "#41069's KV cache check without #47272's null block (derived)",
         .flags = Variant{.free_order = FreeOrder::fresh_head,
                          .snapshot_rule = SnapshotRule::none,
                          .stale_save = StaleSave::tracker_ids,
                          .pending_load_guard = PendingLoadGuard::off,
                          .save_block_refs = SaveBlockRefs::delay_free,
                          .fenced_victim = FencedVictim::preempted,
                          .preempted_output = PreemptedOutput::stale_delivered,
                          .kv_cache_check = KvCacheCheck::max_model_len}},
        {.name = "v0.29.0",
         .description = "#51358 eager snapshot + assertion, #52372 store-job pins, no #54643 guard",
         .flags = Variant{.snapshot_rule = SnapshotRule::eager, .pending_load_guard = PendingLoadGuard::off}},
        {.name = "v0.30.0",
         .description = "#54643 pending-load guard, #54853 every-scheduled snapshot; assertion kept",
         .flags = Variant{}},
    };
    return table;
}

// A patch sets flags to values (most patches: one flag).
struct FlagSetting {
    std::string_view flag;
    std::string_view value;
};
struct Patch {
    VariantPatch info;
    std::vector<FlagSetting> settings;
    bool fixes_finding = false;  // the fix patch of a finding of corpus/findings/: all_fixes sets it too
};

// all_fixes: the settings of every patch that fixes a finding.
Patch all_fixes(const std::vector<Patch>& table) {
    Patch all{.info = {.name = "all_fixes", .description = "every fix patch of corpus/findings/ above"},
              .settings = {}};
    for (const Patch& p : table)
        if (p.fixes_finding) all.settings.insert(all.settings.end(), p.settings.begin(), p.settings.end());
    return all;
}

const std::vector<Patch>& patches() {
    static const std::vector<Patch> table = [] {
        std::vector<Patch> out = {
            {.info = {.name = "003",
                      .description = "seed 000's backport of #54643 onto v0.29.0 (pending-load guard)"},
             .settings = {{.flag = "pending_load_guard", .value = "on"}}},
            {.info = {.name = "skip_save_is_consumer",
                      .description = "seed 000's rejected fix: pending branch uses skip_save=is_consumer"},
             .settings = {{.flag = "pending_skip_save", .value = "is_consumer"}}},
            {.info = {.name = "pr54643",
                      .description = "upstream #54643: skip a pending LoadSpec whose load this connector does not own"},
             .settings = {{.flag = "pending_load_guard", .value = "on"}}},
            {.info = {.name = "pr54853",
                      .description = "upstream #54853: snapshot every scheduled request"},
             .settings = {{.flag = "snapshot_rule", .value = "every_scheduled"}}},
            {.info = {.name = "pr55066",
                      .description = "upstream #55066: drop a stale save with a warning and roll the watermark back"},
             .settings = {{.flag = "stale_save", .value = "drop_warn_rollback"}}},
            {.info = {.name = "pr50565",
                      .description = "upstream #50565 (open): the cleanup pull of a request finished before allocation is not "
                      "reported to the scheduler"},
             .settings = {{.flag = "p2p_abort_pull", .value = "silent"}},
             .fixes_finding = true},
            {.info = {.name = "p2p_pull_only_when_loading",
                      .description = "NIXL's rule (#56640) for MooncakeConnector: a notify-only pull is reported "
                      "only while the request awaits this connector's KV"},
             .settings = {{.flag = "p2p_empty_pull", .value = "only_when_loading"}},
             .fixes_finding = true},
            {.info = {.name = "discard_inflight_on_failed_load",
                      .description = "kvsim fix: a fully failed async load leaves _inflight_prefills"},
             .settings = {{.flag = "failed_load_inflight", .value = "discarded"}},
             .fixes_finding = true},
            {.info = {.name = "pr57841",
                      .description = "upstream #57841 (open): no async load is admitted behind a skipped request holding no blocks"},
             .settings = {{.flag = "async_load_behind_blockless", .value = "deferred"}},
             .fixes_finding = true},
            {.info = {.name = "pin_aware_preemption",
                      .description = "#49675's guard extended to store-job pins: a victim whose preemption frees no "
                      "block stops the allocation retry"},
             .settings = {{.flag = "pinned_victim", .value = "stops_retry"}},
             .fixes_finding = true},
            {.info = {.name = "pin_aware_self_preemption",
                      .description = "kvsim fix: a request about to preempt itself waits while blocks that only "
                      "store-job pins hold would cover its allocation"},
             .settings = {{.flag = "pinned_self_victim", .value = "waits_for_pins"}},
             .fixes_finding = true},
            {.info = {.name = "requeue_blockless_failed_load",
                      .description = "kvsim fix (#57841's recompute limit): a request whose failed async load freed "
                      "every block re-enters waiting behind the skipped requests that hold blocks"},
             .settings = {{.flag = "blockless_failed_load", .value = "requeued_waiting"}},
             .fixes_finding = true},
            {.info = {.name = "rollback_placeholders_on_failed_load",
                      .description = "fix proposed for issue #45138 (#45430's rule): a request rewound by a failed "
                      "sync load drops its output placeholders and discards the outputs of later steps in flight"},
             .settings = {{.flag = "failed_load_placeholders", .value = "rolled_back"}},
             .fixes_finding = true},
            {.info = {.name = "defer_free_for_loading_producer",
                      .description = "kvsim fix: #45357's fenced frees (restored where a variant lacks them) also for a stack "
                      "whose top-level role is kv_producer while a connector loads"},
             .settings = {{.flag = "deferred_block_free", .value = "fenced"},
                          {.flag = "deferred_free_scope", .value = "any_loader"}},
             .fixes_finding = true},
            {.info = {.name = "cap_failed_load_full_prompt",
                      .description = "kvsim fix: a promoted request whose failed async load left it every token computed "
                      "recomputes the last one, as after a full-prompt hit"},
             .settings = {{.flag = "failed_load_full_prompt", .value = "capped"}},
             .fixes_finding = true},
            {.info = {.name = "cap_rollback_full_prompt",
                      .description = "kvsim fix: a request whose placeholders a failed load rolled back, left with "
                      "every token computed, recomputes the last one, as after a full-prompt hit"},
             .settings = {{.flag = "rollback_full_prompt", .value = "capped"}},
             .fixes_finding = true},
            {.info = {.name = "pre45357",
                      .description = "upstream before #45357: a freed request's blocks return to the pool while a "
                      "later step in flight may still write them"},
             .settings = {{.flag = "deferred_block_free", .value = "immediate"}}},
            {.info = {.name = "pre49675",
                      .description = "upstream before #49675: a victim whose free is fenced is preempted anyway"},
             .settings = {{.flag = "fenced_victim", .value = "preempted"}}},
            {.info = {.name = "pr49675",
                      .description = "upstream #49675 (merged, in v0.29.0 and later) onto an older release: a victim "
                      "whose free is fenced stops the allocation retry"},
             .settings = {{.flag = "fenced_victim", .value = "stops_retry"}}},
            {.info = {.name = "pre48245",
                      .description = "upstream before #48245: a preempted request keeps its output placeholders and "
                      "may resume while its output is in flight"},
             .settings = {{.flag = "preempted_output", .value = "placeholders_kept"}}},
            {.info = {.name = "pre50297",
                      .description = "upstream before #50297: a preempted request's stale output is delivered "
                      "whatever the connector stack"},
             .settings = {{.flag = "preempted_output", .value = "stale_delivered"}}},
            {.info = {.name = "pr42568",
                      .description = "upstream #42568 (open): async loads in flight count toward max_num_seqs and the "
                      "token budget, and cap later async loads"},
             .settings = {{.flag = "async_load_accounting", .value = "counted"}}},
            {.info = {.name = "pr49252",
                      .description = "upstream #49252 (open): a request rewound by a failed sync load drops its output "
                      "placeholders and discards all but one of their frames"},
             .settings = {{.flag = "failed_load_placeholders", .value = "rolled_back_but_one"}}},
            {.info = {.name = "sync_store_load_hotfix",
                      .description = "a published downstream hotfix (Unintendedz/DeepSeek-v4-Flash-DSpark-2x-DGX-Spark): "
                      "MooncakeStoreWorker loads before the forward when load_async is off, and raises on a failed block"},
             .settings = {{.flag = "store_sync_load", .value = "hotfix_loads_before_forward"}}},
            {.info = {.name = "pre47272",
                      .description = "upstream before #47272: the KV cache check counts the null block as usable"},
             .settings = {{.flag = "kv_cache_check", .value = "max_model_len"}}},
            {.info = {.name = "pr45406",
                      .description = "upstream #45406 (closed): a waiting request that cannot be admitted is skipped for "
                      "the step while a queued request holds blocks"},
             .settings = {{.flag = "blocked_head", .value = "skipped_for_holders"}}},
        };
        out.push_back(all_fixes(out));
        return out;
    }();
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
std::string_view to_string(LoadFailurePolicy policy) { return enum_name(kLoadFailurePolicyNames, policy); }
std::optional<LoadFailurePolicy> parse_load_failure_policy(std::string_view text) {
    return parse_enum(kLoadFailurePolicyNames, text);
}

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
        if (std::find(parts.begin() + 1, parts.begin() + static_cast<std::ptrdiff_t>(i), parts[i]) !=
            parts.begin() + static_cast<std::ptrdiff_t>(i)) {
            if (error) *error = fmt::format("variant patch '+{}' given twice in '{}'", parts[i], name);
            return std::nullopt;
        }
        if (!apply_variant_patch(v, parts[i])) {
            if (error)
                *error = fmt::format("unknown variant patch '+{}' in '{}' (patches: {})", parts[i], name,
                                     joined_names(patches(), [](const Patch& p) { return p.info.name; }));
            return std::nullopt;
        }
    }
    v.name = std::string(name);
    return v;
}

bool apply_variant_patch(Variant& v, std::string_view patch_name) {
    const auto patch = std::find_if(patches().begin(), patches().end(),
                                    [&](const Patch& p) { return p.info.name == patch_name; });
    if (patch == patches().end()) return false;
    for (const FlagSetting& setting : patch->settings) set_flag(v, setting.flag, setting.value);
    return true;
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
        {.name = "v0.27.1",
         .description = "release; store saves use the tracker's ids",
         .tag = known_broken},
        {.name = "v0.29.0",
         .description = "release; seed 000 crashes here",
         .tag = known_broken},
        {.name = "v0.29.0+003",
         .description = "v0.29.0 with seed 000's backport of #54643",
         .tag = clean},
        {.name = "v0.29.0+skip_save_is_consumer",
         .description = "v0.29.0 with seed 000's rejected fix",
         .tag = known_broken},
        {.name = "v0.29.0+pr55066",
         .description = "v0.29.0 with the stale-save guard of #55066",
         .tag = clean},
        {.name = "v0.30.0",
         .description = "release; carries #54643 and #54853",
         .tag = clean,
         .is_default = true},
        {.name = "v0.30.0+all_fixes",
         .description = "v0.30.0 with the fix patch of every known finding: a campaign here finds only new bugs",
         .tag = clean},
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
            std::vector<std::string_view> names;
            for (const FlagValue& value : row.values) {
                if (!values.empty()) values += " | ";
                values += value.origin.empty() ? std::string(value.name)
                                               : fmt::format("{} ({})", value.name, value.origin);
                names.push_back(value.name);
            }
            out.push_back({.flag = row.flag, .values = std::move(values), .value_names = std::move(names)});
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

std::uint32_t differing_flag_bits(const Variant& a, const Variant& b) {
    std::uint32_t bits = 0;
    for (const FlagRow& row : flag_rows())
        if (row.get(a) != row.get(b)) bits |= std::uint32_t{1} << row.bit;
    return bits;
}

std::vector<int> variant_flag_bits() {
    std::vector<int> bits;
    for (const FlagRow& row : flag_rows()) bits.push_back(row.bit);
    return bits;
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
