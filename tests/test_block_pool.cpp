#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/block_pool.h"

using namespace kvsim;
using Ids = std::vector<BlockId>;
using Holders = CachedBlocks;

namespace {

constexpr BlockHash kH0 = 0x1000;
constexpr BlockHash kH1 = 0x2000;
constexpr BlockHash kH2 = 0x3000;

std::vector<int> ref_counts(const BlockPool& pool, const Ids& ids) {
    std::vector<int> out;
    for (BlockId id : ids) out.push_back(pool.block(id).ref_cnt);
    return out;
}

}  // namespace

TEST_CASE("block 0 is the null block and is never free or handed out", "[block_pool]") {
    BlockPool pool(5, true, FreeOrder::fresh_head);
    CHECK(pool.num_blocks() == 5);
    CHECK(pool.num_free_blocks() == 4);
    CHECK(pool.block(kNullBlockId).is_null);
    CHECK(pool.block(kNullBlockId).ref_cnt == 0);
    CHECK_FALSE(pool.block(1).is_null);
    CHECK_FALSE(pool.free_queue().contains(kNullBlockId));
    CHECK(pool.free_queue().to_vector() == Ids{1, 2, 3, 4});

    CHECK(pool.get_new_blocks(4) == Ids{1, 2, 3, 4});
    CHECK(pool.num_free_blocks() == 0);
    CHECK_THROWS_AS(pool.get_new_blocks(1), std::logic_error);

    // Freeing a table that contains the null block never queues it.
    pool.free_blocks({4, kNullBlockId, 3});
    CHECK(pool.num_free_blocks() == 2);
    CHECK_FALSE(pool.free_queue().contains(kNullBlockId));
    CHECK(pool.free_queue().to_vector() == Ids{4, 3});
}

TEST_CASE("get_new_blocks pops the head in order and sets ref_cnt 1", "[block_pool]") {
    BlockPool pool(8, true, FreeOrder::fresh_head);
    CHECK(pool.get_new_blocks(0).empty());
    const Ids a = pool.get_new_blocks(3);
    CHECK(a == Ids{1, 2, 3});
    CHECK(ref_counts(pool, a) == std::vector<int>{1, 1, 1});
    CHECK(pool.num_free_blocks() == 4);
    CHECK(pool.free_queue().to_vector() == Ids{4, 5, 6, 7});
    CHECK(pool.get_new_blocks(2) == Ids{4, 5});
    CHECK_THROWS_AS(pool.get_new_blocks(3), std::logic_error);
    CHECK(pool.num_free_blocks() == 2);  // a failed request pops nothing
}

TEST_CASE("touch takes a free block out of the queue and bumps ref_cnt", "[block_pool][upstream:test_kv_cache_utils.py::test_kv_cache_block]") {
    BlockPool pool(6, true, FreeOrder::fresh_head);
    const Ids a = pool.get_new_blocks(3);  // 1,2,3
    pool.cache_full_blocks({kH0, kH1, kH2}, a, 0, 3);
    pool.free_blocks({3, 2, 1});
    CHECK(pool.free_queue().to_vector() == Ids{4, 5, 3, 2, 1});

    pool.touch({2});
    CHECK(pool.block(2).ref_cnt == 1);
    CHECK_FALSE(pool.free_queue().contains(2));
    CHECK(pool.free_queue().to_vector() == Ids{4, 5, 3, 1});
    CHECK(pool.num_free_blocks() == 4);

    pool.touch({2});  // already in use: only the count changes
    CHECK(pool.block(2).ref_cnt == 2);
    CHECK(pool.free_queue().to_vector() == Ids{4, 5, 3, 1});
    CHECK(pool.block(2).hash == kH1);  // touching keeps the hash

    pool.free_blocks({2});
    CHECK(pool.block(2).ref_cnt == 1);
    CHECK_FALSE(pool.free_queue().contains(2));
    pool.free_blocks({2});
    CHECK(pool.block(2).ref_cnt == 0);
    CHECK(pool.free_queue().to_vector() == Ids{4, 5, 3, 1, 2});
}

