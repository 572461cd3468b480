#pragma once
// Invariant checkers: after every step they judge the core's true state (tests/README.md, Property tests).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/request.h"

namespace kvsim {

class Engine;

// A half-open token range [start, end).
struct TokenRange {
    int start = 0;
    int end = 0;
    bool operator==(const TokenRange&) const = default;
};

struct Violation {
    std::string invariant;  // stable id, used in signatures
    std::string request;    // may be empty
    std::vector<BlockId> blocks;
    std::string detail;                // one line
    std::string connector = {};        // "store", "p2p"...: whose worker-side access is judged; may be empty
    std::optional<std::int64_t> job = {};  // the store job judged, when it has an id
    std::optional<TokenRange> tokens = {};  // the tokens the judged job writes
    std::optional<int> rank = {};       // the worker rank that acted
};

// "<invariant>[ request=R][ blocks=[..]]: <detail>": the violation's log text and message.
std::string describe(const Violation& violation);

class Checker {
public:
    virtual ~Checker() = default;
    virtual std::string_view name() const = 0;
    // The full sweep, the reference: appends every violation found in the engine's current state.
    virtual void check(const Engine& engine, std::vector<Violation>& out) const = 0;
    // After each step. A checker whose sweep grows with the pool may judge only what the step
    // touched unless `full_sweep`; whenever it reports anything it reports exactly what check()
    // reports, and whatever check() finds it finds by the next full sweep at the latest.
    virtual void check_step(const Engine& engine, std::vector<Violation>& out, bool full_sweep) {
        (void)full_sweep;
        check(engine, out);
    }
};

// The checkers every run uses, in a fixed order.
std::vector<std::unique_ptr<Checker>> make_core_checkers();

}  // namespace kvsim
