#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <optional>
#include <vector>

#include "sim/common/first_repeat.h"

using kvsim::first_repeat;
using kvsim::kPairwiseRepeatScan;

namespace {

std::vector<std::uint32_t> iota_ids(std::size_t n, std::uint32_t first) {
    std::vector<std::uint32_t> ids(n);
    std::iota(ids.begin(), ids.end(), first);
    return ids;
}

}  // namespace

TEST_CASE("first_repeat: short lists, scanned pairwise", "[first_repeat]") {
    CHECK_FALSE(first_repeat(std::vector<std::uint32_t>{}));
    CHECK_FALSE(first_repeat(std::vector<std::uint32_t>{7}));
    CHECK_FALSE(first_repeat(std::vector<std::uint32_t>{3, 1, 2}));
    CHECK(first_repeat(std::vector<std::uint32_t>{3, 1, 3}) == std::optional<std::uint32_t>(3));
    CHECK(first_repeat(std::vector<std::uint32_t>{5, 2, 2, 5}) == std::optional<std::uint32_t>(2));
    // the ignored value may repeat; another repeat is still found
    CHECK_FALSE(first_repeat(std::vector<std::uint32_t>{0, 4, 0}, std::optional<std::uint32_t>(0)));
    CHECK(first_repeat(std::vector<std::uint32_t>{0, 4, 0, 4}, std::optional<std::uint32_t>(0)) ==
          std::optional<std::uint32_t>(4));
}

TEST_CASE("first_repeat: long lists, on a sorted copy", "[first_repeat]") {
    std::vector<std::uint32_t> ids = iota_ids(kPairwiseRepeatScan + 10, 1);
    CHECK_FALSE(first_repeat(ids));
    ids.push_back(17);
    CHECK(first_repeat(ids) == std::optional<std::uint32_t>(17));
    std::vector<std::uint32_t> nulls = iota_ids(kPairwiseRepeatScan + 10, 1);
    nulls.insert(nulls.end(), {0, 0, 0});
    CHECK(first_repeat(nulls) == std::optional<std::uint32_t>(0));
    CHECK_FALSE(first_repeat(nulls, std::optional<std::uint32_t>(0)));
    const std::vector<std::uint32_t> before = nulls;
    first_repeat(nulls, std::optional<std::uint32_t>(0));
    CHECK(nulls == before);  // the caller's list is not reordered
}
