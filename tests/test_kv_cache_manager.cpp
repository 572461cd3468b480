#include <catch2/catch.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/kv_cache_manager.h"

using namespace kvsim;
using Ids = std::vector<BlockId>;

// Scenarios marked "upstream" transcribe tests/v1/core/test_prefix_caching.py (@ 003df2961dd8830c317a61f9745ccd557da9fa06 and, for
// the 2-value get_computed_blocks API, @ 717aebb008de838f4bbbb84a66d254f0f6c8c9bb) and
// tests/v1/core/test_kv_cache_utils.py; their block ids and queue orders are upstream's assertions
// unless a line says "derived" (our reading of block_pool.py @ c59cb7941357443da7c5eef75cfa8697d683d228).

namespace {

std::vector<TokenId> repeat(TokenId value, int n) { return std::vector<TokenId>(static_cast<std::size_t>(n), value); }

std::vector<TokenId> range(TokenId from, TokenId to) {
    std::vector<TokenId> v;
    for (TokenId t = from; t < to; ++t) v.push_back(t);
    return v;
}

std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// 16 x 0, 16 x 1, 16 x 2: three full blocks at block size 16.
std::vector<TokenId> common48() { return concat(concat(repeat(0, 16), repeat(1, 16)), repeat(2, 16)); }

Request make_request(const std::string& id, std::vector<TokenId> prompt, int block_size = 16) {
    return Request(id, std::move(prompt), 17, block_size, 0, KvTransferParams{});
}

KVCacheManager make_manager(std::uint32_t num_blocks, int block_size = 16, bool caching = true,
                            FreeOrder order = FreeOrder::fresh_head, int max_model_len = 8192) {
    return KVCacheManager(num_blocks, block_size, max_model_len, caching, order);
}

// allocate_slots the way the scheduler admits a waiting request: lookup, then allocate.
std::optional<Ids> admit(KVCacheManager& m, Request& r, int num_new_tokens) {
    const ComputedBlocks hit = m.get_computed_blocks(r);
    return m.allocate_slots(r, num_new_tokens, hit.num_tokens, hit.blocks);
}

Ids queue(const KVCacheManager& m) { return m.block_pool().free_queue().to_vector(); }
int ref(const KVCacheManager& m, BlockId id) { return m.block_pool().block(id).ref_cnt; }
bool hashed(const KVCacheManager& m, BlockId id) { return m.block_pool().block(id).hash.has_value(); }

}  // namespace

// test_prefix_caching.py test_prefill
TEST_CASE("upstream test_prefill: hits / fresh-first free order / eviction order",
          "[kv_cache_manager][upstream:test_prefix_caching.py::test_prefill]") {
    KVCacheManager m = make_manager(11);
    const auto common = common48();

    Request req0 = make_request("0", concat(common, repeat(3, 7)));
    ComputedBlocks hit = m.get_computed_blocks(req0);
    CHECK(req0.block_hashes().size() == 3);
    CHECK(hit.blocks.empty());
    CHECK(hit.num_tokens == 0);
    CHECK(m.allocate_slots(req0, 55, hit.num_tokens, hit.blocks) == Ids{1, 2, 3, 4});
    for (BlockId id : {1u, 2u, 3u}) {
        CHECK(m.block_pool().block(id).hash == req0.block_hashes()[id - 1]);
        CHECK(ref(m, id) == 1);
    }
    CHECK_FALSE(hashed(m, 4));
    CHECK(ref(m, 4) == 1);

    // Hit while the original blocks are in use.
    Request req1 = make_request("1", concat(common, repeat(3, 5)));
    hit = m.get_computed_blocks(req1);
    CHECK(hit.blocks == Ids{1, 2, 3});
    CHECK(hit.num_tokens == 48);
    CHECK(m.allocate_slots(req1, 53 - 48, hit.num_tokens, hit.blocks) == Ids{5});
    CHECK(m.get_block_ids("1") == Ids{1, 2, 3, 5});
    for (BlockId id : {1u, 2u, 3u}) CHECK(ref(m, id) == 2);
    CHECK(m.block_pool().num_free_blocks() == 5);

    m.free(req0);
    CHECK(queue(m) == Ids{4, 6, 7, 8, 9, 10});  // derived: only 4 reached ref 0
    m.free(req1);
    CHECK(m.block_pool().num_free_blocks() == 10);
    CHECK(queue(m) == Ids{5, 4, 6, 7, 8, 9, 10, 3, 2, 1});

    // Hit while the original blocks are free: they are touched out of the queue.
    Request req2 = make_request("2", concat(common, repeat(3, 6)));
    hit = m.get_computed_blocks(req2);
    CHECK(hit.blocks == Ids{1, 2, 3});
    CHECK(hit.num_tokens == 48);
    CHECK(m.allocate_slots(req2, 53 - 48, hit.num_tokens, hit.blocks) == Ids{5});
    CHECK(m.block_pool().num_free_blocks() == 6);
    CHECK(queue(m) == Ids{4, 6, 7, 8, 9, 10});  // derived
    for (BlockId id : queue(m)) CHECK(ref(m, id) == 0);
    m.free(req2);
    CHECK(queue(m) == Ids{5, 4, 6, 7, 8, 9, 10, 3, 2, 1});  // derived

    // Cache miss and eviction: the returned ids are the eviction order.
    Request req3 = make_request("3", repeat(99, 160));
    hit = m.get_computed_blocks(req3);
    CHECK(hit.blocks.empty());
    CHECK(m.allocate_slots(req3, 160, hit.num_tokens, hit.blocks) == Ids{5, 4, 6, 7, 8, 9, 10, 3, 2, 1});
    CHECK(m.block_pool().num_free_blocks() == 0);
    CHECK(queue(m).empty());
    // derived: blocks 3,2,1 were re-hashed with req3's content (old entries evicted on pop).
    CHECK(m.block_pool().block(1).hash == req3.block_hashes()[9]);
    CHECK(m.block_pool().cached_blocks().size() == 10);
    CHECK_FALSE(m.block_pool().get_cached_block(req0.block_hashes()[0]).has_value());
}

