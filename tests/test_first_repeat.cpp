#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <optional>
#include <vector>

#include "sim/common/first_repeat.h"

using kvsim::RepeatCheck;
using Ids = std::vector<std::uint32_t>;

TEST_CASE("RepeatCheck: the first id seen twice, the ignored id aside", "[first_repeat]") {
    RepeatCheck check;
    CHECK_FALSE(check.first_repeat(Ids{}));
    CHECK_FALSE(check.first_repeat(Ids{7}));
    CHECK_FALSE(check.first_repeat(Ids{3, 1, 2}));
    CHECK(check.first_repeat(Ids{3, 1, 3}) == std::optional<std::uint32_t>(3));
    CHECK(check.first_repeat(Ids{5, 2, 2, 5}) == std::optional<std::uint32_t>(2));
    CHECK_FALSE(check.first_repeat(Ids{0, 4, 0}, 0u));
    CHECK(check.first_repeat(Ids{0, 4, 0, 4}, 0u) == std::optional<std::uint32_t>(4));
    CHECK(check.first_repeat(Ids{0, 4, 0}) == std::optional<std::uint32_t>(0));
}

TEST_CASE("RepeatCheck: no mark outlives a call, found or not, whatever the ids' size", "[first_repeat]") {
    RepeatCheck check;
    Ids many(1000);
    std::iota(many.begin(), many.end(), 1u);
    CHECK_FALSE(check.first_repeat(many));
    many.push_back(517);
    CHECK(check.first_repeat(many) == std::optional<std::uint32_t>(517));
    // every id of both calls is unmarked again: the same ids once each are distinct
    CHECK_FALSE(check.first_repeat(Ids{517, 1, 1000}));
    CHECK_FALSE(check.first_repeat(Ids{1'000'000, 3}));  // grows to a larger id
    CHECK(check.first_repeat(Ids{1'000'000, 3, 1'000'000}) == std::optional<std::uint32_t>(1'000'000));
    CHECK_FALSE(check.first_repeat(Ids{3, 1'000'000}));
}

TEST_CASE("RepeatCheck::erase_repeats: first occurrences in order, the ignored id dropped", "[first_repeat]") {
    RepeatCheck check;
    Ids ids{0, 5, 3, 5, 0, 7, 3, 9};
    check.erase_repeats(ids, 0u);
    CHECK(ids == Ids{5, 3, 7, 9});
    Ids distinct{4, 2, 8};
    check.erase_repeats(distinct);
    CHECK(distinct == Ids{4, 2, 8});
    // no mark is left behind
    CHECK_FALSE(check.first_repeat(Ids{5, 3, 7, 9, 4, 2, 8}));
    Ids empty;
    check.erase_repeats(empty, 0u);
    CHECK(empty.empty());
}
