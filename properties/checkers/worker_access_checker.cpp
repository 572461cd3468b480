#include "properties/checkers/worker_access_checker.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/core/sched/scheduler.h"
#include "sim/common/event_log.h"

namespace kvsim {
namespace {

// Appends to `outside` the non-null blocks of `blocks` that `table` does not hold.
void append_outside_table(const std::vector<BlockId>& table, const std::vector<BlockId>& blocks,
                          std::vector<BlockId>& outside) {
    // the usual job names a prefix of the table, in its order
    if (blocks.size() <= table.size() && std::equal(blocks.begin(), blocks.end(), table.begin())) return;
    for (BlockId b : blocks)
        if (b != kNullBlockId && std::find(table.begin(), table.end(), b) == table.end()) outside.push_back(b);
}

std::vector<BlockId> outside_table(const std::vector<BlockId>& table, const std::vector<BlockId>& blocks) {
    std::vector<BlockId> outside;
    append_outside_table(table, blocks, outside);
    return outside;
}

// A violation about one store save job: its request, job id (when it has one) and token range.
Violation store_violation(std::string invariant, const SaveJob& job, std::vector<BlockId> blocks, std::string detail) {
    return {.invariant = std::move(invariant),
            .request = job.req_id,
            .blocks = std::move(blocks),
            .detail = std::move(detail),
            .connector = "store",
            .job = job.job_id >= 0 ? std::optional(job.job_id) : std::nullopt,
            .tokens = TokenRange{.start = job.token_start, .end = job.token_end}};
}

// How a message names the job; formatted only for a violation (a check that holds formats nothing).
std::string job_name(const SaveJob& job) {
    return job.job_id >= 0 ? fmt::format("store job {}", job.job_id) : "store job";
}

}  // namespace

void WorkerAccessChecker::save_emitted(const SaveJob& job) {
    const KVCacheManager& kvm = scheduler_.kv_cache_manager();
    const bool request_alive = scheduler_.requests().contains(job.req_id);
    if (!request_alive || !kvm.has_blocks(job.req_id)) {
        violations_.push_back(store_violation(
            "save_without_current_table", job, {},
            fmt::format("{} saves tokens [{}, {}) for a request the core holds no block table for", job_name(job),
                        job.token_start, job.token_end)));
        return;
    }
    const auto& table = kvm.get_block_ids(job.req_id);
    auto& generations = emitted_generations_[key_of(job)];
    generations.clear();
    if (!job.block_ids.empty()) {
        generations.reserve(job.block_ids.front().size());
        for (BlockId b : job.block_ids.front()) generations.push_back(kvm.block_pool().block(b).generation);
    }
    std::vector<BlockId> foreign;
    for (const auto& group : job.block_ids)
        append_outside_table(table, group, foreign);
    if (!foreign.empty())
        violations_.push_back(store_violation(
            "save_block_not_in_snapshot", job, foreign,
            fmt::format("{} names blocks outside the request's current table {}", job_name(job), format_blocks(table))));
    const int block_size = kvm.block_size();
    const std::size_t needed = static_cast<std::size_t>((job.token_end + block_size - 1) / block_size);
    const std::size_t named = job.block_ids.empty() ? 0 : job.block_ids.front().size();
    if (named < needed)
        violations_.push_back(store_violation("save_tokens_without_blocks", job, {},
                                              fmt::format("{} writes {} tokens but names {} block(s) in {} group(s)",
                                                          job_name(job), job.token_end, named, job.block_ids.size())));
}

void WorkerAccessChecker::save_read(const SaveJob& job, int rank) {
    if (job.block_ids.empty()) return;  // nothing named; save_emitted already judged it
    const KVCacheManager& kvm = scheduler_.kv_cache_manager();
    const BlockPool& pool = kvm.block_pool();
    const int block_size = kvm.block_size();
    const auto& blocks = job.block_ids.front();
    const auto first = static_cast<std::size_t>(job.token_start / block_size);
    const auto end = std::min(blocks.size(), static_cast<std::size_t>((job.token_end + block_size - 1) / block_size));
    const auto emitted = emitted_generations_.find(key_of(job));
    std::vector<BlockId> freed, foreign;
    for (std::size_t i = first; i < end; ++i) {
        const BlockId b = blocks[i];
        if (b == kNullBlockId) continue;
        const KVCacheBlock& block = pool.block(b);
        if (block.ref_cnt <= 0) {
            freed.push_back(b);  // free: the next allocation may overwrite it at any moment
        } else if (emitted != emitted_generations_.end() && i < emitted->second.size() &&
                   emitted->second[i] != block.generation) {
            foreign.push_back(b);  // handed out again since the job was emitted
        }
    }
    if (freed.empty() && foreign.empty()) return;
    const std::string what = fmt::format("rank {} of store job {}", rank, job.job_id);
    if (!freed.empty()) {
        violations_.push_back(store_violation("read_freed_block", job, freed, what + " reads blocks that were freed"));
        violations_.back().rank = rank;
    }
    if (!foreign.empty()) {
        violations_.push_back(store_violation("read_foreign_block", job, foreign, what + " reads blocks now holding other KV"));
        violations_.back().rank = rank;
    }
}

void WorkerAccessChecker::send_read(const std::string& req_id, const std::vector<BlockId>& blocks) {
    const auto* slot = scheduler_.requests().find(req_id);
    if (slot == nullptr) {
        violations_.push_back({.invariant = "read_freed_block",
                               .request = req_id,
                               .blocks = blocks,
                               .detail = "p2p send after the request's blocks were freed",
                               .connector = "p2p"});
        return;
    }
    const auto& table = scheduler_.kv_cache_manager().get_block_ids(req_id);
    const auto foreign = outside_table(table, blocks);
    if (!foreign.empty())
        violations_.push_back({.invariant = "read_foreign_block",
                               .request = req_id,
                               .blocks = foreign,
                               .detail = "p2p send reads blocks the request does not hold",
                               .connector = "p2p"});
}

void WorkerAccessChecker::load_written(const std::string& req_id, const std::vector<BlockId>& blocks,
                                       std::string_view source) {
    const auto* slot = scheduler_.requests().find(req_id);
    const auto table = slot != nullptr ? scheduler_.kv_cache_manager().get_block_ids(req_id) : std::vector<BlockId>{};
    const auto foreign = outside_table(table, blocks);
    if (!foreign.empty())
        violations_.push_back({.invariant = "load_into_foreign_block",
                               .request = req_id,
                               .blocks = foreign,
                               .detail = fmt::format("{} load writes into blocks the request does not own", source),
                               .connector = std::string(source)});
}

std::vector<Violation> WorkerAccessChecker::take_violations() {
    std::vector<Violation> out;
    out.swap(violations_);
    return out;
}

}  // namespace kvsim