// Table [1,2,3,4] with 1 and 2 hashed, freed tail first as KVCacheManager.free does.
TEST_CASE("free_blocks ordering per FreeOrder / caching on", "[block_pool]") {
    struct Case {
        FreeOrder order;
        Ids expected;
    };
    const std::vector<Case> cases = {
        {FreeOrder::append_all, {5, 6, 7, 4, 3, 2, 1}},       // classic: all to the tail
        {FreeOrder::fresh_head, {4, 3, 5, 6, 7, 2, 1}},       // #42656: unhashed head, hashed tail
        {FreeOrder::fresh_head_lifo, {4, 3, 5, 6, 7, 2, 1}},  // #51482: same with caching on
    };
    for (const auto& c : cases) {
        BlockPool pool(8, true, c.order);
        const Ids table = pool.get_new_blocks(4);
        REQUIRE(table == Ids{1, 2, 3, 4});
        pool.cache_full_blocks({kH0, kH1}, table, 0, 2);
        pool.free_blocks({4, 3, 2, 1});
        CHECK(pool.free_queue().to_vector() == c.expected);
        CHECK(pool.num_free_blocks() == 7);
        CHECK(ref_counts(pool, table) == std::vector<int>{0, 0, 0, 0});
        // Lazy eviction: freed blocks keep their hashes and stay findable.
        CHECK(pool.block(1).hash == kH0);
        CHECK(pool.block(2).hash == kH1);
        CHECK(pool.get_cached_block(kH0) == BlockId{1});
        CHECK(pool.get_cached_block(kH1) == BlockId{2});
    }
}

TEST_CASE("free_blocks ordering per FreeOrder / caching off", "[block_pool]") {
    struct Case {
        FreeOrder order;
        Ids expected;
    };
    // Note: block_pool.py @ c59cb7941357443da7c5eef75cfa8697d683d228 itself has no caching branch; with caching off every
    // freed block is unhashed and prepended, which is the fresh_head_lifo row.
    const std::vector<Case> cases = {
        {FreeOrder::append_all, {5, 6, 7, 4, 3, 2, 1}},
        {FreeOrder::fresh_head, {5, 6, 7, 4, 3, 2, 1}},       // #48017: everything appended
        {FreeOrder::fresh_head_lifo, {4, 3, 2, 1, 5, 6, 7}},  // #51482: everything prepended
    };
    for (const auto& c : cases) {
        BlockPool pool(8, false, c.order);
        REQUIRE(pool.get_new_blocks(4) == Ids{1, 2, 3, 4});
        pool.free_blocks({4, 3, 2, 1});
        CHECK(pool.free_queue().to_vector() == c.expected);
        // The next allocation shows which blocks are reused first.
        CHECK(pool.get_new_blocks(2) == Ids(c.expected.begin(), c.expected.begin() + 2));
    }
}

TEST_CASE("free_blocks queues only blocks whose ref_cnt reaches 0", "[block_pool]") {
    BlockPool pool(6, true, FreeOrder::fresh_head);
    const Ids t = pool.get_new_blocks(3);  // 1,2,3
    pool.touch({2});                       // shared by a second holder
    pool.free_blocks({3, 2, 1});
    CHECK(ref_counts(pool, t) == std::vector<int>{0, 1, 0});
    CHECK(pool.free_queue().to_vector() == Ids{3, 1, 4, 5});
    CHECK(pool.num_free_blocks() == 4);
}

