#include "sim/core/kv_cache_manager.h"

#include "sim/common/model_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace kvsim {
namespace {

constexpr ModelCheck require{.component = "KVCacheManager"};

// vllm/utils/math_utils.py cdiv, for a >= 0 and b > 0.
constexpr int cdiv(int a, int b) { return (a + b - 1) / b; }
static_assert(cdiv(0, 16) == 0 && cdiv(1, 16) == 1 && cdiv(16, 16) == 1 && cdiv(17, 16) == 2);

}  // namespace

// vllm/v1/core/kv_cache_manager.py KVCacheManager.__init__ @ ace980e6de0540f49b0c63248437a1a7807590c1
KVCacheManager::KVCacheManager(std::uint32_t num_blocks, int block_size, int max_model_len, bool enable_caching,
                               FreeOrder free_order)
    : pool_(num_blocks, enable_caching, free_order),
      block_size_(block_size),
      max_model_len_(max_model_len),
      enable_caching_(enable_caching) {
    require(block_size_ > 0, "block_size must be positive, got {}", block_size_);
    require(max_model_len_ > 0, "max_model_len must be positive, got {}", max_model_len_);
}

// vllm/v1/core/kv_cache_manager.py KVCacheManager.get_computed_blocks @ ace980e6de0540f49b0c63248437a1a7807590c1
// with single_type_kv_cache_manager.py FullAttentionManager.find_longest_cache_hit @ 129ab7c60cbb8eb11e875373e67f7e521b74aa30
ComputedBlocks KVCacheManager::get_computed_blocks(const Request& request) const {
    if (!enable_caching_) return {};
    // islice(block_hashes, (num_tokens - 1) // block_size) raises on a negative stop.
    require(request.num_tokens() >= 1, "{}: get_computed_blocks on a request without tokens", request.id());
    const int max_cache_hit_length = request.num_tokens() - 1;
    const auto max_num_blocks = static_cast<std::size_t>(max_cache_hit_length / block_size_);
    const auto& hashes = request.block_hashes();
    ComputedBlocks out;
    for (std::size_t i = 0; i < std::min(max_num_blocks, hashes.size()); ++i) {
        const auto hit = pool_.get_cached_block(hashes[i]);
        if (!hit) break;
        out.blocks.push_back(*hit);
    }
    out.num_tokens = static_cast<int>(out.blocks.size()) * block_size_;
    return out;
}

// vllm/v1/core/single_type_kv_cache_manager.py SingleTypeKVCacheManager.get_num_blocks_to_allocate
// @ 129ab7c60cbb8eb11e875373e67f7e521b74aa30 (full attention: nothing is skipped, and the v0.29
// apply_admission_cap has no cap for full attention).
int KVCacheManager::num_blocks_to_allocate(const std::string& request_id, int num_tokens,
                                           const std::vector<BlockId>& new_computed_blocks) const {
    const int num_required_blocks = cdiv(num_tokens, block_size_);
    const RequestEntries* entries = entries_of(request_id);
    const int num_req_blocks =
        entries == nullptr || entries->blocks == nullptr ? 0 : static_cast<int>(entries->blocks->size());
    if (entries != nullptr && entries->num_cached) {
        require(new_computed_blocks.empty(), "{}: a running request won't have any new prefix-cache hits",
                request_id);
        return std::max(num_required_blocks - num_req_blocks, 0);
    }
    const int num_local_computed_blocks = static_cast<int>(new_computed_blocks.size()) + num_req_blocks;
    const int num_new_blocks = std::max(num_required_blocks - num_local_computed_blocks, 0);
    // A hit sitting in the free queue is taken out of it by touch(), consuming free capacity.
    const auto num_evictable = std::count_if(new_computed_blocks.begin(), new_computed_blocks.end(), [&](BlockId b) {
        return pool_.block(b).ref_cnt == 0 && !pool_.block(b).is_null;
    });
    return num_new_blocks + static_cast<int>(num_evictable);
}

