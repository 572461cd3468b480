#include "properties/checkers/request_state_checker.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "sim/engine/engine.h"

namespace kvsim {

void RequestStateChecker::check(const Engine& engine, std::vector<Violation>& out) const {
    const Scheduler& sched = engine.scheduler();
    const KVCacheManager& kvm = sched.kv_cache_manager();
    const BlockPool& pool = kvm.block_pool();

    std::map<std::string, int> placements;
    auto place = [&](const auto& ids, std::string_view where, auto status_ok) {
        for (const auto& id : ids) {
            ++placements[id];
            const auto* slot = sched.requests().find(id);
            if (slot == nullptr) {
                out.push_back({"queued_request_gone", id, {}, fmt::format("{} lists a request that no longer exists", where)});
                continue;
            }
            if (!status_ok((*slot)->status))
                out.push_back({"queue_status_mismatch", id, {},
                               fmt::format("in {} with status {}", where, to_string((*slot)->status))});
        }
    };
    place(sched.running(), "running", [](RequestStatus s) { return s == RequestStatus::running; });
    auto waiting_ok = [](RequestStatus s) {
        return s == RequestStatus::waiting || s == RequestStatus::preempted || s == RequestStatus::waiting_for_remote_kvs;
    };
    place(sched.waiting(), "waiting", waiting_ok);
    place(sched.skipped_waiting(), "skipped_waiting", waiting_ok);

    for (const auto& [id, req] : sched.requests()) {
        const int count = placements.contains(id) ? placements.at(id) : 0;
        if (is_finished(req->status)) {
            if (count != 0) out.push_back({"finished_request_queued", id, {}, "a finished request is still queued"});
        } else if (count != 1) {
            out.push_back({"request_placement", id, {}, fmt::format("in {} queues, expected exactly 1", count)});
        }
        if (req->num_computed_tokens > req->num_tokens())
            out.push_back({"computed_beyond_tokens", id, {},
                           fmt::format("num_computed_tokens {} > num_tokens {}", req->num_computed_tokens, req->num_tokens())});
        if (req->status == RequestStatus::running) {
            const auto held = kvm.get_block_ids(id).size();
            const auto needed = static_cast<std::size_t>((req->num_computed_tokens + kvm.block_size() - 1) / kvm.block_size());
            if (held < needed)
                out.push_back({"computed_without_blocks", id, {},
                               fmt::format("{} computed tokens need {} blocks, holds {}", req->num_computed_tokens, needed, held)});
        }
    }

    std::map<BlockId, std::vector<std::string>> owners;
    for (const auto& [id, blocks] : kvm.all_request_blocks()) {
        if (!sched.requests().contains(id)) {
            out.push_back({"blocks_of_dead_request", id, blocks, "a block table outlived its request (leak)"});
            continue;
        }
        for (BlockId b : blocks) {
            owners[b].push_back(id);
            if (pool.free_queue().contains(b))
                out.push_back({"live_block_in_free_queue", id, {b}, fmt::format("block {} is held and free at once", b)});
        }
    }
    for (const auto& [block, ids] : owners) {
        if (ids.size() > 1 && block != kNullBlockId && !pool.block(block).hash)
            out.push_back({"block_shared_unhashed", ids.front(), {block},
                           fmt::format("block {} is in {} tables but is not a prefix-cache block", block, ids.size())});
    }
}

}  // namespace kvsim
