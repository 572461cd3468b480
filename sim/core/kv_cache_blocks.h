#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "sim/core/request.h"

namespace kvsim {

// Block ids per KV-cache group. An empty outer vector is upstream's `()`.
using GroupBlockIds = std::vector<std::vector<BlockId>>;
// The same, viewed in place: a GroupBlockIds, or one group's list standing for the single group.
using GroupBlockSpan = std::span<const std::vector<BlockId>>;

// vllm/v1/core/kv_cache_manager.py KVCacheBlocks (get_block_ids / get_unhashed_block_ids) @ ace980e6de0540f49b0c63248437a1a7807590c1
struct KVCacheBlocks {
    GroupBlockIds block_ids;
    GroupBlockIds unhashed_block_ids;

    static KVCacheBlocks empty(std::size_t num_groups) {
        return {.block_ids = GroupBlockIds(num_groups), .unhashed_block_ids = GroupBlockIds(num_groups)};
    }
};

}  // namespace kvsim