TEST_CASE("test_prefill free order under the classic append-all rule (derived)",
          "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11, 16, true, FreeOrder::append_all);
    Request req0 = make_request("0", concat(common48(), repeat(3, 7)));
    Request req1 = make_request("1", concat(common48(), repeat(3, 5)));
    CHECK(admit(m, req0, 55) == Ids{1, 2, 3, 4});
    CHECK(admit(m, req1, 5) == Ids{5});
    m.free(req0);
    m.free(req1);
    CHECK(queue(m) == Ids{6, 7, 8, 9, 10, 4, 5, 3, 2, 1});
}

// test_prefix_caching.py test_decode
TEST_CASE("upstream test_decode: blocks appear when a slot needs them", "[kv_cache_manager][upstream:test_prefix_caching.py::test_decode]") {
    KVCacheManager m = make_manager(11);
    Request req0 = make_request("0", concat(common48(), repeat(3, 7)));
    CHECK(admit(m, req0, 55) == Ids{1, 2, 3, 4});

    req0.num_computed_tokens = 55;
    for (int i = 0; i < 4; ++i) req0.append_output_token(8);
    const auto none = m.allocate_slots(req0, 4);
    REQUIRE(none.has_value());
    CHECK(none->empty());
    CHECK_FALSE(hashed(m, m.get_block_ids("0").back()));

    req0.num_computed_tokens = 59;
    for (int i = 0; i < 19; ++i) req0.append_output_token(7);
    CHECK(m.allocate_slots(req0, 19) == Ids{5});  // id derived; upstream asserts one new block
    const Ids table = m.get_block_ids("0");
    CHECK(table == Ids{1, 2, 3, 4, 5});
    CHECK(hashed(m, table[3]));
    CHECK(m.block_pool().block(table[3]).hash == req0.block_hashes()[3]);
    CHECK_FALSE(hashed(m, table[4]));
}

// KVCacheManager.allocate_slots: bs=16, a decode step that needs slot 49 allocates block #4.
TEST_CASE("decode needing slot 49 allocates the 4th block / slots 50-64 do not",
          "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);
    Request r = make_request("r", range(0, 48));
    CHECK(admit(m, r, 48) == Ids{1, 2, 3});
    CHECK(hashed(m, 3));

    r.num_computed_tokens = 48;
    r.append_output_token(1000);  // token 49: slot index 48 is the first of block #4
    CHECK(m.allocate_slots(r, 1) == Ids{4});
    CHECK_FALSE(hashed(m, 4));

    for (int pos = 49; pos < 64; ++pos) {
        r.num_computed_tokens = pos;
        r.append_output_token(1000 + pos);
        const auto got = m.allocate_slots(r, 1);
        REQUIRE(got.has_value());
        CHECK(got->empty());
    }
    CHECK(hashed(m, 4));  // 64 tokens: block #4 is full and hashed at schedule time
    CHECK(m.block_pool().block(4).hash == r.block_hashes()[3]);

    r.num_computed_tokens = 64;
    r.append_output_token(7);
    CHECK(m.allocate_slots(r, 1) == Ids{5});
}

// test_prefix_caching.py test_evict
TEST_CASE("upstream test_evict: free order and hits on freed blocks", "[kv_cache_manager][upstream:test_prefix_caching.py::test_evict]") {
    KVCacheManager m = make_manager(11);
    Request req0 = make_request("0", range(0, 5 * 16 + 7));
    CHECK(admit(m, req0, 5 * 16 + 7) == Ids{1, 2, 3, 4, 5, 6});
    Request req1 = make_request("1", range(87, 87 + 48));
    CHECK(admit(m, req1, 48) == Ids{7, 8, 9});
    CHECK(m.block_pool().num_free_blocks() == 1);

    m.free(req0);
    CHECK(queue(m) == Ids{6, 10, 5, 4, 3, 2, 1});
    m.free(req1);
    CHECK(m.block_pool().num_free_blocks() == 10);
    CHECK(queue(m) == Ids{6, 10, 5, 4, 3, 2, 1, 9, 8, 7});

    Request req2 = make_request("2", range(0, 2 * 16 + 3));
    const ComputedBlocks hit = m.get_computed_blocks(req2);
    CHECK(hit.blocks == Ids{1, 2});
    CHECK(hit.num_tokens == 32);
    CHECK(m.allocate_slots(req2, 3, hit.num_tokens, hit.blocks) == Ids{6});
    CHECK(m.block_pool().num_free_blocks() == 7);
    CHECK(queue(m) == Ids{10, 5, 4, 3, 9, 8, 7});  // derived
}

