#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/common/prng.h"
#include "sim/core/free_block_queue.h"

using namespace kvsim;
using Ids = std::vector<BlockId>;

namespace {

// A queue over `capacity` block ids holding exactly `order`, head first.
FreeBlockQueue queue_with(std::uint32_t capacity, const Ids& order) {
    FreeBlockQueue q(capacity);
    q.popleft_n(capacity);
    q.append_n(order);
    return q;
}

}  // namespace

TEST_CASE("starts with every block in ascending order", "[free_block_queue][upstream:test_kv_cache_utils.py::test_free_kv_cache_block_queue_initialization][upstream:test_kv_cache_utils.py::test_free_kv_cache_block_queue_get_all_free_blocks]") {
    const FreeBlockQueue q(5);
    CHECK(q.size() == 5);
    CHECK(q.to_vector() == Ids{0, 1, 2, 3, 4});
    for (BlockId id = 0; id < 5; ++id) CHECK(q.contains(id));
    CHECK(FreeBlockQueue(1).to_vector() == Ids{0});
    CHECK(FreeBlockQueue(0).to_vector().empty());
    CHECK(q.walk_length() == 5);
    CHECK(FreeBlockQueue(0).walk_length() == 0);
}

TEST_CASE("a fresh queue's links behave as if each block had been appended in turn", "[free_block_queue]") {
    FreeBlockQueue fresh(6);
    FreeBlockQueue appended = queue_with(6, Ids{0, 1, 2, 3, 4, 5});
    CHECK(fresh.popleft() == appended.popleft());
    fresh.remove(5);
    appended.remove(5);
    fresh.remove(3);
    appended.remove(3);
    fresh.append(5);
    appended.append(5);
    fresh.prepend_n(Ids{3});
    appended.prepend_n(Ids{3});
    CHECK(fresh.to_vector() == Ids{3, 1, 2, 4, 5});
    CHECK(fresh.to_vector() == appended.to_vector());
    CHECK(fresh.walk_length() == fresh.size());
    CHECK_FALSE(fresh.contains(0));
    CHECK_THROWS_AS(fresh.remove(0), std::logic_error);
}

// tests/v1/core/test_kv_cache_utils.py test_free_kv_cache_block_queue_operations
TEST_CASE("upstream operations: popleft / remove middle / append / drain", "[free_block_queue][upstream:test_kv_cache_utils.py::test_free_kv_cache_block_queue_operations][upstream:test_kv_cache_utils.py::test_free_kv_cache_block_queue_get_all_free_blocks]") {
    FreeBlockQueue q(5);
    CHECK(q.popleft() == 0);
    CHECK(q.size() == 4);
    CHECK(q.to_vector() == Ids{1, 2, 3, 4});
    CHECK_FALSE(q.contains(0));

    q.remove(2);
    CHECK(q.size() == 3);
    CHECK(q.to_vector() == Ids{1, 3, 4});
    CHECK_FALSE(q.contains(2));

    q.append(2);
    CHECK(q.size() == 4);
    CHECK(q.to_vector() == Ids{1, 3, 4, 2});

    CHECK(q.popleft() == 1);
    CHECK(q.popleft() == 3);
    CHECK(q.popleft() == 4);
    CHECK(q.popleft() == 2);
    CHECK(q.size() == 0);
    CHECK(q.to_vector().empty());
    try {
        q.popleft();
        FAIL("popleft on an empty queue must throw");
    } catch (const std::logic_error& e) {
        CHECK(std::string(e.what()).find("No free blocks available") != std::string::npos);
    }
}