// vllm/v1/core/kv_cache_manager.py KVCacheManager.allocate_slots @ ace980e6de0540f49b0c63248437a1a7807590c1
// (+ the v0.29 admission arguments @ 003df2961dd8830c317a61f9745ccd557da9fa06) with the full-attention
// SingleTypeKVCacheManager allocate_new_computed_blocks / allocate_new_blocks / cache_blocks @ 129ab7c60cbb8eb11e875373e67f7e521b74aa30
std::optional<std::vector<BlockId>> KVCacheManager::allocate_slots(Request& request, int num_new_tokens,
                                                                   int num_new_computed_tokens,
                                                                   const std::vector<BlockId>& new_computed_blocks,
                                                                   int num_lookahead_tokens,
                                                                   int num_external_computed_tokens,
                                                                   bool delay_cache_blocks,
                                                                   const AdmissionLimits& limits) {
    const std::string& id = request.id();
    check_allocate_arguments(id, num_new_tokens, num_new_computed_tokens, new_computed_blocks, num_lookahead_tokens,
                             num_external_computed_tokens, limits);

    const int num_local_computed_tokens = request.num_computed_tokens + num_new_computed_tokens;
    const int total_computed_tokens =
        std::min(num_local_computed_tokens + num_external_computed_tokens, max_model_len_);
    const int num_free = static_cast<int>(pool_.num_free_blocks());

    int watermark_blocks = 0;
    if (limits.has_scheduled_reqs &&
        (request.status == RequestStatus::waiting || request.status == RequestStatus::preempted))
        watermark_blocks = limits.watermark_blocks;

    if (limits.full_sequence_must_fit) {
        const int full_num_tokens = std::min(request.num_tokens(), max_model_len_);
        if (num_blocks_to_allocate(id, full_num_tokens, new_computed_blocks) + watermark_blocks > num_free)
            return std::nullopt;
    }

    const int num_tokens_main_model = total_computed_tokens + num_new_tokens;
    const int num_tokens_need_slot = std::min(num_tokens_main_model + num_lookahead_tokens, max_model_len_);

    // remove_skipped_blocks is a no-op for full attention.
    const int needed = num_blocks_to_allocate(id, num_tokens_need_slot, new_computed_blocks);
    if (needed + watermark_blocks > num_free - limits.reserved_blocks) return std::nullopt;

    if (!new_computed_blocks.empty() || num_external_computed_tokens > 0)
        allocate_new_computed_blocks(id, new_computed_blocks, num_local_computed_tokens, num_external_computed_tokens);
    std::vector<BlockId> new_blocks = allocate_new_blocks(id, num_tokens_need_slot);

    if (!enable_caching_ || delay_cache_blocks) return new_blocks;

    // Only finalized tokens are cached: lookahead / draft slots beyond num_tokens are not.
    const int num_tokens_to_cache = std::min(total_computed_tokens + num_new_tokens, request.num_tokens());
    cache_blocks(request, num_tokens_to_cache);
    return new_blocks;
}

// KVCacheManager.allocate_slots @ ace980e6de0540f49b0c63248437a1a7807590c1: its argument checks
// (upstream raises ValueError for the first; the others are kvsim's own preconditions).
void KVCacheManager::check_allocate_arguments(const std::string& id, int num_new_tokens, int num_new_computed_tokens,
                                              const std::vector<BlockId>& new_computed_blocks,
                                              int num_lookahead_tokens, int num_external_computed_tokens,
                                              const AdmissionLimits& limits) const {
    require(num_new_tokens != 0 || num_external_computed_tokens != 0,
            "{}: num_new_tokens must be greater than 0 when there are no external computed tokens", id);
    require(num_new_tokens >= 0 && num_new_computed_tokens >= 0 && num_lookahead_tokens >= 0 &&
                num_external_computed_tokens >= 0,
            "{}: negative token count (new {}, new computed {}, lookahead {}, external {})", id, num_new_tokens,
            num_new_computed_tokens, num_lookahead_tokens, num_external_computed_tokens);
    require(num_new_computed_tokens == static_cast<int>(new_computed_blocks.size()) * block_size_,
            "{}: {} new computed tokens do not match {} hit blocks of {}", id, num_new_computed_tokens,
            new_computed_blocks.size(), block_size_);
    require(enable_caching_ || new_computed_blocks.empty(),
            "{}: Computed blocks should be empty when prefix caching is disabled", id);
    require(limits.reserved_blocks >= 0 && limits.watermark_blocks >= 0,
            "{}: negative admission limits (reserved {}, watermark {})", id, limits.reserved_blocks,
            limits.watermark_blocks);
}

// single_type_kv_cache_manager.py SingleTypeKVCacheManager.allocate_new_computed_blocks @ 129ab7c60cbb8eb11e875373e67f7e521b74aa30:
// a tracked request returns early, without blocks for its external tokens.
void KVCacheManager::allocate_new_computed_blocks(const std::string& id, const std::vector<BlockId>& new_computed_blocks,
                                                  int num_local_computed_tokens, int num_external_computed_tokens) {
    if (const RequestEntries* entries = entries_of(id); entries != nullptr && entries->num_cached) return;
    std::vector<BlockId>& req_blocks = table_for(id);
    require(req_blocks.empty(), "{}: a new request already holds {} blocks", id, req_blocks.size());
    if (enable_caching_) pool_.touch(new_computed_blocks);
    req_blocks.insert(req_blocks.end(), new_computed_blocks.begin(), new_computed_blocks.end());
    set_num_cached(id, static_cast<int>(req_blocks.size()));
    if (num_external_computed_tokens > 0) {
        // Upstream uses the uncapped local + external count here.
        const int n = cdiv(num_local_computed_tokens + num_external_computed_tokens, block_size_) -
                      static_cast<int>(req_blocks.size());
        require(n >= 0, "{}: {} blocks for external tokens", id, n);
        const auto ext_blocks = pool_.get_new_blocks(static_cast<std::uint32_t>(n));
        req_blocks.insert(req_blocks.end(), ext_blocks.begin(), ext_blocks.end());
    }
}