// test_prefix_caching.py test_hash_block_correct_reuse
TEST_CASE("upstream test_hash_block_correct_reuse: reused block drops its hash",
          "[kv_cache_manager][upstream:test_prefix_caching.py::test_hash_block_correct_reuse]") {
    KVCacheManager m = make_manager(2);
    Request a = make_request("0", range(0, 16));
    CHECK(admit(m, a, 16) == Ids{1});
    CHECK(hashed(m, 1));
    m.free(a);
    CHECK(queue(m) == Ids{1});

    Request b = make_request("1", range(0, 15));
    CHECK(admit(m, b, 15) == Ids{1});
    CHECK_FALSE(hashed(m, 1));
    CHECK(m.block_pool().cached_blocks().empty());
}

// test_prefix_caching.py test_computed_blocks_not_evicted
TEST_CASE("upstream test_computed_blocks_not_evicted", "[kv_cache_manager][upstream:test_prefix_caching.py::test_computed_blocks_not_evicted]") {
    KVCacheManager m = make_manager(3);
    Request r0 = make_request("0", range(0, 16));
    CHECK(admit(m, r0, 16) == Ids{1});
    Request r1 = make_request("1", range(16, 32));
    CHECK(admit(m, r1, 16) == Ids{2});
    m.free(r0);
    m.free(r1);
    CHECK(queue(m) == Ids{1, 2});  // derived

    Request r2 = make_request("2", range(0, 32));
    const ComputedBlocks hit = m.get_computed_blocks(r2);
    CHECK(hit.blocks == Ids{1});
    CHECK(hit.num_tokens == 16);
    CHECK(m.allocate_slots(r2, 16, hit.num_tokens, hit.blocks) == Ids{2});
    CHECK(m.get_block_ids("2") == Ids{1, 2});
}

// test_prefix_caching.py test_basic_prefix_caching_disabled, per FreeOrder.
TEST_CASE("upstream test_basic_prefix_caching_disabled", "[kv_cache_manager][upstream:test_prefix_caching.py::test_basic_prefix_caching_disabled]") {
    struct Case {
        FreeOrder order;
        Ids queue_after_free;
    };
    const std::vector<Case> cases = {
        {FreeOrder::append_all, {4, 3, 2, 1}},
        {FreeOrder::fresh_head, {4, 3, 2, 1}},       // #48017
        {FreeOrder::fresh_head_lifo, {3, 2, 1, 4}},  // #51482 (= c59cb7941357443da7c5eef75cfa8697d683d228, which has no caching branch)
    };
    for (const auto& c : cases) {
        KVCacheManager m = make_manager(5, 4, false, c.order);
        Request r1 = make_request("1", range(0, 10), 4);
        CHECK(m.get_computed_blocks(r1).blocks.empty());
        CHECK(admit(m, r1, 10) == Ids{1, 2, 3});
        CHECK_FALSE(hashed(m, 1));
        m.free(r1);
        CHECK(queue(m) == c.queue_after_free);

        Request r2 = make_request("2", range(0, 16), 4);  // shares a prefix, but nothing is cached
        const ComputedBlocks hit = m.get_computed_blocks(r2);
        CHECK(hit.blocks.empty());
        CHECK(hit.num_tokens == 0);
        CHECK(admit(m, r2, 16) == c.queue_after_free);

        Request r3 = make_request("3", range(0, 4), 4);
        CHECK_FALSE(admit(m, r3, 4).has_value());
        CHECK_FALSE(m.has_blocks("3"));
    }
}

