#include "properties/checkers/inflight_write_checker.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/core/sched/scheduler.h"

namespace kvsim {

void InflightWriteChecker::forward_dispatched(std::int64_t batch, const std::string& req_id,
                                              const std::vector<BlockId>& blocks) {
    if (blocks.empty()) return;  // nothing it writes can be reused or loaded into
    const BlockPool& pool = scheduler_.kv_cache_manager().block_pool();
    ForwardWrite write;
    if (!spare_.empty()) {
        write = std::move(spare_.back());
        spare_.pop_back();
    }
    write.batch = batch;
    write.req_id = req_id;
    write.blocks.clear();
    write.loaded.clear();
    for (BlockId b : blocks) write.blocks.push_back({.block = b, .generation = pool.block(b).generation});
    in_flight_.push_back(std::move(write));
}

// A block the batch wrote, handed out again since dispatch, no longer in the writer's table, and loaded into.
void InflightWriteChecker::forward_completed(std::int64_t batch) {
    const KVCacheManager& kvm = scheduler_.kv_cache_manager();
    for (const ForwardWrite& write : in_flight_) {
        if (write.batch != batch) continue;
        const std::vector<BlockId>& table = kvm.get_block_ids(write.req_id);
        std::vector<BlockId> reused;
        for (const auto& [b, generation] : write.blocks) {
            const bool regenerated = kvm.block_pool().block(b).generation != generation;
            const bool loaded = std::find(write.loaded.begin(), write.loaded.end(), b) != write.loaded.end();
            if (regenerated && loaded && std::find(table.begin(), table.end(), b) == table.end()) reused.push_back(b);
        }
        if (reused.empty()) continue;
        violations_.push_back({.invariant = "inflight_write_into_reused_block",
                               .request = write.req_id,
                               .blocks = reused,
                               .detail = fmt::format("the forward pass of step seq {} wrote {}'s KV into blocks "
                                                     "freed and handed out again while it was in flight",
                                                     batch, write.req_id)});
    }
    // the batch's writes leave in_flight_ (the rest keep their order) for spare_
    std::size_t kept = 0;
    for (std::size_t i = 0; i < in_flight_.size(); ++i)
        if (in_flight_[i].batch != batch) std::swap(in_flight_[kept++], in_flight_[i]);
    for (std::size_t i = kept; i < in_flight_.size(); ++i) spare_.push_back(std::move(in_flight_[i]));
    in_flight_.resize(kept);
}

void InflightWriteChecker::load_written(const std::string& req_id, const std::vector<BlockId>& blocks,
                                        std::string_view source) {
    for (ForwardWrite& write : in_flight_) {
        if (write.req_id == req_id) continue;
        std::vector<BlockId> shared;
        for (BlockId b : blocks)
            if (b != kNullBlockId && write.writes(b))
                shared.push_back(b);
        if (shared.empty()) continue;
        write.loaded.insert(write.loaded.end(), shared.begin(), shared.end());
        violations_.push_back({.invariant = "load_under_inflight_write",
                               .request = req_id,
                               .blocks = shared,
                               .detail = fmt::format("a {} load wrote {}'s KV into blocks that {}'s forward pass of "
                                                     "step seq {} still writes",
                                                     source, req_id, write.req_id, write.batch),
                               .connector = std::string(source)});
    }
}

std::vector<Violation> InflightWriteChecker::take_violations() {
    std::vector<Violation> out;
    out.swap(violations_);
    return out;
}

}  // namespace kvsim
