#include "properties/checkers/liveness_checker.h"

#include "sim/engine/engine.h"

namespace kvsim {

std::optional<Finding> LivenessChecker::check_at_step_limit(const Engine& engine, int max_steps) const {
    int unfinished = 0;
    for (const auto& [id, req] : engine.scheduler().requests()) unfinished += is_finished(req->status) ? 0 : 1;
    const int alive = static_cast<int>(engine.scheduler().requests().size());
    Finding f;
    f.kind = FindingKind::liveness;
    f.id = unfinished > 0 ? "requests_not_finished" : "blocks_not_released";
    f.step = max_steps;
    f.facts.push_back(Field{.key = "max_steps", .kind = FieldKind::integer, .value = std::int64_t{max_steps}});
    f.facts.push_back(Field{.key = "unfinished", .kind = FieldKind::integer, .value = std::int64_t{unfinished}});
    f.facts.push_back(
        Field{.key = "held", .kind = FieldKind::integer, .value = std::int64_t{alive - unfinished}});
    return f;
}

}  // namespace kvsim
