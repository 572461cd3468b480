#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/common/ordered_map.h"
#include "sim/common/prng.h"

using namespace kvsim;
using Pairs = std::vector<std::pair<std::string, int>>;

namespace {

Pairs contents(const OrderedMap<int>& map) {
    Pairs out;
    for (const auto& [key, value] : map) out.emplace_back(key, value);
    return out;
}

// The reference: a Python dict as a vector of pairs (linear lookup, erase keeps the rest's order).
struct ReferenceDict {
    Pairs entries;
    int* find(const std::string& key) {
        for (auto& [k, v] : entries)
            if (k == key) return &v;
        return nullptr;
    }
    bool erase(const std::string& key) {
        for (auto it = entries.begin(); it != entries.end(); ++it)
            if (it->first == key) {
                entries.erase(it);
                return true;
            }
        return false;
    }
};

}  // namespace

TEST_CASE("iterates in insertion order, and a re-inserted key goes last", "[ordered_map]") {
    OrderedMap<int> map;
    map["b"] = 1;
    map["a"] = 2;
    map["c"] = 3;
    map["a"] = 4;  // an update keeps the position
    CHECK(contents(map) == Pairs{{"b", 1}, {"a", 4}, {"c", 3}});
    CHECK(map.erase("a") == std::optional<int>(4));
    CHECK_FALSE(map.erase("a").has_value());
    CHECK(contents(map) == Pairs{{"b", 1}, {"c", 3}});
    map["a"] = 5;
    CHECK(contents(map) == Pairs{{"b", 1}, {"c", 3}, {"a", 5}});
    CHECK(map.size() == 3);
    CHECK(map.at("c") == 3);
    CHECK_THROWS_AS(map.at("z"), std::out_of_range);
    map.clear();
    CHECK(map.empty());
    CHECK(map.begin() == map.end());
}

// 6 keys: a map as small as a step's (a few requests), with holes erased and refilled all the time;
// 12: around the index's first growth (16 -> 32 cells at 8 entries); 200: many growths and long probe runs.
TEST_CASE("agrees with a reference dict over random inserts, updates and erases", "[ordered_map]") {
    const int keys = GENERATE(6, 12, 200);
    CAPTURE(keys);
    Prng rng(7);
    OrderedMap<int> map;
    ReferenceDict dict;
    for (int op = 0; op < 20'000; ++op) {
        const std::string key = "r" + std::to_string(rng.below(static_cast<std::uint64_t>(keys)));
        if (rng.chance(2, 5)) {
            const bool had = dict.erase(key);
            CHECK(map.erase(key).has_value() == had);
        } else {
            map[key] = op;
            if (int* v = dict.find(key)) *v = op;
            else dict.entries.emplace_back(key, op);
        }
        if (op % 97 == 0) {
            REQUIRE(contents(map) == dict.entries);
            // every key, present or not, is found through the index exactly when the dict has it
            // (an erase that broke a probe run would hide a key that is still there)
            for (int k = 0; k < keys; ++k) {
                const std::string probe = "r" + std::to_string(k);
                const int* expected = dict.find(probe);
                const int* found = map.find(probe);
                REQUIRE((found == nullptr) == (expected == nullptr));
                if (found != nullptr) REQUIRE(*found == *expected);
            }
        }
        REQUIRE(map.size() == dict.entries.size());
        REQUIRE(map.contains(key) == (dict.find(key) != nullptr));
    }
    CHECK(contents(map) == dict.entries);
}

TEST_CASE("erasing most entries compacts without losing order or move-only values", "[ordered_map]") {
    OrderedMap<std::unique_ptr<int>> map;
    for (int i = 0; i < 100; ++i) map["k" + std::to_string(i)] = std::make_unique<int>(i);
    for (int i = 0; i < 100; ++i)
        if (i % 10 != 0) CHECK(*map.erase("k" + std::to_string(i)).value() == i);
    std::vector<int> left;
    for (const auto& [key, value] : map) left.push_back(*value);
    CHECK(left == std::vector<int>{0, 10, 20, 30, 40, 50, 60, 70, 80, 90});
    CHECK(**map.find("k50") == 50);
}

TEST_CASE("clear keeps the index usable: keys inserted after it are found, the old ones are not", "[ordered_map]") {
    OrderedMap<int> map;
    for (int i = 0; i < 1000; ++i) map["a" + std::to_string(i)] = i;
    map.clear();
    CHECK(map.empty());
    CHECK_FALSE(map.contains("a1"));
    for (int i = 0; i < 10; ++i) map["b" + std::to_string(i)] = i;
    CHECK(map.size() == 10);
    CHECK(map.at("b7") == 7);
    CHECK(map.find("a7") == nullptr);
}

TEST_CASE("clear of a few entries in a large index empties exactly their cells", "[ordered_map]") {
    OrderedMap<int> map;
    map.reserve(4096);  // the index of a peak step; the entries below probe into each other's runs
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 60; ++i) map["r" + std::to_string(round) + "k" + std::to_string(i)] = i;
        for (int i = 0; i < 60; i += 4) map.erase("r" + std::to_string(round) + "k" + std::to_string(i));
        REQUIRE(map.size() == 45);
        map.clear();
        CHECK(map.empty());
        CHECK(map.begin() == map.end());
        for (int i = 0; i < 60; ++i) CHECK_FALSE(map.contains("r" + std::to_string(round) + "k" + std::to_string(i)));
    }
    for (int i = 0; i < 3000; ++i) map["n" + std::to_string(i)] = i;  // a full refill finds no stale cell
    CHECK(map.size() == 3000);
    for (int i = 0; i < 3000; ++i) REQUIRE(map.at("n" + std::to_string(i)) == i);
    CHECK_FALSE(map.contains("r2k1"));
}

TEST_CASE("reserve keeps every entry findable and in order, with holes and after growing past it", "[ordered_map]") {
    OrderedMap<int> map;
    Pairs expected;
    for (int i = 0; i < 40; ++i) map["k" + std::to_string(i)] = i;
    for (int i = 0; i < 40; i += 3) map.erase("k" + std::to_string(i));
    for (int i = 0; i < 40; ++i)
        if (i % 3 != 0) expected.emplace_back("k" + std::to_string(i), i);
    map.reserve(1000);
    map.reserve(10);  // never shrinks
    CHECK(contents(map) == expected);
    for (int i = 40; i < 1200; ++i) {  // past the reservation: the index grows again
        map["k" + std::to_string(i)] = i;
        expected.emplace_back("k" + std::to_string(i), i);
    }
    CHECK(contents(map) == expected);
    for (int i = 0; i < 1200; ++i) {
        const int* found = map.find("k" + std::to_string(i));
        REQUIRE((found != nullptr) == (i >= 40 || i % 3 != 0));
        if (found != nullptr) REQUIRE(*found == i);
    }
}