// test_prefix_caching.py test_prefill_not_enough_free_blocks_with_computed_blocks
TEST_CASE("upstream evictable-hit surcharge: hits in the free queue count against free",
          "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);
    const auto common = common48();
    Request req0 = make_request("0", common);
    CHECK(admit(m, req0, 48) == Ids{1, 2, 3});

    Request req1 = make_request("1", concat(common, common));
    ComputedBlocks hit = m.get_computed_blocks(req1);
    CHECK(hit.blocks == Ids{1, 2, 3});
    CHECK(hit.num_tokens == 48);
    CHECK(m.allocate_slots(req1, 48, hit.num_tokens, hit.blocks) == Ids{4, 5, 6});
    const Ids part1 = m.get_block_ids("1");
    CHECK(part1 == Ids{1, 2, 3, 4, 5, 6});
    m.free(req1);
    for (BlockId id : {1u, 2u, 3u}) CHECK(ref(m, id) == 1);
    for (BlockId id : {4u, 5u, 6u}) CHECK(ref(m, id) == 0);
    CHECK(queue(m) == Ids{7, 8, 9, 10, 6, 5, 4});  // derived

    Request req2 = make_request("2", repeat(7, 32));
    CHECK(admit(m, req2, 32) == Ids{7, 8});
    CHECK(m.block_pool().num_free_blocks() == 5);

    // 9 blocks needed, 6 hit, 3 new: fits in 5 free without the surcharge, but the 3 free-queue hits
    // cost 3 more: 6 > 5.
    Request req3 = make_request("3", concat(concat(common, common), common));
    hit = m.get_computed_blocks(req3);
    CHECK(hit.blocks == part1);
    CHECK(hit.num_tokens == 96);
    CHECK_FALSE(m.allocate_slots(req3, 48, hit.num_tokens, hit.blocks).has_value());
    for (BlockId id : {1u, 2u, 3u}) CHECK(ref(m, id) == 1);
    for (BlockId id : {4u, 5u, 6u}) CHECK(ref(m, id) == 0);
    CHECK(m.block_pool().num_free_blocks() == 5);
    CHECK(queue(m) == Ids{9, 10, 6, 5, 4});
    CHECK_FALSE(m.has_blocks("3"));

    // derived: with req2's two (hashed) blocks back at the tail, 3 + 3 <= 7 and the same call succeeds.
    m.free(req2);
    CHECK(m.block_pool().num_free_blocks() == 7);
    CHECK(queue(m) == Ids{9, 10, 6, 5, 4, 8, 7});
    CHECK(m.allocate_slots(req3, 48, hit.num_tokens, hit.blocks) == Ids{9, 10, 8});
    CHECK(m.get_block_ids("3") == Ids{1, 2, 3, 4, 5, 6, 9, 10, 8});
    CHECK(m.block_pool().num_free_blocks() == 1);
    CHECK(queue(m) == Ids{7});
    CHECK(m.block_pool().block(8).hash == req3.block_hashes()[8]);  // req2's hash evicted on pop
}

TEST_CASE("surcharge alone decides admission (minimal case)", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(4);  // blocks 1..3 usable
    Request a = make_request("a", range(0, 32));
    CHECK(admit(m, a, 32) == Ids{1, 2});
    m.free(a);
    CHECK(queue(m) == Ids{3, 2, 1});
    Request c = make_request("c", range(500, 510));
    CHECK(admit(m, c, 10) == Ids{3});
    CHECK(m.block_pool().num_free_blocks() == 2);

    // b: 48 tokens, 2 hit blocks (both free), 1 new block. 1 <= 2 free, but touching the hits
    // takes both free blocks: 1 + 2 > 2.
    Request b = make_request("b", range(0, 48));
    const ComputedBlocks hit = m.get_computed_blocks(b);
    CHECK(hit.blocks == Ids{1, 2});
    CHECK_FALSE(m.allocate_slots(b, 16, hit.num_tokens, hit.blocks).has_value());
    CHECK(ref(m, 1) == 0);
    CHECK(ref(m, 2) == 0);
    CHECK(queue(m) == Ids{2, 1});

    // Hits still held by another request cost nothing extra.
    m.free(c);
    Request a2 = make_request("a2", range(0, 33));
    CHECK(admit(m, a2, 1) == Ids{3});  // 2 hits touched (3 - 2 = 1 new block needed)
    const ComputedBlocks shared = m.get_computed_blocks(b);
    CHECK(shared.blocks == Ids{1, 2});
    CHECK(ref(m, 1) == 1);
    CHECK(m.block_pool().num_free_blocks() == 0);
    CHECK_FALSE(m.allocate_slots(b, 16, shared.num_tokens, shared.blocks).has_value());  // 1 new > 0 free
}

TEST_CASE("prefix hits never cover the last token", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);
    Request a = make_request("a", range(0, 48));
    CHECK(admit(m, a, 48) == Ids{1, 2, 3});

    // Exactly 2 full blocks cached and requested: max hit 31 tokens, so only 1 block.
    Request b = make_request("b", range(0, 32));
    ComputedBlocks hit = m.get_computed_blocks(b);
    CHECK(hit.blocks == Ids{1});
    CHECK(hit.num_tokens == 16);

    Request c = make_request("c", range(0, 33));
    hit = m.get_computed_blocks(c);
    CHECK(hit.blocks == Ids{1, 2});
    CHECK(hit.num_tokens == 32);

    Request d = make_request("d", range(0, 48));  // fully cached prompt recomputes a whole block
    hit = m.get_computed_blocks(d);
    CHECK(hit.blocks == Ids{1, 2});
    CHECK(hit.num_tokens == 32);

    Request one = make_request("one", range(0, 1));
    CHECK(m.get_computed_blocks(one).blocks.empty());

    // The lookup does not touch ref counts.
    CHECK(ref(m, 1) == 1);
    CHECK(ref(m, 2) == 1);
}

TEST_CASE("lookup stops at the first miss", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);
    Request a = make_request("a", range(0, 64));
    CHECK(admit(m, a, 64) == Ids{1, 2, 3, 4});
    m.block_pool().evict_blocks({2});
    Request b = make_request("b", range(0, 80));
    const ComputedBlocks hit = m.get_computed_blocks(b);
    CHECK(hit.blocks == Ids{1});  // blocks 3 and 4 are still cached but follow the miss
    CHECK(hit.num_tokens == 16);
}