// single_type_kv_cache_manager.py SingleTypeKVCacheManager.allocate_new_blocks @ 129ab7c60cbb8eb11e875373e67f7e521b74aa30
// (req_to_blocks is a defaultdict: the entry appears).
std::vector<BlockId> KVCacheManager::allocate_new_blocks(const std::string& id, int num_tokens) {
    std::vector<BlockId>& req_blocks = table_for(id);
    std::vector<BlockId> new_blocks;
    const int num_new_blocks = cdiv(num_tokens, block_size_) - static_cast<int>(req_blocks.size());
    if (num_new_blocks > 0) {
        new_blocks = pool_.get_new_blocks(static_cast<std::uint32_t>(num_new_blocks));
        req_blocks.insert(req_blocks.end(), new_blocks.begin(), new_blocks.end());
    }
    return new_blocks;
}

// vllm/v1/core/kv_cache_manager.py KVCacheManager.free @ ace980e6de0540f49b0c63248437a1a7807590c1
// with single_type_kv_cache_manager.py SingleTypeKVCacheManager.free @ 129ab7c60cbb8eb11e875373e67f7e521b74aa30
void KVCacheManager::free(const Request& request) {
    pool_.free_blocks(take_blocks(request));
}

std::vector<BlockId> KVCacheManager::take_blocks(const Request& request) {
    std::vector<BlockId> ordered;
    const std::optional<RequestEntries> entries = index_.erase(request.id());
    if (!entries) return ordered;
    if (entries->blocks != nullptr) {
        ordered.assign(entries->blocks->rbegin(), entries->blocks->rend());
        req_to_blocks_.erase(request.id());
    }
    return ordered;
}

// vllm/v1/core/kv_cache_manager.py KVCacheManager.cache_blocks @ ace980e6de0540f49b0c63248437a1a7807590c1
// with single_type_kv_cache_manager.py SingleTypeKVCacheManager.cache_blocks @ 129ab7c60cbb8eb11e875373e67f7e521b74aa30
void KVCacheManager::cache_blocks(const Request& request, int num_computed_tokens) {
    if (!enable_caching_) return;
    // A negative count (AsyncScheduler passes num_computed_tokens - num_output_placeholders, below zero
    // when a failed load rewound a request that kept its placeholders, issue #45138) caches nothing:
    // upstream's floor division gives at most -1 full blocks, never above the cached count.
    if (num_computed_tokens < 0) return;
    const RequestEntries* entries = entries_of(request.id());
    const int num_cached_blocks = entries == nullptr ? 0 : entries->num_cached.value_or(0);
    const int num_full_blocks = num_computed_tokens / block_size_;
    if (num_cached_blocks >= num_full_blocks) return;
    pool_.cache_full_blocks(request.block_hashes(), table_for(request.id()), num_cached_blocks, num_full_blocks);
    set_num_cached(request.id(), num_full_blocks);
}

// vllm/v1/core/kv_cache_manager.py KVCacheManager.get_block_ids @ ace980e6de0540f49b0c63248437a1a7807590c1
const std::vector<BlockId>& KVCacheManager::get_block_ids(const std::string& request_id) const {
    static const std::vector<BlockId> kNone;
    const RequestEntries* entries = entries_of(request_id);
    return entries == nullptr || entries->blocks == nullptr ? kNone : *entries->blocks;
}

bool KVCacheManager::has_blocks(const std::string& request_id) const {
    const RequestEntries* entries = entries_of(request_id);
    return entries != nullptr && entries->blocks != nullptr;
}

const KVCacheManager::RequestEntries* KVCacheManager::entries_of(const std::string& id) const {
    return index_.find(id);
}

std::vector<BlockId>& KVCacheManager::table_for(const std::string& id) {
    RequestEntries& entries = index_[id];
    if (entries.blocks == nullptr) entries.blocks = &req_to_blocks_[id];
    return *entries.blocks;
}

void KVCacheManager::set_num_cached(const std::string& id, int num_cached_blocks) {
    index_[id].num_cached = num_cached_blocks;
}

}  // namespace kvsim
