// Ports of tests/v1/core/test_prefix_caching.py @ 003df2961dd8830c317a61f9745ccd557da9fa06 with upstream's values,
// on the modelled KVCacheManager (one full-attention group, block size 16).
#include <catch2/catch.hpp>

#include <set>
#include <vector>

#include "sim/core/kv_cache_manager.h"

using namespace kvsim;
using Ids = std::vector<BlockId>;

namespace {

std::vector<TokenId> repeated(const std::vector<TokenId>& tokens, int times) {
    std::vector<TokenId> out;
    for (int i = 0; i < times; ++i) out.insert(out.end(), tokens.begin(), tokens.end());
    return out;
}

// 16 x 0, 16 x 1, 16 x 2: three full blocks.
std::vector<TokenId> common48() {
    std::vector<TokenId> out;
    for (TokenId t = 0; t < 3; ++t) out.insert(out.end(), 16, t);
    return out;
}

Request make_request(const std::string& id, std::vector<TokenId> prompt) {
    return Request(id, std::move(prompt), 17, 16, 0, KvTransferParams{});
}

std::set<int> ref_counts(const KVCacheManager& m, Ids::const_iterator from, Ids::const_iterator to) {
    std::set<int> out;
    for (auto it = from; it != to; ++it) out.insert(m.block_pool().block(*it).ref_cnt);
    return out;
}

}  // namespace

TEST_CASE("prefix caching: a request whose hits fit but whose new blocks do not leaves the hits untouched",
          "[kv_cache_manager][upstream:test_prefix_caching.py::test_prefill_not_enough_free_blocks_with_computed_blocks]") {
    KVCacheManager m(11, 16, 8192, true, FreeOrder::fresh_head);
    const auto common = common48();

    Request req0 = make_request("0", common);
    ComputedBlocks hit = m.get_computed_blocks(req0);
    CHECK(hit.blocks.empty());
    CHECK(hit.num_tokens == 0);
    m.allocate_slots(req0, 48, hit.num_tokens, hit.blocks);
    const Ids part0 = m.get_block_ids("0");

    Request req1 = make_request("1", repeated(common, 2));
    hit = m.get_computed_blocks(req1);
    CHECK(hit.blocks == part0);
    CHECK(hit.num_tokens == 3 * 16);
    m.allocate_slots(req1, 48, hit.num_tokens, hit.blocks);
    const Ids part1 = m.get_block_ids("1");
    m.free(req1);
    CHECK(ref_counts(m, part1.begin(), part1.begin() + 3) == std::set<int>{1});
    CHECK(ref_counts(m, part1.begin() + 3, part1.end()) == std::set<int>{0});

    Request req2 = make_request("2", std::vector<TokenId>(32, 7));
    hit = m.get_computed_blocks(req2);
    CHECK(hit.blocks.empty());
    CHECK(hit.num_tokens == 0);
    m.allocate_slots(req2, 32, hit.num_tokens, hit.blocks);

    // req3 is req1 plus three new blocks: six blocks are hits but two free blocks cannot hold three new ones.
    CHECK(m.block_pool().num_free_blocks() == 5);
    Request req3 = make_request("3", repeated(common, 3));
    hit = m.get_computed_blocks(req3);
    CHECK(hit.blocks == part1);
    CHECK(hit.num_tokens == 6 * 16);
    CHECK_FALSE(m.allocate_slots(req3, 48, hit.num_tokens, hit.blocks).has_value());
    CHECK(ref_counts(m, part1.begin(), part1.begin() + 3) == std::set<int>{1});
    CHECK(ref_counts(m, part1.begin() + 3, part1.end()) == std::set<int>{0});
}

// Partial: prompt logprobs are not modelled. Requests #0 and #1 are ported (a prompt-logprobs request
// that misses allocates and caches as any other); request #2, a prompt-logprobs request that skips the
// prefix cache, is not.
TEST_CASE("prefix caching: a miss caches its full blocks, a hit shares them, frees keep the eviction order",
          "[kv_cache_manager][upstream:test_prefix_caching.py::test_prefill_plp]") {
    KVCacheManager m(11, 16, 8192, true, FreeOrder::fresh_head);
    std::vector<TokenId> prompt0 = common48();
    prompt0.insert(prompt0.end(), 7, 3);

    Request req0 = make_request("0", prompt0);
    ComputedBlocks hit = m.get_computed_blocks(req0);
    CHECK(req0.block_hashes().size() == 3);
    CHECK(hit.blocks.empty());
    CHECK(hit.num_tokens == 0);
    REQUIRE(m.allocate_slots(req0, 55, hit.num_tokens, hit.blocks).has_value());
    CHECK(m.get_block_ids("0") == Ids{1, 2, 3, 4});
    for (BlockId b : {1, 2, 3}) {
        INFO("block " << b);
        REQUIRE(m.block_pool().block(b).hash.has_value());
        CHECK(*m.block_pool().block(b).hash == req0.block_hashes().at(static_cast<std::size_t>(b - 1)));
        CHECK(m.block_pool().block(b).ref_cnt == 1);
    }
    CHECK_FALSE(m.block_pool().block(4).hash.has_value());
    CHECK(m.block_pool().block(4).ref_cnt == 1);

    std::vector<TokenId> prompt1 = common48();
    prompt1.insert(prompt1.end(), 5, 3);
    Request req1 = make_request("1", prompt1);
    hit = m.get_computed_blocks(req1);
    CHECK(req1.block_hashes().size() == 3);
    CHECK(hit.blocks == Ids{1, 2, 3});
    CHECK(hit.num_tokens == 3 * 16);
    const auto new_blocks = m.allocate_slots(req1, 53 - 3 * 16, hit.num_tokens, hit.blocks);
    REQUIRE(new_blocks.has_value());
    CHECK(*new_blocks == Ids{5});
    CHECK(ref_counts(m, hit.blocks.begin(), hit.blocks.end()) == std::set<int>{2});
    CHECK(m.block_pool().num_free_blocks() == 5);

    m.free(req0);
    m.free(req1);
    CHECK(m.block_pool().num_free_blocks() == 10);
    CHECK(m.block_pool().free_queue().to_vector() == Ids{5, 4, 6, 7, 8, 9, 10, 3, 2, 1});
}
