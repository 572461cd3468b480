#pragma once
#include "properties/checkers/checker.h"

namespace kvsim {

// Every live request sits in exactly the queue its status says; finished requests
// sit in none and hold blocks only while a delayed free is pending; block tables
// belong to live requests; a live request's blocks are never free; a block shared
// by two requests is a prefix-cache block (it carries a hash).
class RequestStateChecker : public Checker {
public:
    std::string_view name() const override { return "request_state_checker"; }
    void check(const Engine& engine, std::vector<Violation>& out) const override;
};

}  // namespace kvsim
