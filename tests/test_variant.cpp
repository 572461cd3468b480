// The variant tables (sim/variant): flags, patches, presets and their tags.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/variant/variant.h"

using namespace kvsim;

TEST_CASE("variant flags: each row lists its values with the PR that brought them", "[variant]") {
    const auto& flags = variant_flags();
    REQUIRE(flags.size() == 27);
    CHECK(flags[0].flag == "free_order");
    CHECK(flags[0].values == "append_all | fresh_head (#42656) | fresh_head_lifo (#51482)");
    CHECK(flags[4].values == "none | is_consumer (seed 000, rejected)");
    CHECK(flags[7].flag == "load_failure_policy_default");
    CHECK(flags[7].values == "recompute (#26813) | fail (#34896)");
    CHECK(flags[9].values == "reported | only_when_loading (NIXL's #56640, kvsim fix)");
    const std::vector<std::string> unfixed = {"reported",  "reported",      "kept", "admitted", "preempted",
                                              "preempted", "stays_skipped", "kept", "kept",     "stranded"};
    auto with_unfixed = [&](std::vector<std::string> values) {
        values.insert(values.end(), unfixed.begin(), unfixed.end());
        return values;
    };
    auto with_async = [](std::vector<std::string> values, const std::string& fenced_victim,
                         const std::string& preempted_output, const std::string& kv_cache_check) {
        values.insert(values.end(), {"on", "fenced", "kv_consumer", fenced_victim, "uncounted", "stops_scan",
                                     preempted_output, "asserts", kv_cache_check});
        return values;
    };
    CHECK(variant_flag_values(require_variant("v0.27.1")) ==
          with_async(with_unfixed({"fresh_head", "none", "tracker_ids", "off", "none", "real", "delay_free", "fail"}),
                     "preempted", "stale_delivered", "max_model_len"));
    CHECK(variant_flag_values(require_variant("v0.30.0")) ==
          with_async(with_unfixed({"fresh_head_lifo", "every_scheduled", "assert_missing", "on", "none", "real",
                                   "store_job_pins", "fail"}),
                     "stops_retry", "stale_dropped_for_producers", "max_model_len_and_null_block"));
    CHECK(flags[24].values == "placeholders_kept | stale_delivered (#48245) | stale_dropped_for_producers (#50297)");
    CHECK(flags[19].values == "immediate | fenced (#45357)");
    CHECK(require_variant("v0.30.0+pre45357").deferred_block_free == DeferredBlockFree::immediate);
    CHECK(require_variant("v0.30.0+pre49675").fenced_victim == FencedVictim::preempted);
    CHECK(flags[16].values == "kept | capped (kvsim fix)");
    CHECK(flags[17].values == "stranded | capped (kvsim fix)");
    CHECK(flags[20].values == "kv_consumer | any_loader (kvsim fix)");
    CHECK(require_variant("v0.30.0+defer_free_for_loading_producer").deferred_free_scope == DeferredFreeScope::any_loader);
    CHECK(require_variant("v0.30.0+pre45357+defer_free_for_loading_producer").deferred_block_free ==
          DeferredBlockFree::fenced);  // the fix restores the fence it widens
    CHECK(flags[22].values == "uncounted | counted (#42568, open)");
    CHECK(require_variant("v0.30.0+pr42568").async_load_accounting == AsyncLoadAccounting::counted);
    CHECK(flags[23].values == "stops_scan | skipped_for_holders (#45406, closed)");
    CHECK(require_variant("v0.30.0+pr45406").blocked_head == BlockedHead::skipped_for_holders);
    CHECK(flags[25].values == "asserts | hotfix_loads_before_forward (a downstream hotfix)");
    CHECK(require_variant("v0.30.0+sync_store_load_hotfix").store_sync_load == StoreSyncLoad::hotfix_loads_before_forward);
    CHECK(flags[26].values == "max_model_len (#41069) | max_model_len_and_null_block (#47272)");
    CHECK(require_variant("v0.30.0+pre47272").kv_cache_check == KvCacheCheck::max_model_len);
    const auto all_fixes = variant_flag_values(require_variant("v0.30.0+all_fixes"));
    CHECK(std::vector<std::string>(all_fixes.begin() + 8, all_fixes.begin() + 18) ==
          std::vector<std::string>{"silent", "only_when_loading", "discarded", "deferred", "stops_retry",
                                   "waits_for_pins", "requeued_waiting", "rolled_back", "capped", "capped"});
    CHECK(all_fixes[20] == "any_loader");
}

