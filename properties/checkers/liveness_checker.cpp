#include "properties/checkers/liveness_checker.h"

#include <algorithm>

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

std::optional<Finding> LivenessChecker::check_stalled(const Engine& engine, int step, int max_steps,
                                                      int stall_steps) const {
    std::optional<Finding> f = check_at_step_limit(engine, max_steps);
    f->step = step;
    f->facts.push_back(Field{.key = "stalled", .kind = FieldKind::integer, .value = std::int64_t{stall_steps}});
    return f;
}

bool StallWatch::stalled(const Engine& engine, int step) {
    if (!engine.events_exhausted()) {
        best_.reset();
        last_progress_step_ = step;
        return false;
    }
    Progress now{.left = engine.scheduler().requests().size()};
    for (const auto& [id, req] : engine.scheduler().requests()) {
        now.unfinished += is_finished(req->status) ? 0 : 1;
        now.output_tokens += req->num_output_tokens();
    }
    if (!best_ || now.left < best_->left) {
        // a request that left took its tokens with it: the high-water mark starts again from here
        if (best_) now.unfinished = std::min(now.unfinished, best_->unfinished);
        best_ = now;
    } else if (now.unfinished < best_->unfinished || now.output_tokens > best_->output_tokens) {
        best_->unfinished = std::min(now.unfinished, best_->unfinished);
        best_->output_tokens = std::max(now.output_tokens, best_->output_tokens);
    } else {
        return step - last_progress_step_ >= limit_;
    }
    last_progress_step_ = step;
    return false;
}

}  // namespace kvsim
