#pragma once
#include "properties/checkers/checker.h"

namespace kvsim {

// Ref counts equal the number of holders (block-table entries plus connector pins); ref 0 <=> in the free queue; no negative
// count (double free); the null block is never freed, hashed or handed out; the
// prefix-cache map only names blocks carrying that hash.
class BlockPoolChecker : public Checker {
public:
    std::string_view name() const override { return "block_pool_checker"; }
    void check(const Engine& engine, std::vector<Violation>& out) const override;
};

}  // namespace kvsim