TEST_CASE("free_blocks preconditions: no double free / no duplicates", "[block_pool]") {
    BlockPool pool(6, true, FreeOrder::fresh_head);
    pool.get_new_blocks(2);  // 1,2
    CHECK_THROWS_AS(pool.free_blocks({3}), std::logic_error);     // never allocated
    CHECK_THROWS_AS(pool.free_blocks({1, 1}), std::logic_error);  // same block twice in one call
    CHECK(ref_counts(pool, {1, 2}) == std::vector<int>{1, 1});
    pool.free_blocks({1});
    CHECK_THROWS_AS(pool.free_blocks({1}), std::logic_error);  // double free
    CHECK(pool.free_queue().to_vector() == Ids{1, 3, 4, 5});
}

TEST_CASE("free_blocks: a duplicate in a long call, and the null block held twice", "[block_pool]") {
    BlockPool pool(64, true, FreeOrder::fresh_head);
    Ids blocks = pool.get_new_blocks(40);
    Ids twice = blocks;
    twice.push_back(blocks[17]);
    CHECK_THROWS_AS(pool.free_blocks(twice), std::logic_error);
    Ids with_nulls = blocks;
    with_nulls.insert(with_nulls.begin(), {kNullBlockId, kNullBlockId});
    pool.free_blocks(with_nulls);
    CHECK(pool.num_free_blocks() == 63);
    CHECK(pool.block(kNullBlockId).is_null);
}

TEST_CASE("lazy eviction: a reused block loses its hash only when popped", "[block_pool]") {
    BlockPool pool(3, true, FreeOrder::fresh_head);  // blocks 1,2 usable
    const Ids a = pool.get_new_blocks(1);           // 1
    pool.cache_full_blocks({kH0}, a, 0, 1);
    pool.free_blocks(a);
    CHECK(pool.block(1).hash == kH0);
    CHECK(pool.get_cached_block(kH0) == BlockId{1});
    CHECK(pool.free_queue().to_vector() == Ids{2, 1});

    CHECK(pool.get_new_blocks(1) == Ids{2});  // an unhashed block first: the hash survives
    CHECK(pool.get_cached_block(kH0) == BlockId{1});

    CHECK(pool.get_new_blocks(1) == Ids{1});  // popping the hashed block evicts it now
    CHECK_FALSE(pool.block(1).hash.has_value());
    CHECK_FALSE(pool.get_cached_block(kH0).has_value());
    CHECK(pool.cached_blocks().empty());
    CHECK(pool.block(1).ref_cnt == 1);
}

TEST_CASE("cache_full_blocks does not de-duplicate - lookup returns the first", "[block_pool][upstream:test_prefix_caching.py::test_block_lookup_cache_single_block_per_key][upstream:test_prefix_caching.py::test_block_lookup_cache_multi_blocks_per_key]") {
    BlockPool pool(6, true, FreeOrder::fresh_head);
    const Ids a = pool.get_new_blocks(2);  // 1,2
    const Ids b = pool.get_new_blocks(2);  // 3,4
    pool.cache_full_blocks({kH0, kH1}, a, 0, 2);
    pool.cache_full_blocks({kH0, kH1}, b, 0, 2);  // same content computed twice
    CHECK(pool.cached_blocks() == Holders{{kH0, {1, 3}}, {kH1, {2, 4}}});
    CHECK(pool.get_cached_block(kH0) == BlockId{1});
    CHECK(pool.get_cached_block(kH1) == BlockId{2});

    // Evicting block 1 (by reuse) keeps the entry for 3; lookups now return 3.
    pool.free_blocks({2, 1});
    CHECK(pool.free_queue().to_vector() == Ids{5, 2, 1});
    CHECK(pool.get_new_blocks(3) == Ids{5, 2, 1});
    CHECK(pool.cached_blocks() == Holders{{kH0, {3}}, {kH1, {4}}});
    CHECK(pool.get_cached_block(kH0) == BlockId{3});
    CHECK(pool.get_cached_block(kH1) == BlockId{4});
    CHECK_FALSE(pool.block(1).hash.has_value());
    CHECK_FALSE(pool.block(2).hash.has_value());
}

