#include "properties/checkers/worker_access_checker.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/core/scheduler.h"
#include "sim/engine/event_log.h"

namespace kvsim {

void WorkerAccessChecker::save_emitted(const SaveJob& job) {
    const KVCacheManager& kvm = scheduler_.kv_cache_manager();
    const std::string job_name = job.job_id >= 0 ? fmt::format("store job {}", job.job_id) : "store job";
    const bool request_alive = scheduler_.requests().contains(job.req_id);
    if (!request_alive || !kvm.has_blocks(job.req_id)) {
        violations_.push_back({"save_without_current_table", job.req_id, {},
                               fmt::format("{} saves tokens [{}, {}) for a request the core holds no block table for",
                                           job_name, job.token_start, job.token_end)});
        return;
    }
    const auto table = kvm.get_block_ids(job.req_id);
    std::vector<BlockId> foreign;
    for (const auto& group : job.block_ids)
        for (BlockId b : group)
            if (b != kNullBlockId && std::find(table.begin(), table.end(), b) == table.end()) foreign.push_back(b);
    if (!foreign.empty())
        violations_.push_back({"save_block_not_in_snapshot", job.req_id, foreign,
                               fmt::format("{} names blocks outside the request's current table {}", job_name,
                                           format_blocks(table))});
    const int block_size = kvm.block_size();
    const std::size_t needed = static_cast<std::size_t>((job.token_end + block_size - 1) / block_size);
    const std::size_t named = job.block_ids.empty() ? 0 : job.block_ids.front().size();
    if (named < needed)
        violations_.push_back({"save_tokens_without_blocks", job.req_id, {},
                               fmt::format("{} writes {} tokens but names {} block(s) in {} group(s)", job_name,
                                           job.token_end, named, job.block_ids.size())});
}

bool WorkerAccessChecker::holds_request_kv(const std::string& req_id, std::size_t index, BlockId block,
                                           const std::vector<BlockHash>& hashes) const {
    const KVCacheManager& kvm = scheduler_.kv_cache_manager();
    const KVCacheBlock& b = kvm.block_pool().block(block);
    if (b.ref_cnt <= 0) return false;  // freed: anything may be written into it next
    if (scheduler_.requests().contains(req_id)) {
        const auto table = kvm.get_block_ids(req_id);
        if (index < table.size() && table[index] == block) return true;
    }
    // A pinned or shared prefix block still carrying this request's hash at that position.
    return index < hashes.size() && b.hash && *b.hash == hashes[index];
}

void WorkerAccessChecker::check_read(const std::string& what, const std::string& req_id,
                                     const std::vector<BlockId>& blocks, std::size_t first_index,
                                     const std::vector<BlockHash>& hashes) {
    const BlockPool& pool = scheduler_.kv_cache_manager().block_pool();
    std::vector<BlockId> freed, foreign;
    for (std::size_t i = first_index; i < blocks.size(); ++i) {
        const BlockId b = blocks[i];
        if (b == kNullBlockId || holds_request_kv(req_id, i, b, hashes)) continue;
        (pool.block(b).ref_cnt <= 0 ? freed : foreign).push_back(b);
    }
    if (!freed.empty())
        violations_.push_back({"read_freed_block", req_id, freed, fmt::format("{} reads blocks that were freed", what)});
    if (!foreign.empty())
        violations_.push_back(
            {"read_foreign_block", req_id, foreign, fmt::format("{} reads blocks now holding other KV", what)});
}

void WorkerAccessChecker::save_read(const SaveJob& job, int rank) {
    if (job.block_ids.empty()) return;  // nothing named; save_emitted already judged it
    const int block_size = scheduler_.kv_cache_manager().block_size();
    const auto& blocks = job.block_ids.front();
    const auto first = static_cast<std::size_t>(job.token_start / block_size);
    const auto end = std::min(blocks.size(), static_cast<std::size_t>((job.token_end + block_size - 1) / block_size));
    const std::vector<BlockId> read(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(std::max(first, end)));
    check_read(fmt::format("rank {} of store job {}", rank, job.job_id), job.req_id, read, first, job.block_hashes);
}

void WorkerAccessChecker::send_read(const std::string& req_id, const std::vector<BlockId>& blocks) {
    const auto* slot = scheduler_.requests().find(req_id);
    if (slot == nullptr) {
        violations_.push_back({"read_freed_block", req_id, blocks, "p2p send after the request's blocks were freed"});
        return;
    }
    const auto table = scheduler_.kv_cache_manager().get_block_ids(req_id);
    std::vector<BlockId> foreign;
    for (BlockId b : blocks)
        if (std::find(table.begin(), table.end(), b) == table.end()) foreign.push_back(b);
    if (!foreign.empty())
        violations_.push_back({"read_foreign_block", req_id, foreign, "p2p send reads blocks the request does not hold"});
}

void WorkerAccessChecker::load_written(const std::string& req_id, const std::vector<BlockId>& blocks,
                                       std::string_view source) {
    const auto* slot = scheduler_.requests().find(req_id);
    const auto table = slot != nullptr ? scheduler_.kv_cache_manager().get_block_ids(req_id) : std::vector<BlockId>{};
    std::vector<BlockId> foreign;
    for (BlockId b : blocks)
        if (b != kNullBlockId && std::find(table.begin(), table.end(), b) == table.end()) foreign.push_back(b);
    if (!foreign.empty())
        violations_.push_back({"load_into_foreign_block", req_id, foreign,
                               fmt::format("{} load writes into blocks the request does not own", source)});
}

std::vector<Violation> WorkerAccessChecker::take_violations() {
    std::vector<Violation> out;
    out.swap(violations_);
    return out;
}

}  // namespace kvsim
