#include "sim/core/block_pool.h"

#include "sim/common/model_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace kvsim {
namespace {

constexpr ModelCheck require{.component = "BlockPool"};

}  // namespace

// vllm/v1/core/block_pool.py BlockPool.__init__ @ c59cb7941357443da7c5eef75cfa8697d683d228
BlockPool::BlockPool(std::uint32_t num_blocks, bool enable_caching, FreeOrder free_order)
    : free_queue_(num_blocks), enable_caching_(enable_caching), free_order_(free_order) {
    require(num_blocks > 0, "num_gpu_blocks must be positive");
    blocks_.reserve(num_blocks);
    const BlockId null_id = free_queue_.popleft();
    require(null_id == kNullBlockId, "the null block must be block {}, got {}", kNullBlockId, null_id);
    at(null_id).is_null = true;
}

const KVCacheBlock& BlockPool::first_touch(BlockId id) const {
    require(id < num_blocks(), "block {} is outside the pool of {} blocks", id, num_blocks());
    while (blocks_.size() <= id) {
        KVCacheBlock untouched;
        untouched.id = static_cast<BlockId>(blocks_.size());
        blocks_.push_back(untouched);
    }
    return blocks_[id];
}

KVCacheBlock& BlockPool::at(BlockId id) { return const_cast<KVCacheBlock&>(std::as_const(*this).block(id)); }

// vllm/v1/core/block_pool.py BlockPool.get_cached_block @ c59cb7941357443da7c5eef75cfa8697d683d228
// (one group): the first inserted block still holding the hash.
std::optional<BlockId> BlockPool::get_cached_block(BlockHash hash) const {
    const auto it = cached_.find(hash);
    if (it == cached_.end()) return std::nullopt;
    require(!it->second.empty(), "hash {:#x} maps to no block", hash);
    return it->second.front();
}

// vllm/v1/core/block_pool.py BlockPool.get_new_blocks @ c59cb7941357443da7c5eef75cfa8697d683d228
std::vector<BlockId> BlockPool::get_new_blocks(std::uint32_t n) {
    require(n <= num_free_blocks(), "Cannot get {} free blocks from the pool ({} free)", n, num_free_blocks());
    std::vector<BlockId> ret = free_queue_.popleft_n(n);
    for (BlockId id : ret) {
        if (enable_caching_) maybe_evict_cached_block(id);
        KVCacheBlock& b = at(id);
        require(b.ref_cnt == 0, "block {} came off the free queue with ref_cnt {}", id, b.ref_cnt);
        require(!b.is_null, "the null block came off the free queue");
        b.ref_cnt = 1;
        ++b.generation;
    }
    return ret;
}

// vllm/v1/core/block_pool.py BlockPool._maybe_evict_cached_block @ c59cb7941357443da7c5eef75cfa8697d683d228
bool BlockPool::maybe_evict_cached_block(BlockId id) {
    KVCacheBlock& b = at(id);
    if (!b.hash) return false;
    // BlockHashToBlockMap.pop: only an entry holding this very block id is removed.
    const auto it = cached_.find(*b.hash);
    if (it == cached_.end()) return false;
    auto& holders = it->second;
    const auto pos = std::find(holders.begin(), holders.end(), id);
    if (pos == holders.end()) return false;
    holders.erase(pos);
    if (holders.empty()) cached_.erase(it);
    b.hash.reset();
    return true;
}

// vllm/v1/core/block_pool.py BlockPool.touch @ c59cb7941357443da7c5eef75cfa8697d683d228
void BlockPool::touch(const std::vector<BlockId>& ids) {
    for (BlockId id : ids) {
        KVCacheBlock& b = at(id);
        require(b.is_null || b.ref_cnt >= 0, "block {} has negative ref_cnt {}", id, b.ref_cnt);
        if (b.ref_cnt == 0 && !b.is_null) {
            free_queue_.remove(id);
        } else {
            require(b.is_null || !free_queue_.contains(id), "block {} with ref_cnt {} sits in the free queue", id,
                    b.ref_cnt);
        }
        ++b.ref_cnt;
    }
}