// tests/v1/core/test_prefix_caching.py test_cache_blocks
TEST_CASE("upstream cache_full_blocks hashes only (num_cached / num_full)", "[block_pool][upstream:test_prefix_caching.py::test_cache_blocks]") {
    BlockPool pool(5, true, FreeOrder::fresh_head);
    const std::vector<BlockHash> hashes = {kH0, kH1, kH2};  // 14 tokens at bs 4: 3 full blocks
    Ids blocks = pool.get_new_blocks(2);
    pool.cache_full_blocks(hashes, blocks, 0, 2);
    CHECK(pool.cached_blocks().size() == 2);
    CHECK(pool.block(blocks[0]).hash == kH0);
    CHECK(pool.block(blocks[1]).hash == kH1);

    const Ids more = pool.get_new_blocks(1);
    blocks.push_back(more[0]);
    pool.cache_full_blocks(hashes, blocks, 2, 3);
    CHECK(pool.cached_blocks().size() == 3);
    CHECK(pool.block(blocks[2]).hash == kH2);

    pool.cache_full_blocks(hashes, blocks, 3, 3);  // nothing to do
    pool.cache_full_blocks(hashes, blocks, 3, 1);  // num_cached >= num_full: nothing to do
    CHECK(pool.cached_blocks().size() == 3);
}

TEST_CASE("cache_full_blocks skips null and matching hits / rejects a wrong hash", "[block_pool]") {
    BlockPool pool(5, true, FreeOrder::fresh_head);
    const Ids a = pool.get_new_blocks(2);  // 1,2
    pool.cache_full_blocks({kH0, kH1}, a, 0, 2);

    // A hit block (already hashed, right hash) is left alone; the null block is skipped.
    const Ids c = pool.get_new_blocks(1);  // 3
    pool.cache_full_blocks({kH0, kH1, kH2}, {1, kNullBlockId, c[0]}, 0, 3);
    CHECK(pool.cached_blocks() == Holders{{kH0, {1}}, {kH1, {2}}, {kH2, {3}}});
    CHECK_FALSE(pool.block(kNullBlockId).hash.has_value());

    CHECK_THROWS_AS(pool.cache_full_blocks({kH1}, {1}, 0, 1), std::logic_error);  // Cached block has wrong hash
    CHECK_THROWS_AS(pool.cache_full_blocks({kH0, kH1}, {1}, 0, 2), std::logic_error);  // table too short
    CHECK_THROWS_AS(pool.cache_full_blocks({kH0}, {1, 2}, 0, 2), std::logic_error);    // too few hashes
    CHECK_THROWS_AS(pool.cache_full_blocks({kH0}, {4}, 0, 1), std::logic_error);       // block 4 is free
    CHECK(pool.cached_blocks() == Holders{{kH0, {1}}, {kH1, {2}}, {kH2, {3}}});
}

TEST_CASE("cache_full_blocks requires prefix caching", "[block_pool]") {
    BlockPool pool(4, false, FreeOrder::fresh_head);
    const Ids a = pool.get_new_blocks(1);
    CHECK_THROWS_AS(pool.cache_full_blocks({kH0}, a, 0, 1), std::logic_error);
    CHECK_FALSE(pool.block(a[0]).hash.has_value());
}

