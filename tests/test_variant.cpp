// The variant tables (sim/variant): flags, patches, presets and their tags.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/variant/variant.h"

using namespace kvsim;

TEST_CASE("variant flags: each row lists its values with the PR that brought them", "[variant]") {
    const auto& flags = variant_flags();
    REQUIRE(flags.size() == 7);
    CHECK(flags[0].flag == "free_order");
    CHECK(flags[0].values == "append_all | fresh_head (#42656) | fresh_head_lifo (#51482)");
    CHECK(flags[4].values == "none | is_consumer (seed 000, rejected)");
    CHECK(variant_flag_values(require_variant("v0.27.1")) ==
          std::vector<std::string>{"fresh_head", "none", "tracker_ids", "off", "none", "real", "delay_free"});
    CHECK(variant_flag_values(require_variant("v0.30.0")) ==
          std::vector<std::string>{"fresh_head_lifo", "every_scheduled", "assert_missing", "on", "none", "real",
                                   "store_job_pins"});
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

TEST_CASE("variant presets: tags and the default live in the preset table", "[variant]") {
    CHECK(presets_with(PresetTag::clean) == std::vector<std::string>{"v0.29.0+003", "v0.29.0+pr55066", "v0.30.0"});
    CHECK(presets_with(PresetTag::known_broken) ==
          std::vector<std::string>{"v0.27.1", "v0.29.0", "v0.29.0+skip_save_is_consumer"});
    CHECK(default_variant() == "v0.30.0");
    for (const VariantPreset& p : variant_presets()) CHECK_NOTHROW(require_variant(p.name));
}
