#include "properties/checkers/determinism_checker.h"

#include <fmt/format.h>

namespace kvsim {

std::optional<Finding> DeterminismChecker::compare(std::uint64_t first_digest, const std::string& first_log,
                                                   std::uint64_t second_digest, const std::string& second_log) const {
    if (first_digest == second_digest && first_log == second_log) return std::nullopt;
    Finding f;
    f.kind = FindingKind::nondeterminism;
    f.id = "log_digest";
    // 64-bit digests, as the verdict line shows them (16 hex digits).
    f.facts.push_back(
        Field{.key = "first_digest", .kind = FieldKind::text, .value = fmt::format("{:016x}", first_digest)});
    f.facts.push_back(
        Field{.key = "second_digest", .kind = FieldKind::text, .value = fmt::format("{:016x}", second_digest)});
    return f;
}

}  // namespace kvsim
