#pragma once
// One Catch2 test per clean preset (test names may not hold , ; [ ]).
#define KVSIM_CLEAN_PRESET_TESTS(TITLE, TAGS, BODY)                 \
    TEST_CASE(TITLE " under v0.29.0+003", TAGS) { BODY("v0.29.0+003"); } \
    TEST_CASE(TITLE " under v0.30.0", TAGS) { BODY("v0.30.0"); }         \
    TEST_CASE(TITLE " under v0.29.0+pr55066", TAGS) { BODY("v0.29.0+pr55066"); }