// tests/v1/core/test_prefix_caching.py test_maybe_evict_cached_block, through evict_blocks.
TEST_CASE("upstream maybe_evict: an entry goes only with its last block", "[block_pool][upstream:test_prefix_caching.py::test_maybe_evict_cached_block]") {
    BlockPool pool(5, true, FreeOrder::fresh_head);
    const Ids t = pool.get_new_blocks(4);  // 1,2,3,4
    pool.cache_full_blocks({kH0, kH1, kH2, kH0}, t, 0, 4);
    CHECK(pool.cached_blocks() == Holders{{kH0, {1, 4}}, {kH1, {2}}, {kH2, {3}}});

    pool.evict_blocks({2});
    CHECK(pool.cached_blocks() == Holders{{kH0, {1, 4}}, {kH2, {3}}});
    pool.evict_blocks({1});
    CHECK(pool.cached_blocks() == Holders{{kH0, {4}}, {kH2, {3}}});
    CHECK(pool.get_cached_block(kH0) == BlockId{4});
    pool.evict_blocks({3});
    CHECK(pool.cached_blocks() == Holders{{kH0, {4}}});
    pool.evict_blocks({4});
    CHECK(pool.cached_blocks().empty());

    // evict_blocks drops hashes only: ref counts and the free queue are untouched.
    CHECK(ref_counts(pool, t) == std::vector<int>{1, 1, 1, 1});
    CHECK(pool.num_free_blocks() == 0);
    for (BlockId id : t) CHECK_FALSE(pool.block(id).hash.has_value());
    pool.evict_blocks({1, kNullBlockId});  // unhashed blocks are a no-op
    CHECK_THROWS_AS(pool.evict_blocks({5}), std::logic_error);
}

// tests/v1/core/test_prefix_caching.py test_reset_prefix_cache (pool level)
TEST_CASE("reset_prefix_cache only when every block but the null block is free", "[block_pool][upstream:test_prefix_caching.py::test_reset_prefix_cache]") {
    BlockPool pool(6, true, FreeOrder::fresh_head);
    const Ids t = pool.get_new_blocks(2);
    pool.cache_full_blocks({kH0, kH1}, t, 0, 2);
    CHECK_FALSE(pool.reset_prefix_cache());
    CHECK(pool.cached_blocks().size() == 2);
    CHECK(pool.block(1).hash == kH0);

    pool.free_blocks({2, 1});
    CHECK(pool.reset_prefix_cache());
    CHECK(pool.cached_blocks().empty());
    for (BlockId id = 0; id < pool.num_blocks(); ++id) CHECK_FALSE(pool.block(id).hash.has_value());
    CHECK(pool.num_free_blocks() == 5);
    CHECK(pool.free_queue().to_vector() == Ids{3, 4, 5, 2, 1});  // order is untouched
}

TEST_CASE("a pool needs at least the null block", "[block_pool]") {
    CHECK_THROWS_AS(BlockPool(0, true, FreeOrder::fresh_head), std::logic_error);
    BlockPool only_null(1, true, FreeOrder::fresh_head);
    CHECK(only_null.num_free_blocks() == 0);
    CHECK(only_null.reset_prefix_cache());
}

TEST_CASE("a block's record is made when the block is first used, not with the pool", "[block_pool]") {
    BlockPool pool(1'000'000, true, FreeOrder::fresh_head_lifo);
    CHECK(pool.num_blocks() == 1'000'000);
    CHECK(pool.num_touched_blocks() == 1);  // the null block
    CHECK(pool.num_free_blocks() == 999'999);
    const Ids got = pool.get_new_blocks(3);
    CHECK(got == Ids{1, 2, 3});
    CHECK(pool.num_touched_blocks() == 4);
    pool.free_blocks(Ids{3, 2, 1});
    CHECK(pool.num_touched_blocks() == 4);
    // A record read before first use is the untouched block's: its id, free, unhashed, never handed out.
    const KVCacheBlock& held = pool.block(2);
    const KVCacheBlock& untouched = pool.block(500'000);
    CHECK(untouched.id == 500'000);
    CHECK(untouched.ref_cnt == 0);
    CHECK_FALSE(untouched.hash);
    CHECK(untouched.generation == 0);
    CHECK(pool.free_queue().contains(500'000));
    CHECK(pool.num_touched_blocks() == 500'001);
    CHECK(held.id == 2);  // references survive the records made after them
    CHECK(held.generation == 1);
    CHECK_THROWS_AS(pool.block(1'000'000), std::logic_error);
    CHECK_THROWS_AS(pool.free_blocks(Ids{5}), std::logic_error);  // never handed out: ref_cnt 0
}
