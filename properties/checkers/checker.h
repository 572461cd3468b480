#pragma once
// Invariant checkers: after every step they judge the core's true state (README.md, Property tests).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/request.h"

namespace kvsim {

class Engine;

struct Violation {
    std::string invariant;  // stable id, used in signatures
    std::string request;    // may be empty
    std::vector<BlockId> blocks;
    std::string detail;     // one line
};

class Checker {
public:
    virtual ~Checker() = default;
    virtual std::string_view name() const = 0;
    // Appends every violation found in the engine's current state.
    virtual void check(const Engine& engine, std::vector<Violation>& out) const = 0;
};

// The checkers every run uses, in a fixed order.
std::vector<std::unique_ptr<Checker>> make_core_checkers();

}  // namespace kvsim