TEST_CASE("caching disabled: no lookups / no hashes", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11, 16, false);
    Request a = make_request("a", range(0, 64));
    CHECK(admit(m, a, 64) == Ids{1, 2, 3, 4});
    for (BlockId id : {1u, 2u, 3u, 4u}) CHECK_FALSE(hashed(m, id));
    Request b = make_request("b", range(0, 64));
    const ComputedBlocks hit = m.get_computed_blocks(b);
    CHECK(hit.blocks.empty());
    CHECK(hit.num_tokens == 0);
    CHECK_THROWS_AS(m.allocate_slots(b, 48, 16, Ids{1}), std::logic_error);
}

// KVCacheManager.allocate_slots with num_external_computed_tokens: external tokens get fresh blocks; the return value holds only new-token blocks.
TEST_CASE("external computed tokens: blocks allocated / not returned", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);
    Request r = make_request("r", range(0, 64));
    // 32 external tokens, 32 new tokens: ext blocks [1,2], new [3,4]; all hashed (min(64, 64) // 16).
    CHECK(m.allocate_slots(r, 32, 0, {}, 0, 32) == Ids{3, 4});
    CHECK(m.get_block_ids("r") == Ids{1, 2, 3, 4});
    for (BlockId id : {1u, 2u, 3u, 4u}) CHECK(hashed(m, id));
    CHECK(m.block_pool().num_free_blocks() == 6);
}

TEST_CASE("async load: 0 new tokens / ext blocks / hashing delayed", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);
    Request r = make_request("r", range(0, 40));
    const auto got = m.allocate_slots(r, 0, 0, {}, 0, 32, /*delay_cache_blocks=*/true);
    REQUIRE(got.has_value());
    CHECK(got->empty());  // ceil(32/16) = 2 blocks, all of them for external tokens
    CHECK(m.get_block_ids("r") == Ids{1, 2});
    CHECK_FALSE(hashed(m, 1));
    CHECK_FALSE(hashed(m, 2));
    // _update_waiting_for_remote_kv caches them once the load finished.
    m.cache_blocks(r, 32);
    CHECK(m.block_pool().block(1).hash == r.block_hashes()[0]);
    CHECK(m.block_pool().block(2).hash == r.block_hashes()[1]);
}

TEST_CASE("cache_blocks with a negative count caches nothing, as upstream's floor division does", "[kv_cache_manager]") {
    // AsyncScheduler passes num_computed_tokens - num_output_placeholders: -1 once a failed load
    // rewound a request to 0 that kept its placeholder (issue #45138). Upstream returns (-1 // 16 = -1
    // full blocks, below the cached count); the model once stopped the run with an internal error.
    KVCacheManager m = make_manager(11);
    Request r = make_request("r", range(0, 40));
    const auto got = m.allocate_slots(r, 0, 0, {}, 0, 32, /*delay_cache_blocks=*/true);
    REQUIRE(got.has_value());
    REQUIRE_NOTHROW(m.cache_blocks(r, -1));
    CHECK_FALSE(hashed(m, 1));
    CHECK_FALSE(hashed(m, 2));
    m.cache_blocks(r, 32);  // a later non-negative count still caches
    CHECK(hashed(m, 1));
    CHECK(hashed(m, 2));
}

TEST_CASE("external tokens after local hits", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);
    Request a = make_request("a", range(0, 40));
    CHECK(admit(m, a, 40) == Ids{1, 2, 3});

    // b: 80 tokens; local hits [1,2] (32), 16 external, 32 new. Need ceil(80/16) = 5 - 2 hits = 3
    // (hits are held by a: no surcharge). Ext blocks: ceil(48/16) - 2 = 1 -> [4]; new: 5 - 3 = 2 -> [5,6].
    Request b = make_request("b", range(0, 80));
    const ComputedBlocks hit = m.get_computed_blocks(b);
    CHECK(hit.blocks == Ids{1, 2});
    CHECK(m.allocate_slots(b, 32, hit.num_tokens, hit.blocks, 0, 16) == Ids{5, 6});
    CHECK(m.get_block_ids("b") == Ids{1, 2, 4, 5, 6});
    CHECK(ref(m, 1) == 2);
    CHECK(ref(m, 2) == 2);
    for (BlockId id : {4u, 5u, 6u}) CHECK(m.block_pool().block(id).hash == b.block_hashes()[id == 4 ? 2 : id - 2]);
}