TEST_CASE("remove head / tail / and the only element", "[free_block_queue]") {
    FreeBlockQueue q(4);
    q.remove(0);  // head
    CHECK(q.to_vector() == Ids{1, 2, 3});
    q.remove(3);  // tail
    CHECK(q.to_vector() == Ids{1, 2});
    q.append(0);  // new tail after a tail removal
    CHECK(q.to_vector() == Ids{1, 2, 0});
    CHECK(q.popleft() == 1);
    q.remove(0);
    CHECK(q.to_vector() == Ids{2});
    q.remove(2);  // only element
    CHECK(q.size() == 0);
    CHECK(q.to_vector().empty());
    q.append(3);  // append into an empty queue
    CHECK(q.to_vector() == Ids{3});
    CHECK(q.popleft() == 3);
}

// tests/v1/core/test_kv_cache_utils.py test_free_kv_cache_block_queue_append_n
TEST_CASE("upstream append_n keeps the given order at the tail", "[free_block_queue][upstream:test_kv_cache_utils.py::test_free_kv_cache_block_queue_append_n]") {
    FreeBlockQueue q = queue_with(6, {});
    q.append_n({});
    CHECK(q.size() == 0);
    CHECK(q.to_vector().empty());
    q.append_n({0});
    CHECK(q.to_vector() == Ids{0});
    q.append_n({4, 5});
    CHECK(q.size() == 3);
    CHECK(q.to_vector() == Ids{0, 4, 5});
    q.append_n({1, 2, 3});
    CHECK(q.size() == 6);
    CHECK(q.to_vector() == Ids{0, 4, 5, 1, 2, 3});
}

// tests/v1/core/test_kv_cache_utils.py test_free_kv_cache_block_queue_prepend_n
TEST_CASE("upstream prepend_n puts ids(0) first / ahead of earlier prepends", "[free_block_queue][upstream:test_kv_cache_utils.py::test_free_kv_cache_block_queue_prepend_n]") {
    FreeBlockQueue q = queue_with(6, {0});
    q.prepend_n({});
    CHECK(q.size() == 1);
    CHECK(q.to_vector() == Ids{0});
    q.prepend_n({4, 5});
    CHECK(q.size() == 3);
    CHECK(q.to_vector() == Ids{4, 5, 0});
    q.prepend_n({1, 2});
    CHECK(q.size() == 5);
    CHECK(q.to_vector() == Ids{1, 2, 4, 5, 0});
    Ids popped;
    for (int i = 0; i < 5; ++i) popped.push_back(q.popleft());
    CHECK(popped == Ids{1, 2, 4, 5, 0});
    CHECK(q.size() == 0);
}

TEST_CASE("prepend_n into an empty queue / then append_n behind it", "[free_block_queue]") {
    FreeBlockQueue q = queue_with(6, {});
    q.prepend_n({3, 1});
    CHECK(q.to_vector() == Ids{3, 1});
    q.append_n({5});
    q.prepend_n({0});
    CHECK(q.to_vector() == Ids{0, 3, 1, 5});
}

// tests/v1/core/test_kv_cache_utils.py test_free_kv_cache_block_queue_popleft_n
TEST_CASE("upstream popleft_n pops from the head in order", "[free_block_queue][upstream:test_kv_cache_utils.py::test_free_kv_cache_block_queue_popleft_n]") {
    FreeBlockQueue q = queue_with(6, {1, 3, 5, 4, 0, 2});
    CHECK(q.size() == 6);
    CHECK(q.popleft_n(0).empty());
    CHECK(q.size() == 6);
    CHECK(q.popleft_n(1) == Ids{1});
    CHECK(q.size() == 5);
    CHECK(q.popleft_n(2) == Ids{3, 5});
    CHECK(q.size() == 3);
    CHECK(q.popleft_n(3) == Ids{4, 0, 2});
    CHECK(q.size() == 0);
    for (BlockId id = 0; id < 6; ++id) CHECK_FALSE(q.contains(id));
}

