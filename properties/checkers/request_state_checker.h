#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "properties/checkers/checker.h"

namespace kvsim {

class Request;

// Every live request sits in exactly the queue its status says; finished requests
// sit in none and hold blocks only while a delayed free is pending; block tables
// belong to live requests; a live request's blocks are never free; a block shared
// by two requests, one of them live, is a prefix-cache block (it carries a hash).
//
// check() builds a map of owners per block; check_step() reports the same violations in the same
// order from per-block counters it keeps between steps (work proportional to the blocks held).
class RequestStateChecker : public Checker {
public:
    std::string_view name() const override { return "request_state_checker"; }
    void check(const Engine& engine, std::vector<Violation>& out) const override;
    void check_step(const Engine& engine, std::vector<Violation>& out, bool full_sweep) override;

private:
    // The per-block counters cover the highest block held so far, not the pool.
    void grow_block_tables(BlockId block);

    std::vector<std::uint32_t> owner_count_;       // by block id; all zero between steps
    std::vector<std::uint32_t> live_owner_count_;  // by block id: the owners that are not finished; all zero between steps
    std::vector<const std::string*> first_owner_;  // by block id: the first request (by id) holding it
    std::vector<BlockId> owned_;                   // distinct blocks held now
    std::vector<BlockId> shared_;                  // blocks held by two requests or more
    std::vector<const Request*> placed_;           // check_queues' scratch, kept so a step allocates nothing
};

}  // namespace kvsim