// test_kv_cache_utils.py test_allocate_with_lookahead (+ a max_model_len cap case)
TEST_CASE("upstream lookahead slots are allocated but never hashed", "[kv_cache_manager][upstream:test_kv_cache_utils.py::test_allocate_with_lookahead]") {
    {
        KVCacheManager m = make_manager(10, 4, true, FreeOrder::fresh_head, 100);
        Request r = make_request("0", {}, 4);
        const auto got = m.allocate_slots(r, 3, 0, {}, 2);
        REQUIRE(got.has_value());
        CHECK(got->size() == 2);  // ceil(5/4)
        CHECK(m.block_pool().cached_blocks().empty());
    }
    {
        KVCacheManager m = make_manager(10, 4, true, FreeOrder::fresh_head, 100);
        Request r = make_request("0", {}, 4);
        const auto got = m.allocate_slots(r, 3, 0, {}, 4);
        REQUIRE(got.has_value());
        CHECK(got->size() == 2);  // ceil(7/4)
    }
    {
        KVCacheManager m = make_manager(10, 4, true, FreeOrder::fresh_head, 4);  // slots capped at 4
        Request r = make_request("0", {}, 4);
        CHECK(m.allocate_slots(r, 3, 0, {}, 4) == Ids{1});
    }
    {
        // Full prompt + 4 lookahead: lookahead blocks exist, only prompt blocks get hashes.
        KVCacheManager m = make_manager(10, 4, true, FreeOrder::fresh_head, 100);
        Request r = make_request("p", range(0, 8), 4);
        CHECK(m.allocate_slots(r, 8, 0, {}, 4) == Ids{1, 2, 3});
        CHECK(hashed(m, 1));
        CHECK(hashed(m, 2));
        CHECK_FALSE(hashed(m, 3));
    }
}

TEST_CASE("max_model_len caps the slots that need blocks", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11, 16, true, FreeOrder::fresh_head, 32);
    Request r = make_request("r", range(0, 30));
    CHECK(admit(m, r, 30) == Ids{1, 2});
    r.num_computed_tokens = 30;
    r.append_output_token(1);
    // slots = min(31 + 1 + 4 lookahead, 32) = 32: still 2 blocks, although 36 slots would need 3.
    const auto got = m.allocate_slots(r, 1, 0, {}, 4);
    REQUIRE(got.has_value());
    CHECK(got->empty());
    r.num_computed_tokens = 31;
    r.append_output_token(2);
    const auto again = m.allocate_slots(r, 1, 0, {}, 4);
    REQUIRE(again.has_value());
    CHECK(again->empty());
    CHECK(m.get_block_ids("r") == Ids{1, 2});
    CHECK(hashed(m, 2));  // 32 tokens: both blocks full

    // total_computed is capped too: 40 computed + ext against a 32-token model still needs 2 blocks.
    KVCacheManager m2 = make_manager(11, 16, true, FreeOrder::fresh_head, 32);
    Request big = make_request("big", range(0, 32));
    CHECK(m2.allocate_slots(big, 8, 0, {}, 0, 0) == Ids{1});
    big.num_computed_tokens = 40;
    const auto capped = m2.allocate_slots(big, 1);
    REQUIRE(capped.has_value());
    CHECK(capped == Ids{2});  // min(min(40, 32) + 1, 32) = 32 slots -> 2 blocks
}

TEST_CASE("allocate_slots returns only this call's new blocks", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);
    Request a = make_request("a", range(0, 40));
    CHECK(admit(m, a, 40) == Ids{1, 2, 3});
    Request b = make_request("b", range(0, 40));
    const ComputedBlocks hit = m.get_computed_blocks(b);
    CHECK(hit.blocks == Ids{1, 2});
    CHECK(m.allocate_slots(b, 8, hit.num_tokens, hit.blocks) == Ids{4});
    CHECK(m.get_block_ids("b") == Ids{1, 2, 4});

    // Chunked prefill: the second chunk fits the held block and returns nothing.
    Request c = make_request("c", range(1000, 1040));
    CHECK(m.allocate_slots(c, 20) == Ids{5, 6});
    c.num_computed_tokens = 20;
    CHECK(m.allocate_slots(c, 12) == Ids{});
    c.num_computed_tokens = 32;
    CHECK(m.allocate_slots(c, 8) == Ids{7});
    CHECK(m.get_block_ids("c") == Ids{5, 6, 7});
}

TEST_CASE("hashes are visible at schedule time / per chunk", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);
    Request c = make_request("c", range(0, 40));
    CHECK(m.allocate_slots(c, 20) == Ids{1, 2});
    CHECK(hashed(m, 1));  // 20 scheduled tokens: block 1 full
    CHECK_FALSE(hashed(m, 2));
    // Another request can hit block 1 before c's chunk is executed.
    Request d = make_request("d", range(0, 40));
    CHECK(m.get_computed_blocks(d).blocks == Ids{1});
    c.num_computed_tokens = 20;
    CHECK(m.allocate_slots(c, 20) == Ids{3});
    CHECK(hashed(m, 2));
    CHECK_FALSE(hashed(m, 3));  // 40 tokens: block 3 holds 8
}

