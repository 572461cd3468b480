#pragma once
// Determinism: two replays of one trace under one variant write the same event log, byte for
// byte. Invariant id: log_digest.
#include <cstdint>
#include <optional>
#include <string>

#include "properties/checkers/finding.h"

namespace kvsim {

class DeterminismChecker {
public:
    std::string_view name() const { return "determinism_checker"; }
    // The nondeterminism finding when the replays' logs differ, if any.
    std::optional<Finding> compare(std::uint64_t first_digest, const std::string& first_log,
                                   std::uint64_t second_digest, const std::string& second_log) const;
};

}  // namespace kvsim