TEST_CASE("preconditions throw and leave the queue unchanged", "[free_block_queue]") {
    FreeBlockQueue q = queue_with(6, {2, 4});
    const Ids before = q.to_vector();

    CHECK_THROWS_AS(q.popleft_n(3), std::logic_error);
    CHECK_THROWS_AS(q.remove(1), std::logic_error);        // not queued
    CHECK_THROWS_AS(q.append(2), std::logic_error);        // already queued
    CHECK_THROWS_AS(q.append_n({1, 4}), std::logic_error);  // second id already queued
    CHECK_THROWS_AS(q.append_n({1, 1}), std::logic_error);  // duplicate in one call
    CHECK_THROWS_AS(q.prepend_n({3, 2}), std::logic_error);
    CHECK_THROWS_AS(q.prepend_n({3, 3}), std::logic_error);
    CHECK_THROWS_AS(q.contains(6), std::logic_error);      // outside the pool
    CHECK_THROWS_AS(q.append(6), std::logic_error);
    CHECK(q.to_vector() == before);
    CHECK(q.size() == 2);
}

// The untouched run (blocks that never left the queue share one node) must walk, answer contains and
// order every operation exactly as a queue whose blocks were each linked on their own.
TEST_CASE("the untouched run behaves as individually linked blocks under random operations", "[free_block_queue]") {
    constexpr std::uint32_t kBlocks = 64;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        Prng prng(seed);
        FreeBlockQueue lazy(kBlocks);
        FreeBlockQueue linked = queue_with(kBlocks, [] {
            Ids all;
            for (BlockId id = 0; id < kBlocks; ++id) all.push_back(id);
            return all;
        }());
        Ids out;  // blocks outside the queue
        for (int op = 0; op < 200; ++op) {
            const std::uint64_t kind = prng.below(4);
            if (kind == 0 && lazy.size() > 0) {
                const BlockId id = lazy.popleft();
                REQUIRE(id == linked.popleft());
                out.push_back(id);
            } else if (kind == 1 && lazy.size() > 0) {
                const Ids free = linked.to_vector();
                const BlockId id = free[prng.below(free.size())];
                lazy.remove(id);
                linked.remove(id);
                out.push_back(id);
            } else if (!out.empty()) {
                const auto n = static_cast<std::size_t>(1 + prng.below(std::min<std::size_t>(out.size(), 3)));
                const Ids ids(out.end() - static_cast<std::ptrdiff_t>(n), out.end());
                out.resize(out.size() - n);
                if (kind == 2) {
                    lazy.append_n(ids);
                    linked.append_n(ids);
                } else {
                    lazy.prepend_n(ids);
                    linked.prepend_n(ids);
                }
            }
            REQUIRE(lazy.to_vector() == linked.to_vector());
            REQUIRE(lazy.walk_length() == lazy.size());
            for (BlockId id = 0; id < kBlocks; ++id) REQUIRE(lazy.contains(id) == linked.contains(id));
        }
        CHECK(lazy.untouched_begin() > 0);  // the operations did reach into the run
    }
}

TEST_CASE("a block leaves the untouched run only when it leaves the queue", "[free_block_queue]") {
    FreeBlockQueue q(1'000'000);
    CHECK(q.untouched_begin() == 0);
    CHECK(q.walk_length() == 1'000'000);
    CHECK(q.popleft_n(3) == Ids{0, 1, 2});
    CHECK(q.untouched_begin() == 3);
    q.remove(6);  // 3, 4, 5 get links of their own, ahead of the run
    CHECK(q.untouched_begin() == 7);
    q.append_n(Ids{6, 0});
    q.prepend_n(Ids{2});
    CHECK(q.size() == 1'000'000 - 1);
    CHECK(q.popleft_n(6) == Ids{2, 3, 4, 5, 7, 8});
    CHECK(q.contains(999'999));
    CHECK_FALSE(q.contains(1));
    CHECK_THROWS_AS(q.contains(1'000'000), std::logic_error);
    CHECK_THROWS_AS(q.append_n(Ids{1, 1}), std::logic_error);
    CHECK_THROWS_AS(q.prepend_n(Ids{1, 9}), std::logic_error);  // 9 is still in the run
}