TEST_CASE("variant patches set their flag on top of a release", "[variant]") {
    const Variant v = require_variant("v0.29.0+pr55066+003+pr54853+skip_save_is_consumer");
    CHECK(v.stale_save == StaleSave::drop_warn_rollback);
    CHECK(v.pending_load_guard == PendingLoadGuard::on);
    CHECK(v.snapshot_rule == SnapshotRule::every_scheduled);
    CHECK(v.pending_skip_save == PendingSkipSave::is_consumer);
    CHECK(require_variant("v0.29.0").pending_load_guard == PendingLoadGuard::off);
    std::string error;
    CHECK_FALSE(resolve_variant("v0.29.0+nope", &error));
    CHECK(error.find("'+nope'") != std::string::npos);
}

TEST_CASE("variant patches: one per known finding, and all_fixes composes them all", "[variant]") {
    const Variant base = require_variant("v0.30.0");
    struct One {
        const char* patch;
        const char* flag;
        const char* fixed;
        const char* in_all_fixes = nullptr;  // all_fixes's value where a later patch sets the flag further
    };
    const std::vector<One> fixes = {{"pr50565", "p2p_abort_pull", "silent"},
                                    {"p2p_pull_only_when_loading", "p2p_empty_pull", "only_when_loading"},
                                    {"discard_inflight_on_failed_load", "failed_load_inflight", "discarded"},
                                    {"pr57841", "async_load_behind_blockless", "deferred"},
                                    {"pin_aware_preemption", "pinned_victim", "stops_retry"},
                                    {"pin_aware_self_preemption", "pinned_self_victim", "waits_for_pins"},
                                    {"requeue_blockless_failed_load", "blockless_failed_load", "requeued_waiting"},
                                    {"rollback_placeholders_on_failed_load", "failed_load_placeholders", "rolled_back"},
                                    {"cap_failed_load_full_prompt", "failed_load_full_prompt", "capped"},
                                    {"cap_rollback_full_prompt", "rollback_full_prompt", "capped"}};
    const Variant all = require_variant("v0.30.0+all_fixes");
    for (const One& f : fixes) {
        INFO(f.patch);
        const Variant patched = require_variant(std::string("v0.30.0+") + f.patch);
        CHECK(variant_flag_value(patched, f.flag) == f.fixed);
        CHECK(variant_flag_value(base, f.flag) != f.fixed);
        CHECK(variant_flag_value(all, f.flag) == (f.in_all_fixes != nullptr ? f.in_all_fixes : f.fixed));
        // Exactly one flag differs from the release.
        int changed = 0;
        for (const auto& row : variant_flags())
            changed += variant_flag_value(patched, row.flag) != variant_flag_value(base, row.flag) ? 1 : 0;
        CHECK(changed == 1);
    }
    // all_fixes leaves the release's own flags alone, and composes with the other patches.
    for (const char* flag : {"free_order", "snapshot_rule", "stale_save", "pending_load_guard", "save_block_refs"})
        CHECK(variant_flag_value(all, flag) == variant_flag_value(base, flag));
    CHECK(require_variant("v0.29.0+all_fixes+pr55066").stale_save == StaleSave::drop_warn_rollback);
}

TEST_CASE("variant presets: tags and the default live in the preset table", "[variant]") {
    CHECK(presets_with(PresetTag::clean) ==
          std::vector<std::string>{"v0.29.0+003", "v0.29.0+pr55066", "v0.30.0", "v0.30.0+all_fixes"});
    CHECK(presets_with(PresetTag::known_broken) ==
          std::vector<std::string>{"v0.27.1", "v0.29.0", "v0.29.0+skip_save_is_consumer"});
    CHECK(default_variant() == "v0.30.0");
    for (const VariantPreset& p : variant_presets()) CHECK_NOTHROW(require_variant(p.name));
}