// vllm/v1/core/block_pool.py BlockPool.free_blocks @ c59cb7941357443da7c5eef75cfa8697d683d228
// (+ #48017 / #51482 for caching off, per FreeOrder)
void BlockPool::free_blocks(const std::vector<BlockId>& ordered_ids) {
    for (BlockId id : ordered_ids) {
        const KVCacheBlock& b = at(id);
        if (b.is_null) continue;
        require(b.ref_cnt >= 1, "block {} freed with ref_cnt {}", id, b.ref_cnt);
        require(!free_queue_.contains(id), "block {} freed while already in the free queue", id);
    }
    // only block 0 is the null block (BlockPoolChecker's null_block), which a table may hold more than once
    const std::optional<BlockId> twice = repeat_check_.first_repeat(ordered_ids, kNullBlockId);
    require(!twice, "block {} appears twice in one free_blocks call", twice.value_or(0));
    for (BlockId id : ordered_ids) --at(id).ref_cnt;

    std::vector<BlockId> freeable;
    for (BlockId id : ordered_ids)
        if (blocks_[id].ref_cnt == 0 && !blocks_[id].is_null) freeable.push_back(id);

    const bool split = free_order_ != FreeOrder::append_all && enable_caching_;
    if (!split) {
        if (free_order_ == FreeOrder::fresh_head_lifo) free_queue_.prepend_n(freeable);
        else free_queue_.append_n(freeable);
        return;
    }
    std::vector<BlockId> fresh;
    std::vector<BlockId> hashed;
    for (BlockId id : freeable) (blocks_[id].hash ? hashed : fresh).push_back(id);
    free_queue_.prepend_n(fresh);
    free_queue_.append_n(hashed);
}

// vllm/v1/core/block_pool.py BlockPool.cache_full_blocks @ c59cb7941357443da7c5eef75cfa8697d683d228
// (one group, block_size == hash_block_size)
void BlockPool::cache_full_blocks(const std::vector<BlockHash>& request_hashes, const std::vector<BlockId>& blocks,
                                  int num_cached_blocks, int num_full_blocks) {
    require(enable_caching_, "cache_full_blocks called with prefix caching disabled");
    require(num_cached_blocks >= 0, "num_cached_blocks {} is negative", num_cached_blocks);
    if (num_cached_blocks >= num_full_blocks) return;
    const auto first = static_cast<std::size_t>(num_cached_blocks);
    const auto last = static_cast<std::size_t>(num_full_blocks);
    require(request_hashes.size() >= last, "request has {} block hashes, {} full blocks requested",
            request_hashes.size(), last);
    require(blocks.size() >= last, "request holds {} blocks, {} full blocks requested", blocks.size(), last);
    for (std::size_t i = first; i < last; ++i) {
        KVCacheBlock& b = at(blocks[i]);
        if (b.is_null) continue;
        require(b.ref_cnt >= 1, "block {} is cached while free (ref_cnt {})", b.id, b.ref_cnt);
        if (b.hash) {
            require(*b.hash == request_hashes[i], "Cached block has wrong hash: {:#x} != {:#x} (block {})", *b.hash,
                    request_hashes[i], b.id);
            continue;
        }
        auto& holders = cached_[request_hashes[i]];
        require(std::find(holders.begin(), holders.end(), b.id) == holders.end(),
                "block {} is unhashed but listed under hash {:#x}", b.id, request_hashes[i]);
        b.hash = request_hashes[i];
        holders.push_back(b.id);
    }
}

// vllm/v1/core/block_pool.py BlockPool.evict_blocks @ c59cb7941357443da7c5eef75cfa8697d683d228
void BlockPool::evict_blocks(const std::vector<BlockId>& ids) {
    for (BlockId id : ids) {
        require(id < num_blocks(), "Invalid block_id {} >= {}", id, num_blocks());
        maybe_evict_cached_block(id);
    }
}

// vllm/v1/core/block_pool.py BlockPool.reset_prefix_cache @ c59cb7941357443da7c5eef75cfa8697d683d228
bool BlockPool::reset_prefix_cache() {
    const std::uint32_t num_used = num_blocks() - num_free_blocks();
    require(num_used >= 1, "the null block must always count as used");
    if (num_used != 1) return false;
    cached_.clear();
    for (KVCacheBlock& b : blocks_) b.hash.reset();
    return true;
}

}  // namespace kvsim
