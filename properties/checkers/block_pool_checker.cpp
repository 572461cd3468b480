#include "properties/checkers/block_pool_checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "sim/engine/engine.h"

namespace kvsim {

namespace {

// The holder count of every block: block-table entries, connector pins, fenced frees. Indexed by
// id over the touched blocks; a held untouched block (a model fault) is counted in `untouched`. A
// block table's id outside the pool is counted nowhere, as the pool cannot judge it.
struct BlockHolders {
    std::vector<int> touched;
    std::map<BlockId, int> untouched;
};

// The references held outside the block tables: connector pins, then #45357's fenced frees.
void append_pins(const Engine& engine, std::vector<BlockId>& out) {
    if (const KVConnectorScheduler* connector = engine.connector()) connector->append_pinned_blocks(out);
}
void append_fenced_frees(const Engine& engine, std::vector<BlockId>& out) {
    for (const DeferredFree& held : engine.scheduler().deferred_frees())
        out.insert(out.end(), held.blocks.begin(), held.blocks.end());
}

// Every reference a holder has on a block: block-table entries (a null entry is reported instead),
// connector pins, fenced frees.
BlockHolders block_holders(const Engine& engine, std::vector<Violation>& out) {
    const BlockPool& pool = engine.scheduler().kv_cache_manager().block_pool();
    BlockHolders holders{.touched = std::vector<int>(pool.num_touched_blocks(), 0), .untouched = {}};
    const auto hold = [&](BlockId id) {
        if (id < holders.touched.size()) ++holders.touched[id];
        else if (id < pool.num_blocks()) ++holders.untouched[id];
    };
    for (const auto& [req_id, blocks] : engine.scheduler().kv_cache_manager().all_request_blocks())
        for (BlockId id : blocks) {
            if (id != kNullBlockId) {
                hold(id);
                continue;
            }
            out.push_back({.invariant = "null_block_handed_out",
                           .request = req_id,
                           .blocks = {kNullBlockId},
                           .detail = "a full-attention block table holds the null block"});
        }
    std::vector<BlockId> elsewhere;
    append_pins(engine, elsewhere);
    append_fenced_frees(engine, elsewhere);
    for (BlockId id : elsewhere) hold(id);
    return holders;
}

void check_null_block(const BlockPool& pool, std::vector<Violation>& out) {
    const KVCacheBlock& null_block = pool.block(kNullBlockId);
    if (!null_block.is_null)
        out.push_back({.invariant = "null_block",
                       .request = "",
                       .blocks = {kNullBlockId},
                       .detail = "block 0 is not marked null"});
    if (pool.free_queue().contains(kNullBlockId))
        out.push_back({.invariant = "null_block_freed",
                       .request = "",
                       .blocks = {kNullBlockId},
                       .detail = "the null block is in the free queue"});
    if (null_block.hash)
        out.push_back({.invariant = "null_block_cached",
                       .request = "",
                       .blocks = {kNullBlockId},
                       .detail = "the null block carries a hash"});
}

void check_ref_count(const BlockPool& pool, BlockId id, int expected, std::vector<Violation>& out) {
    const KVCacheBlock& block = pool.block(id);
    if (block.ref_cnt < 0) {
        out.push_back({.invariant = "double_free",
                       .request = "",
                       .blocks = {id},
                       .detail = fmt::format("ref_cnt {} below zero", block.ref_cnt)});
        return;
    }
    if (block.ref_cnt != expected)
        out.push_back({.invariant = "ref_count_mismatch",
                       .request = "",
                       .blocks = {id},
                       .detail = fmt::format("ref_cnt {} but {} holder(s) (block tables and store-job pins)",
                                             block.ref_cnt, expected)});
    const bool in_queue = pool.free_queue().contains(id);
    if ((block.ref_cnt == 0) != in_queue)
        out.push_back({.invariant = "free_queue_mismatch",
                       .request = "",
                       .blocks = {id},
                       .detail = fmt::format("ref_cnt {} and {}in the free queue", block.ref_cnt,
                                             in_queue ? "" : "not ")});
}

// Every touched block, then the held untouched ones, in id order; an untouched block nobody holds
// has ref_cnt 0 and sits in the free queue's untouched run by construction.
void check_ref_counts(const BlockPool& pool, const BlockHolders& holders, std::vector<Violation>& out) {
    for (BlockId id = 1; id < holders.touched.size(); ++id) check_ref_count(pool, id, holders.touched[id], out);
    for (const auto& [id, count] : holders.untouched) check_ref_count(pool, id, count, out);
}

void check_prefix_map(const BlockPool& pool, std::vector<Violation>& out) {
    for (const auto& [hash, ids] : pool.cached_blocks()) {
        for (BlockId id : ids) {
            const KVCacheBlock& block = pool.block(id);
            if (!block.hash || *block.hash != hash)
                out.push_back({.invariant = "prefix_map_stale",
                               .request = "",
                               .blocks = {id},
                               .detail = fmt::format("prefix map names block {} for a hash it does not carry", id)});
        }
    }
}

}  // namespace

void BlockPoolChecker::check(const Engine& engine, std::vector<Violation>& out) const {
    const BlockPool& pool = engine.scheduler().kv_cache_manager().block_pool();
    const BlockHolders holders = block_holders(engine, out);

    const std::uint32_t walked = pool.free_queue().walk_length();
    if (walked != pool.num_free_blocks())
        out.push_back({.invariant = "free_queue_size",
                       .request = "",
                       .blocks = {},
                       .detail = fmt::format("free queue walks {} blocks but reports {}", walked,
                                             pool.num_free_blocks())});
    check_null_block(pool, out);
    check_ref_counts(pool, holders, out);
    check_prefix_map(pool, out);
}

void BlockPoolChecker::check_step(const Engine& engine, std::vector<Violation>& out, bool full_sweep) {
    const bool wrong = touched_blocks_wrong(engine);  // also when sweeping, so the counts follow the run
    if (wrong) ++suspicions_;
    if (full_sweep || wrong) check(engine, out);
}

bool BlockPoolChecker::count_holders(const Engine& engine) {
    num_blocks_ = engine.scheduler().kv_cache_manager().block_pool().num_blocks();
    released_.clear();
    for (BlockId id : fenced_) unhold(id, false);
    follow_tables(engine);
    pins_.clear();
    append_pins(engine, pins_);
    follow_pins();
    fenced_.clear();
    append_fenced_frees(engine, fenced_);
    for (BlockId id : fenced_) hold(id, false);
    return bad_refs_ == 0;
}

// The pins come save job by save job, in job order: a step usually lets the oldest jobs go and adds
// new ones, so the last step's pins past some point are the first of now's. Tries the first few
// such points; else counts every pin again.
void BlockPoolChecker::follow_pins() {
    constexpr int kTries = 8;
    std::size_t dropped = last_pins_.size();
    int tries = 0;
    for (std::size_t k = 0; k < last_pins_.size() && tries < kTries; ++k) {
        const std::size_t kept = last_pins_.size() - k;
        if (kept > pins_.size() || last_pins_[k] != pins_.front()) continue;
        ++tries;
        if (std::equal(last_pins_.begin() + static_cast<std::ptrdiff_t>(k), last_pins_.end(), pins_.begin())) {
            dropped = k;
            break;
        }
    }
    for (std::size_t i = 0; i < dropped; ++i) unhold(last_pins_[i], false);
    for (std::size_t i = last_pins_.size() - dropped; i < pins_.size(); ++i) hold(pins_[i], false);
    std::swap(last_pins_, pins_);
}

// In place while the requests are the last step's, in the same order (most steps); from the first
// request that came or left on, the rest is merged into a new list.
void BlockPoolChecker::follow_tables(const Engine& engine) {
    const auto& now = engine.scheduler().kv_cache_manager().all_request_blocks();
    auto at = now.begin();
    std::size_t kept = 0;
    for (; kept < tables_.size() && at != now.end() && tables_[kept].request == at->first; ++kept, ++at)
        follow_table(tables_[kept].blocks, at->second);
    if (kept == tables_.size() && at == now.end()) return;
    next_tables_.clear();
    auto last = tables_.begin() + static_cast<std::ptrdiff_t>(kept);
    const auto drop_until = [&](const std::string* request) {  // the requests that left
        for (; last != tables_.end() && (request == nullptr || last->request < *request); ++last)
            for (BlockId id : last->blocks) unhold(id, true);
    };
    for (; at != now.end(); ++at) {
        drop_until(&at->first);
        if (last == tables_.end() || last->request != at->first) {
            for (BlockId id : at->second) hold(id, true);
            next_tables_.push_back({at->first, at->second});
            continue;
        }
        follow_table(last->blocks, at->second);
        next_tables_.push_back(std::move(*last++));
    }
    drop_until(nullptr);
    tables_.resize(kept);
    std::move(next_tables_.begin(), next_tables_.end(), std::back_inserter(tables_));
}

void BlockPoolChecker::follow_table(std::vector<BlockId>& before, const std::vector<BlockId>& now) {
    const std::size_t same = static_cast<std::size_t>(
        std::mismatch(before.begin(), before.end(), now.begin(), now.end()).first - before.begin());
    if (same == before.size() && same == now.size()) return;
    for (std::size_t i = same; i < before.size(); ++i) unhold(before[i], true);
    for (std::size_t i = same; i < now.size(); ++i) hold(now[i], true);
    before.assign(now.begin(), now.end());
}

void BlockPoolChecker::hold(BlockId id, bool from_table) {
    if (id >= num_blocks_ || (from_table && id == kNullBlockId)) {
        ++bad_refs_;
        return;
    }
    if (id >= holders_.size()) {
        const std::size_t size = std::max<std::size_t>(id + 1, 2 * holders_.size());
        holders_.resize(size, 0);
        held_at_.resize(size, 0);
    }
    if (holders_[id]++ > 0) return;
    held_at_[id] = static_cast<std::uint32_t>(held_.size());
    held_.push_back(id);
}

void BlockPoolChecker::unhold(BlockId id, bool from_table) {
    if (id >= num_blocks_ || (from_table && id == kNullBlockId)) {
        --bad_refs_;
        return;
    }
    if (--holders_[id] > 0) return;
    const BlockId moved = held_.back();
    held_[held_at_[id]] = moved;
    held_at_[moved] = held_at_[id];
    held_.pop_back();
    released_.push_back(id);
}

// Judges held_ and released_: every block held now or after the last step (a block held then and
// not now dropped to no holder during this step's counting, so released_ names it).
bool BlockPoolChecker::touched_blocks_wrong(const Engine& engine) {
    const BlockPool& pool = engine.scheduler().kv_cache_manager().block_pool();
    const FreeBlockQueue& queue = pool.free_queue();
    bool wrong = !count_holders(engine);
    auto judge = [&](BlockId id) {
        if (id == kNullBlockId || id >= pool.num_blocks()) return;
        const KVCacheBlock& block = pool.block(id);
        if (block.ref_cnt < 0 || block.ref_cnt != holders_[id] || (block.ref_cnt == 0) != queue.contains(id))
            wrong = true;
    };
    for (BlockId id : held_) judge(id);
    for (BlockId id : released_) judge(id);
    const KVCacheBlock& null_block = pool.block(kNullBlockId);
    if (!null_block.is_null || queue.contains(kNullBlockId) || null_block.hash) wrong = true;
    return wrong;
}

}  // namespace kvsim
