#pragma once
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
// the sweep when one of them is wrong, so its report is the sweep's; a fault elsewhere (a block
// nobody held, the free queue's length, the prefix map) waits for the next full sweep.
class BlockPoolChecker : public Checker {
public:
    std::string_view name() const override { return "block_pool_checker"; }
    void check(const Engine& engine, std::vector<Violation>& out) const override;
    void check_step(const Engine& engine, std::vector<Violation>& out, bool full_sweep) override;

private:
    // Counts the holders of each block into holders_ and lists the distinct blocks in held_;
    // false when a block table holds the null block or names a block outside the pool.
    bool count_holders(const Engine& engine);
    // True when a block held now or after the last step, or the null block, is wrong.
    bool touched_blocks_wrong(const Engine& engine);

    std::vector<int> holders_;         // by block id; all zero between steps
    std::vector<BlockId> held_;        // distinct blocks held now
    std::vector<BlockId> last_held_;   // distinct blocks held after the last step
    std::vector<BlockId> pins_;        // the connector's pinned blocks, refilled each step
};

}  // namespace kvsim
