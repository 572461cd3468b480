#pragma once
// vllm/v1/core/kv_cache_manager.py KVCacheManager @ ace980e6de0540f49b0c63248437a1a7807590c1
// with single_type_kv_cache_manager.py FullAttentionManager @ 129ab7c60cbb8eb11e875373e67f7e521b74aa30
// One KV-cache group, full attention.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/common/ordered_map.h"
#include "sim/core/block_pool.h"
#include "sim/core/request.h"

namespace kvsim {

struct ComputedBlocks {
    std::vector<BlockId> blocks;
    int num_tokens = 0;
};

// Admission arguments of the v0.29-era allocate_slots (kv_cache_manager.py @
// 003df2961dd8830c317a61f9745ccd557da9fa06; PR #44594 watermark). The defaults reproduce ace980e6de0540f49b0c63248437a1a7807590c1 exactly.
struct AdmissionLimits {
    bool full_sequence_must_fit = false;  // the whole min(num_tokens, max_model_len) must fit first
    int reserved_blocks = 0;              // kept free for in-flight prefills (not applied to the full check)
    bool has_scheduled_reqs = true;       // the watermark applies only when something already runs
    int watermark_blocks = 0;             // int(watermark * num_blocks); WAITING/PREEMPTED requests only
};

class KVCacheManager {
public:
    KVCacheManager(std::uint32_t num_blocks, int block_size, int max_model_len, bool enable_caching,
                   FreeOrder free_order);
    // The index points into req_to_blocks_: a copy would point into the original's. Moves keep map nodes.
    KVCacheManager(const KVCacheManager&) = delete;
    KVCacheManager& operator=(const KVCacheManager&) = delete;
    KVCacheManager(KVCacheManager&&) = default;
    KVCacheManager& operator=(KVCacheManager&&) = default;

    BlockPool& block_pool() { return pool_; }
    const BlockPool& block_pool() const { return pool_; }
    int block_size() const { return block_size_; }

    // KVCacheManager.get_computed_blocks @ ace980e6de0540f49b0c63248437a1a7807590c1: full blocks only, never the last token.
    ComputedBlocks get_computed_blocks(const Request& request) const;

    // KVCacheManager.allocate_slots @ ace980e6de0540f49b0c63248437a1a7807590c1. Returns the newly allocated blocks
    // (not hits, not external-token blocks), or nullopt when there is not enough room.
    std::optional<std::vector<BlockId>> allocate_slots(Request& request, int num_new_tokens,
                                                       int num_new_computed_tokens = 0,
                                                       const std::vector<BlockId>& new_computed_blocks = {},
                                                       int num_lookahead_tokens = 0,
                                                       int num_external_computed_tokens = 0,
                                                       bool delay_cache_blocks = false,
                                                       const AdmissionLimits& limits = {});

    // KVCacheManager.free @ ace980e6de0540f49b0c63248437a1a7807590c1: the request's blocks, tail first.
    void free(const Request& request);
    // The bookkeeping half of free: the request's blocks leave its table, tail first, still referenced
    // (#45357's deferred free); the pool gets them later through BlockPool::free_blocks.
    std::vector<BlockId> take_blocks(const Request& request);

    // KVCacheManager.cache_blocks @ ace980e6de0540f49b0c63248437a1a7807590c1: hash full blocks up to num_computed_tokens.
    void cache_blocks(const Request& request, int num_computed_tokens);

    // KVCacheManager.evict_blocks, as vllm/v1/core/sched/scheduler.py Scheduler._handle_invalid_blocks
    // @ 003df2961dd8830c317a61f9745ccd557da9fa06 calls it: drops the blocks' hashes (BlockPool.evict_blocks).
    void evict_blocks(const std::vector<BlockId>& ids) { pool_.evict_blocks(ids); }

    // KVCacheManager.get_block_ids @ ace980e6de0540f49b0c63248437a1a7807590c1 (one group). The table
    // itself (empty for a request without blocks): valid until the request's blocks next change.
    const std::vector<BlockId>& get_block_ids(const std::string& request_id) const;
    bool has_blocks(const std::string& request_id) const;
    // SingleTypeKVCacheManager.get_num_blocks_to_allocate @ 129ab7c60cbb8eb11e875373e67f7e521b74aa30 (full attention).
    int num_blocks_to_allocate(const std::string& request_id, int num_tokens,
                               const std::vector<BlockId>& new_computed_blocks) const;

    // Every request id holding blocks, sorted (for checkers).
    const std::map<std::string, std::vector<BlockId>>& all_request_blocks() const { return req_to_blocks_; }

private:
    void check_allocate_arguments(const std::string& id, int num_new_tokens, int num_new_computed_tokens,
                                  const std::vector<BlockId>& new_computed_blocks, int num_lookahead_tokens,
                                  int num_external_computed_tokens, const AdmissionLimits& limits) const;
    // SingleTypeKVCacheManager.allocate_new_computed_blocks / allocate_new_blocks @ 129ab7c60cbb8eb11e875373e67f7e521b74aa30
    void allocate_new_computed_blocks(const std::string& id, const std::vector<BlockId>& new_computed_blocks,
                                      int num_local_computed_tokens, int num_external_computed_tokens);
    std::vector<BlockId> allocate_new_blocks(const std::string& id, int num_tokens);

    // One request's entries in upstream's two dicts: its req_to_blocks table (null where it has none)
    // and its num_cached_block count (absent where untracked).
    struct RequestEntries {
        std::vector<BlockId>* blocks = nullptr;
        std::optional<int> num_cached;
    };
    const RequestEntries* entries_of(const std::string& id) const;
    std::vector<BlockId>& table_for(const std::string& id);  // req_to_blocks[id]: a defaultdict's entry appears
    void set_num_cached(const std::string& id, int num_cached_blocks);

    BlockPool pool_;
    int block_size_;
    int max_model_len_;
    bool enable_caching_;
    // req_to_blocks, sorted by id for the checkers (all_request_blocks); num_cached_block, never
    // iterated, lives in index_ itself. Every lookup goes through index_, one flat-hash probe per
    // access instead of a tree walk of string compares; map nodes do not move, so its pointers hold
    // until the entry is erased. index_ is never iterated.
    std::map<std::string, std::vector<BlockId>> req_to_blocks_;
    OrderedMap<RequestEntries> index_;
};

}  // namespace kvsim
