#include "properties/checkers/request_state_checker.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "sim/engine/engine.h"

namespace kvsim {

namespace {

// Every queued request exists and has a status its queue allows; returns how many queues hold each id.
std::map<std::string, int> check_queues(const Scheduler& sched, std::vector<Violation>& out) {
    std::map<std::string, int> placements;
    auto place = [&](const auto& ids, std::string_view where, auto status_ok) {
        for (const auto& id : ids) {
            ++placements[id];
            const auto* slot = sched.requests().find(id);
            if (slot == nullptr) {
                out.push_back({.invariant = "queued_request_gone",
                               .request = id,
                               .blocks = {},
                               .detail = fmt::format("{} lists a request that no longer exists", where)});
                continue;
            }
            if (!status_ok((*slot)->status))
                out.push_back({.invariant = "queue_status_mismatch",
                               .request = id,
                               .blocks = {},
                               .detail = fmt::format("in {} with status {}", where, to_string((*slot)->status))});
        }
    };
    place(sched.running(), "running", [](RequestStatus s) { return s == RequestStatus::running; });
    auto waiting_ok = [](RequestStatus s) {
        return s == RequestStatus::waiting || s == RequestStatus::preempted || s == RequestStatus::waiting_for_remote_kvs;
    };
    place(sched.waiting(), "waiting", waiting_ok);
    place(sched.skipped_waiting(), "skipped_waiting", waiting_ok);
    return placements;
}

// Each live request sits in exactly one queue (none once finished) and holds blocks for its computed tokens.
void check_requests(const Scheduler& sched, const std::map<std::string, int>& placements,
                    std::vector<Violation>& out) {
    const KVCacheManager& kvm = sched.kv_cache_manager();
    for (const auto& [id, req] : sched.requests()) {
        const int count = placements.contains(id) ? placements.at(id) : 0;
        if (is_finished(req->status)) {
            if (count != 0)
                out.push_back({.invariant = "finished_request_queued",
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
                           .detail = fmt::format("num_computed_tokens {} > num_tokens {}", req->num_computed_tokens,
                                                 req->num_tokens())});
        if (req->status == RequestStatus::running) {
            const auto held = kvm.get_block_ids(id).size();
            const auto needed =
                static_cast<std::size_t>((req->num_computed_tokens + kvm.block_size() - 1) / kvm.block_size());
            if (held < needed)
                out.push_back({.invariant = "computed_without_blocks",
                               .request = id,
                               .blocks = {},
                               .detail = fmt::format("{} computed tokens need {} blocks, holds {}",
                                                     req->num_computed_tokens, needed, held)});
        }
    }
}

// Block tables belong to live requests, hold no free block, and share only prefix-cache blocks.
void check_block_tables(const Scheduler& sched, std::vector<Violation>& out) {
    const KVCacheManager& kvm = sched.kv_cache_manager();
    const BlockPool& pool = kvm.block_pool();
    std::map<BlockId, std::vector<std::string>> owners;
    for (const auto& [id, blocks] : kvm.all_request_blocks()) {
        if (!sched.requests().contains(id)) {
            out.push_back({.invariant = "blocks_of_dead_request",
                           .request = id,
                           .blocks = blocks,
                           .detail = "a block table outlived its request (leak)"});
            continue;
        }
        for (BlockId b : blocks) {
            owners[b].push_back(id);
            if (pool.free_queue().contains(b))
                out.push_back({.invariant = "live_block_in_free_queue",
                               .request = id,
                               .blocks = {b},
                               .detail = fmt::format("block {} is held and free at once", b)});
        }
    }
    for (const auto& [block, ids] : owners) {
        if (ids.size() > 1 && block != kNullBlockId && !pool.block(block).hash)
            out.push_back({.invariant = "block_shared_unhashed",
                           .request = ids.front(),
                           .blocks = {block},
                           .detail = fmt::format("block {} is in {} tables but is not a prefix-cache block", block,
                                                 ids.size())});
    }
}

}  // namespace

void RequestStateChecker::check(const Engine& engine, std::vector<Violation>& out) const {
    const Scheduler& sched = engine.scheduler();
    const std::map<std::string, int> placements = check_queues(sched, out);
    check_requests(sched, placements, out);
    check_block_tables(sched, out);
}

}  // namespace kvsim