TEST_CASE("free releases the table tail first", "[kv_cache_manager]") {
    SECTION("fresh_head: unhashed tail to the head, hashed prefix to the tail, first block last") {
        KVCacheManager m = make_manager(8, 4, true, FreeOrder::fresh_head);
        Request r = make_request("r", range(0, 14), 4);  // 3 full blocks + 2 tokens
        CHECK(admit(m, r, 14) == Ids{1, 2, 3, 4});
        m.free(r);
        CHECK(queue(m) == Ids{4, 5, 6, 7, 3, 2, 1});
        CHECK_FALSE(m.has_blocks("r"));
        CHECK(m.get_block_ids("r").empty());
    }
    SECTION("append_all: the whole table reversed at the tail") {
        KVCacheManager m = make_manager(8, 4, true, FreeOrder::append_all);
        Request r = make_request("r", range(0, 14), 4);
        CHECK(admit(m, r, 14) == Ids{1, 2, 3, 4});
        m.free(r);
        CHECK(queue(m) == Ids{5, 6, 7, 4, 3, 2, 1});
    }
    SECTION("two unhashed blocks keep tail-first order at the head") {
        KVCacheManager m = make_manager(8, 4, true, FreeOrder::fresh_head);
        Request r = make_request("r", range(0, 14), 4);
        CHECK(m.allocate_slots(r, 2, 0, {}, 6) == Ids{1, 2});  // 8 slots for 2 tokens, nothing full
        m.free(r);
        CHECK(queue(m) == Ids{2, 1, 3, 4, 5, 6, 7});
    }
    SECTION("freeing a request without blocks is a no-op") {
        KVCacheManager m = make_manager(8, 4);
        Request r = make_request("r", range(0, 14), 4);
        m.free(r);
        CHECK(queue(m) == Ids{1, 2, 3, 4, 5, 6, 7});
    }
}

TEST_CASE("a preempted request re-hits its own freed blocks", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);
    Request r = make_request("r", range(0, 40));
    CHECK(admit(m, r, 40) == Ids{1, 2, 3});
    r.num_computed_tokens = 40;
    r.append_output_token(5);
    m.free(r);  // preemption
    r.num_computed_tokens = 0;
    const ComputedBlocks hit = m.get_computed_blocks(r);
    CHECK(hit.blocks == Ids{1, 2});
    CHECK(m.allocate_slots(r, 41 - 32, hit.num_tokens, hit.blocks) == Ids{3});  // its unhashed tail came back first
    CHECK(m.get_block_ids("r") == Ids{1, 2, 3});
}

TEST_CASE("reset_prefix_cache through the pool (upstream test_reset_prefix_cache)",
          "[kv_cache_manager][upstream:test_prefix_caching.py::test_reset_prefix_cache]") {
    KVCacheManager m = make_manager(11);
    Request req0 = make_request("0", concat(common48(), repeat(3, 7)));
    CHECK(m.allocate_slots(req0, 55) == Ids{1, 2, 3, 4});
    Request req1 = make_request("1", concat(common48(), repeat(4, 7)));
    const ComputedBlocks hit = m.get_computed_blocks(req1);
    CHECK(hit.blocks.size() == 3);
    CHECK(m.allocate_slots(req1, 7, hit.num_tokens, hit.blocks) == Ids{5});
    CHECK_FALSE(m.block_pool().reset_prefix_cache());
    CHECK_FALSE(m.block_pool().cached_blocks().empty());
    m.free(req0);
    m.free(req1);
    CHECK(m.block_pool().reset_prefix_cache());
    CHECK(m.block_pool().cached_blocks().empty());
    for (BlockId id = 0; id < 11; ++id) CHECK_FALSE(hashed(m, id));
    Request again = make_request("2", concat(common48(), repeat(3, 7)));
    CHECK(m.get_computed_blocks(again).blocks.empty());
}

TEST_CASE("allocate_slots preconditions", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);
    Request r = make_request("r", range(0, 40));
    // Upstream raises ValueError for 0 new and 0 external tokens.
    CHECK_THROWS_AS(m.allocate_slots(r, 0), std::logic_error);
    CHECK_THROWS_AS(m.allocate_slots(r, -1), std::logic_error);
    CHECK_THROWS_AS(m.allocate_slots(r, 8, 16, {}), std::logic_error);     // hit tokens without hit blocks
    CHECK_THROWS_AS(m.allocate_slots(r, 8, 0, {1}), std::logic_error);     // hit blocks without hit tokens
    CHECK_THROWS_AS(m.allocate_slots(r, 8, 0, {}, -1), std::logic_error);  // negative lookahead
    CHECK_FALSE(m.has_blocks("r"));
    CHECK(m.block_pool().num_free_blocks() == 10);

    // A tracked (running) request never gets new prefix hits.
    CHECK(m.allocate_slots(r, 16) == Ids{1});
    Request other = make_request("o", range(0, 40));
    const ComputedBlocks hit = m.get_computed_blocks(other);
    REQUIRE(hit.blocks == Ids{1});
    CHECK_THROWS_AS(m.allocate_slots(r, 8, hit.num_tokens, hit.blocks), std::logic_error);

    Request empty = make_request("e", {});
    CHECK_THROWS_AS(m.get_computed_blocks(empty), std::logic_error);
}

