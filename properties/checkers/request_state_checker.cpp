#include "properties/checkers/request_state_checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "sim/engine/engine.h"

namespace kvsim {
namespace {

// Every queue entry names a live request with a status that queue allows; every live request
// sits in exactly one queue, a finished one in none; computed tokens have their tokens and blocks.
// `placed` is scratch (cleared here): the request of each queue entry, once per entry, sorted to count a
// request's entries; searched, never iterated, so the pointers' order reaches no output.
void check_queues(const Engine& engine, std::vector<Violation>& out, std::vector<const Request*>& placed) {
    const Scheduler& sched = engine.scheduler();
    const KVCacheManager& kvm = sched.kv_cache_manager();
    placed.clear();
    auto place = [&](const auto& ids, std::string_view where, auto status_ok) {
        for (const auto& id : ids) {
            const auto* slot = sched.requests().find(id);
            if (slot == nullptr) {
                out.push_back({.invariant = "queued_request_gone",
                              .request = id,
                              .blocks = {},
                              .detail = fmt::format("{} lists a request that no longer exists", where)});
                continue;
            }
            const Request& req = **slot;
            placed.push_back(&req);
            if (!status_ok(req.status))
                out.push_back({.invariant = "queue_status_mismatch",
                              .request = id,
                              .blocks = {},
                              .detail = fmt::format("in {} with status {}", where, to_string(req.status))});
        }
    };
    place(sched.running(), "running", [](RequestStatus s) { return s == RequestStatus::running; });
    auto waiting_ok = [](RequestStatus s) {
        return s == RequestStatus::waiting || s == RequestStatus::preempted || s == RequestStatus::waiting_for_remote_kvs;
    };
    place(sched.waiting(), "waiting", waiting_ok);
    place(sched.skipped_waiting(), "skipped_waiting", waiting_ok);

    std::sort(placed.begin(), placed.end(), std::less<>{});
    for (const auto& [id, req] : sched.requests()) {
        const auto [first, last] = std::equal_range(placed.begin(), placed.end(), req.get(), std::less<>{});
        const auto count = last - first;
        if (is_finished(req->status)) {
            if (count != 0) out.push_back({.invariant = "finished_request_queued",
                                          .request = id,
                                          .blocks = {},
                                          .detail = "a finished request is still queued"});
        } else if (count != 1) {
            out.push_back({.invariant = "request_placement",
                          .request = id,
                          .blocks = {},
                          .detail = fmt::format("in {} queues, expected exactly 1", count)});
        }
        if (req->num_computed_tokens > req->num_tokens())
            out.push_back({.invariant = "computed_beyond_tokens",
                          .request = id,
                          .blocks = {},
                          .detail = fmt::format("num_computed_tokens {} > num_tokens {}", req->num_computed_tokens, req->num_tokens())});
        if (req->status == RequestStatus::running) {
            const std::size_t held = kvm.get_block_ids(id).size();
            const auto needed = static_cast<std::size_t>((req->num_computed_tokens + kvm.block_size() - 1) / kvm.block_size());
            if (held < needed)
                out.push_back({.invariant = "computed_without_blocks",
                              .request = id,
                              .blocks = {},
                              .detail = fmt::format("{} computed tokens need {} blocks, holds {}", req->num_computed_tokens, needed, held)});
        }
    }
}

// A block in two tables or more is a prefix-cache block while a live request holds it. Upstream's
// kv_load_failure_policy=fail drops the hashes of a failed sync load's blocks while other requests
// still hold them (BlockPool.evict_blocks: blocks with ref_cnt > 0 are only evicted from the hash
// table) and finishes every request whose computed range holds one (Scheduler._handle_invalid_blocks);
// one finished in WAITING_FOR_REMOTE_KVS keeps its table until its receive ends (finish_requests:
// delay_free_blocks), so the block stays in the tables of finished requests only, unhashed
// (vllm/v1/core/sched/scheduler.py @ 003df2961dd8830c317a61f9745ccd557da9fa06). A live holder of
// such a block is a request the failure handling missed.
void report_shared_unhashed(const BlockPool& pool, BlockId block, const std::string& first_owner, std::size_t owners,
                            std::size_t live_owners, std::vector<Violation>& out) {
    if (owners > 1 && live_owners > 0 && block != kNullBlockId && !pool.block(block).hash)
        out.push_back({.invariant = "block_shared_unhashed",
                      .request = first_owner,
                      .blocks = {block},
                      .detail = fmt::format("block {} is in {} tables but is not a prefix-cache block", block, owners)});
}

// The request of a block table; null, reported as a leak, when the request is gone.
const Request* table_owner(const Scheduler& sched, const std::string& id, const std::vector<BlockId>& blocks,
                           std::vector<Violation>& out) {
    if (const auto* slot = sched.requests().find(id)) return slot->get();
    out.push_back({.invariant = "blocks_of_dead_request",
                   .request = id,
                   .blocks = blocks,
                   .detail = "a block table outlived its request (leak)"});
    return nullptr;
}

}  // namespace

void RequestStateChecker::check(const Engine& engine, std::vector<Violation>& out) const {
    std::vector<const Request*> placed;
    check_queues(engine, out, placed);
    const Scheduler& sched = engine.scheduler();
    const BlockPool& pool = sched.kv_cache_manager().block_pool();
    std::map<BlockId, std::vector<std::string>> owners;
    std::map<BlockId, std::size_t> live_owners;
    for (const auto& [id, blocks] : sched.kv_cache_manager().all_request_blocks()) {
        const Request* owner = table_owner(sched, id, blocks, out);
        if (owner == nullptr) continue;
        const bool live = !is_finished(owner->status);
        for (BlockId b : blocks) {
            owners[b].push_back(id);
            if (live) ++live_owners[b];
            if (pool.free_queue().contains(b))
                out.push_back({.invariant = "live_block_in_free_queue",
                              .request = id,
                              .blocks = {b},
                              .detail = fmt::format("block {} is held and free at once", b)});
        }
    }
    for (const auto& [block, ids] : owners) {
        const auto live = live_owners.find(block);
        report_shared_unhashed(pool, block, ids.front(), ids.size(), live == live_owners.end() ? 0 : live->second, out);
    }
}

void RequestStateChecker::grow_block_tables(BlockId block) {
    const std::size_t size = std::max<std::size_t>(block + 1, 2 * owner_count_.size());
    owner_count_.resize(size, 0);
    live_owner_count_.resize(size, 0);
    first_owner_.resize(size, nullptr);
}

void RequestStateChecker::check_step(const Engine& engine, std::vector<Violation>& out, bool /*full_sweep*/) {
    check_queues(engine, out, placed_);
    const Scheduler& sched = engine.scheduler();
    const BlockPool& pool = sched.kv_cache_manager().block_pool();
    owned_.clear();
    shared_.clear();
    for (const auto& [id, blocks] : sched.kv_cache_manager().all_request_blocks()) {
        const Request* owner = table_owner(sched, id, blocks, out);
        if (owner == nullptr) continue;
        const bool live = !is_finished(owner->status);
        for (BlockId b : blocks) {
            const bool free = pool.free_queue().contains(b);  // first: it rejects a block outside the pool
            if (b >= owner_count_.size()) grow_block_tables(b);
            const std::uint32_t count = ++owner_count_[b];
            if (live) ++live_owner_count_[b];
            if (count == 1) {
                first_owner_[b] = &id;
                owned_.push_back(b);
            }
            if (count == 2) shared_.push_back(b);
            if (free) out.push_back({.invariant = "live_block_in_free_queue",
                                    .request = id,
                                    .blocks = {b},
                                    .detail = fmt::format("block {} is held and free at once", b)});
        }
    }
    std::sort(shared_.begin(), shared_.end());
    for (BlockId b : shared_) report_shared_unhashed(pool, b, *first_owner_[b], owner_count_[b], live_owner_count_[b], out);
    for (BlockId b : owned_) owner_count_[b] = live_owner_count_[b] = 0;
}

}  // namespace kvsim
