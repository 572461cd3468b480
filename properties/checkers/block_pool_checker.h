#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "properties/checkers/checker.h"
#include "sim/core/block_pool.h"

namespace kvsim {

// Ref counts equal the number of holders (block-table entries plus connector pins); ref 0 <=> in the free queue; no negative
// count (double free); the null block is never freed, hashed or handed out; the
// prefix-cache map only names blocks carrying that hash.
//
// check() sweeps the whole pool: every touched block one by one, the untouched rest (never handed
// out: BlockPool::num_touched_blocks) in one go unless something holds one. check_step() judges only the blocks held now or after the last
// step (every block whose ref count a step can change legitimately) and the null block, and runs
// the sweep when one of them is wrong (it keeps the holder counts from step to step and counts
// again only the block tables and save-job pins that changed), so its report is the sweep's; a fault elsewhere (a block
// nobody held, the free queue's length, the prefix map) waits for the next full sweep.
class BlockPoolChecker : public Checker {
public:
    std::string_view name() const override { return "block_pool_checker"; }
    void check(const Engine& engine, std::vector<Violation>& out) const override;
    void check_step(const Engine& engine, std::vector<Violation>& out, bool full_sweep) override;
    // The steps whose judged blocks looked wrong, so check_step swept: on a run the sweep finds
    // sound, none (the holder counts are exact; tests/test_incremental_checkers.cpp).
    std::uint64_t suspicions() const { return suspicions_; }

private:
    // A request's block table as the last step left it.
    struct HeldTable {
        std::string request;
        std::vector<BlockId> blocks;
    };

    // Brings holders_ and held_ up to the tables, pins and fenced frees of now, from the last
    // step's: only what changed is counted again (a table that grew, a request that came or left);
    // false when a block table holds the null block or names a block outside the pool, or a pin
    // names one outside it.
    bool count_holders(const Engine& engine);
    // The tables of now against tables_ (both in request-id order); tables_ becomes them.
    void follow_tables(const Engine& engine);
    // One request's table: what changed from its common prefix with `before` on; `before` becomes `now`.
    void follow_table(std::vector<BlockId>& before, const std::vector<BlockId>& now);
    // pins_ against last_pins_; last_pins_ becomes pins_.
    void follow_pins();
    // One reference on `id` more or less; a table's null block or any id outside the pool is counted in bad_refs_.
    void hold(BlockId id, bool from_table);
    void unhold(BlockId id, bool from_table);
    // True when a block held now or after the last step, or the null block, is wrong.
    bool touched_blocks_wrong(const Engine& engine);

    std::uint32_t num_blocks_ = 0;
    std::vector<HeldTable> tables_;       // by request id, as KVCacheManager::all_request_blocks
    std::vector<HeldTable> next_tables_;  // scratch: the tables after a request came or left
    std::vector<BlockId> pins_;           // the connector's pinned blocks now
    std::vector<BlockId> last_pins_;      // and after the last step
    std::vector<BlockId> fenced_;         // the last step's fenced frees (#45357)
    std::vector<int> holders_;            // by block id: the references counted now
    std::vector<BlockId> held_;           // distinct blocks held now
    std::vector<std::uint32_t> held_at_;  // by block id: its place in held_
    std::vector<BlockId> released_;       // blocks held after the last step that this step let go
    std::size_t bad_refs_ = 0;            // held references the pool cannot judge (see hold)
    std::uint64_t suspicions_ = 0;
};

}  // namespace kvsim
