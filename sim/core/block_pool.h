#pragma once
// vllm/v1/core/block_pool.py BlockPool @ c59cb7941357443da7c5eef75cfa8697d683d228
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "sim/core/free_block_queue.h"
#include "sim/core/request.h"
#include "sim/variant/variant.h"

namespace kvsim {

inline constexpr BlockId kNullBlockId = 0;

// The prefix cache (BlockHashToBlockMap): the blocks holding each hash, in insertion order. A hash has
// one block but for duplicates, so the first is kept inline (no allocation per cached block).
using HashHolders = boost::container::small_vector<BlockId, 1>;
using CachedBlocks = std::map<BlockHash, HashHolders>;

struct KVCacheBlock {
    BlockId id = 0;
    int ref_cnt = 0;
    std::optional<BlockHash> hash;
    bool is_null = false;
    // kvsim bookkeeping, not upstream: bumped each time get_new_blocks hands the block out,
    // i.e. each time new KV may be written into it. Checkers compare generations to tell
    // "still this request's KV" from "reused".
    std::uint64_t generation = 0;
};

class BlockPool {
public:
    BlockPool(std::uint32_t num_blocks, bool enable_caching, FreeOrder free_order);
    // A copy's record array would lose the reserved capacity that keeps references valid.
    BlockPool(const BlockPool&) = delete;
    BlockPool& operator=(const BlockPool&) = delete;
    BlockPool(BlockPool&&) = default;
    BlockPool& operator=(BlockPool&&) = default;

    std::uint32_t num_blocks() const { return free_queue_.num_blocks(); }
    // Blocks at or above this id have never been handed out or touched: ref_cnt 0, no hash,
    // generation 0, in the free queue's untouched run. Sweeps judge them in one go.
    std::uint32_t num_touched_blocks() const { return static_cast<std::uint32_t>(blocks_.size()); }
    std::uint32_t num_free_blocks() const { return free_queue_.size(); }
    bool caching_enabled() const { return enable_caching_; }
    // Any block of the pool; an untouched one gets its record here (references stay valid).
    const KVCacheBlock& block(BlockId id) const {
        if (id < blocks_.size()) [[likely]]
            return blocks_[id];
        return first_touch(id);
    }
    const FreeBlockQueue& free_queue() const { return free_queue_; }
    // hash -> block ids holding it, first inserted first (lookup returns the first).
    const CachedBlocks& cached_blocks() const { return cached_; }

    // BlockPool.get_cached_block @ c59cb7941357443da7c5eef75cfa8697d683d228
    std::optional<BlockId> get_cached_block(BlockHash hash) const;
    // BlockPool.get_new_blocks @ c59cb7941357443da7c5eef75cfa8697d683d228: pops from the head, evicting stale hashes now.
    std::vector<BlockId> get_new_blocks(std::uint32_t n);
    // BlockPool.touch @ c59cb7941357443da7c5eef75cfa8697d683d228
    void touch(const std::vector<BlockId>& ids);
    // BlockPool.free_blocks @ c59cb7941357443da7c5eef75cfa8697d683d228 (ordering per FreeOrder)
    void free_blocks(const std::vector<BlockId>& ordered_ids);
    // BlockPool.cache_full_blocks @ c59cb7941357443da7c5eef75cfa8697d683d228: hash blocks [num_cached, num_full) of a request.
    void cache_full_blocks(const std::vector<BlockHash>& request_hashes, const std::vector<BlockId>& blocks,
                           int num_cached_blocks, int num_full_blocks);
    // BlockPool.evict_blocks @ c59cb7941357443da7c5eef75cfa8697d683d228: drop hashes only.
    void evict_blocks(const std::vector<BlockId>& ids);
    // BlockPool.reset_prefix_cache @ c59cb7941357443da7c5eef75cfa8697d683d228
    bool reset_prefix_cache();

private:
    bool maybe_evict_cached_block(BlockId id);
    KVCacheBlock& at(BlockId id);

    // Blocks [0, num_touched_blocks()): a block's record is made when it is first used, as the free
    // queue links a block only when it first leaves. Capacity is the pool's from the start (address
    // space, no page touched), so a reference to a record survives the making of later ones.
    // block() for a block with no record yet (or outside the pool: the model check fails).
    const KVCacheBlock& first_touch(BlockId id) const;
    mutable std::vector<KVCacheBlock> blocks_;
    FreeBlockQueue free_queue_;
    RepeatCheck repeat_check_;  // free_blocks: no block twice in one call
    CachedBlocks cached_;
    bool enable_caching_;
    FreeOrder free_order_;
};

}  // namespace kvsim
