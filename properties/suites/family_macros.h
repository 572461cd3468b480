#pragma once
// One Catch2 test per invariant family, with a section per clean preset of the variant table.
#include <string>

#include "sim/variant/variant.h"

#define KVSIM_CLEAN_PRESET_TESTS(TITLE, TAGS, BODY)                                   \
    TEST_CASE(TITLE " under every clean preset", TAGS) {                              \
        const std::vector<std::string> presets = presets_with(PresetTag::clean);     \
        REQUIRE(presets.size() >= 2);                                                 \
        for (const std::string& preset : presets) DYNAMIC_SECTION(preset) { BODY(preset); } \
    }