TEST_CASE("KVCacheManager constructor preconditions", "[kv_cache_manager]") {
    CHECK_THROWS_AS(KVCacheManager(11, 0, 100, true, FreeOrder::fresh_head), std::logic_error);
    CHECK_THROWS_AS(KVCacheManager(11, 16, 0, true, FreeOrder::fresh_head), std::logic_error);
    const KVCacheManager m(11, 16, 100, true, FreeOrder::fresh_head);
    CHECK(m.block_size() == 16);
    CHECK(m.block_pool().num_free_blocks() == 10);
    CHECK(m.all_request_blocks().empty());
}

// v0.29-era admission arguments (kv_cache_manager.py @ 003df2961dd8830c317a61f9745ccd557da9fa06); derived values.
TEST_CASE("full_sequence_must_fit gates on the whole sequence", "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);  // 10 free
    Request r = make_request("r", range(0, 200));  // 13 blocks in full
    AdmissionLimits must_fit;
    must_fit.full_sequence_must_fit = true;
    CHECK_FALSE(m.allocate_slots(r, 64, 0, {}, 0, 0, false, must_fit).has_value());
    CHECK(m.block_pool().num_free_blocks() == 10);
    CHECK_FALSE(m.has_blocks("r"));
    CHECK(m.allocate_slots(r, 64) == Ids{1, 2, 3, 4});  // the first chunk alone fits

    // The full check counts hits the same way: free-queue hits are surcharged.
    KVCacheManager m2 = make_manager(11);
    Request a = make_request("a", range(0, 80));
    CHECK(admit(m2, a, 80) == Ids{1, 2, 3, 4, 5});
    m2.free(a);  // 5 hashed blocks back at the tail, 10 free
    Request b = make_request("b", range(0, 160));  // 10 blocks in full, 5 of them hits (all free)
    const ComputedBlocks hit = m2.get_computed_blocks(b);
    REQUIRE(hit.blocks == Ids{1, 2, 3, 4, 5});
    // full: (10 - 5) + 5 evictable = 10 <= 10 free; chunk: (6 - 5) + 5 = 6.
    CHECK(m2.allocate_slots(b, 16, hit.num_tokens, hit.blocks, 0, 0, false, must_fit) == Ids{6});
}

TEST_CASE("reserved_blocks shrinks the chunk check / not the full check", "[kv_cache_manager]") {
    AdmissionLimits limits;
    limits.full_sequence_must_fit = true;
    {
        KVCacheManager m = make_manager(11);
        Request r = make_request("r", range(0, 160));  // full: 10 <= 10; chunk: 4 <= 10 - 6
        limits.reserved_blocks = 6;
        CHECK(m.allocate_slots(r, 64, 0, {}, 0, 0, false, limits) == Ids{1, 2, 3, 4});
    }
    {
        KVCacheManager m = make_manager(11);
        Request r = make_request("r", range(0, 160));  // chunk: 4 > 10 - 7
        limits.reserved_blocks = 7;
        CHECK_FALSE(m.allocate_slots(r, 64, 0, {}, 0, 0, false, limits).has_value());
        CHECK(m.block_pool().num_free_blocks() == 10);
    }
    {
        KVCacheManager m = make_manager(11);
        Request r = make_request("r", range(0, 160));
        limits.reserved_blocks = -1;
        CHECK_THROWS_AS(m.allocate_slots(r, 64, 0, {}, 0, 0, false, limits), std::logic_error);
    }
}

TEST_CASE("watermark applies to WAITING/PREEMPTED admissions with something scheduled",
          "[kv_cache_manager]") {
    AdmissionLimits limits;
    limits.watermark_blocks = 2;
    {
        KVCacheManager m = make_manager(11);
        Request r = make_request("r", range(0, 144));  // 9 blocks + 2 watermark > 10
        CHECK_FALSE(m.allocate_slots(r, 144, 0, {}, 0, 0, false, limits).has_value());
        r.status = RequestStatus::preempted;
        CHECK_FALSE(m.allocate_slots(r, 144, 0, {}, 0, 0, false, limits).has_value());
        r.status = RequestStatus::running;  // running requests are exempt
        CHECK(m.allocate_slots(r, 144, 0, {}, 0, 0, false, limits).has_value());
    }
    {
        KVCacheManager m = make_manager(11);
        Request r = make_request("r", range(0, 144));
        limits.has_scheduled_reqs = false;  // nothing running: no watermark
        CHECK(m.allocate_slots(r, 144, 0, {}, 0, 0, false, limits).has_value());
        CHECK(m.block_pool().num_free_blocks() == 1);
    }
}

TEST_CASE("a tracked request gets no blocks for external tokens (upstream fast path)",
          "[kv_cache_manager]") {
    KVCacheManager m = make_manager(11);
    Request r = make_request("r", range(0, 64));
    CHECK(m.allocate_slots(r, 16) == Ids{1});  // one full block cached: r is now tracked
    r.num_computed_tokens = 16;
    // ext 16 with a tracked request: allocate_new_computed_blocks returns early; allocate_new_blocks
    // still covers all slots: ceil((16 + 16 + 16) / 16) = 3 -> 2 new.
    CHECK(m.allocate_slots(r, 16, 0, {}, 0, 16) == Ids{2, 3});
    CHECK(m.get_block_ids("r") == Ids{1, 2, 3});
}
