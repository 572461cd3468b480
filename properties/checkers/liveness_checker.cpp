#include "properties/checkers/liveness_checker.h"

#include <algorithm>

#include "sim/engine/engine.h"

namespace kvsim {

std::optional<Finding> LivenessChecker::check_at_step_limit(const Engine& engine, int max_steps) const {
    int unfinished = 0;
    for (const auto& [id, req] : engine.scheduler().requests()) unfinished += is_finished(req->status) ? 0 : 1;
    const int alive = static_cast<int>(engine.scheduler().requests().size());
    // nothing left to drain: only a batch without requests in flight (async scheduling's last step)
    if (alive == 0 && !engine.connector_busy()) return std::nullopt;
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
    if (!f) return f;
    f->step = step;
    f->facts.push_back(Field{.key = "stalled", .kind = FieldKind::integer, .value = std::int64_t{stall_steps}});
    return f;
}

bool StallWatch::progressed(const Engine& engine) {
    Progress now{.left = engine.scheduler().requests().size()};
    for (const auto& [id, req] : engine.scheduler().requests()) {
        now.unfinished += is_finished(req->status) ? 0 : 1;
        now.output_tokens += req->num_output_tokens();
    }
    if (!best_ || now.left < best_->left) {
        // a request that left took its tokens with it: the high-water mark starts again from here
        if (best_) now.unfinished = std::min(now.unfinished, best_->unfinished);
        best_ = now;
        return true;
    }
    if (now.unfinished < best_->unfinished || now.output_tokens > best_->output_tokens) {
        best_->unfinished = std::min(now.unfinished, best_->unfinished);
        best_->output_tokens = std::max(now.output_tokens, best_->output_tokens);
        return true;
    }
    return false;
}

bool StallWatch::computed_further(const Engine& engine) {
    bool further = false;
    for (const auto& [id, req] : engine.scheduler().requests()) {
        int& most = computed_[id];
        if (req->num_computed_tokens <= most) continue;
        most = req->num_computed_tokens;
        further = true;
    }
    return further;
}

bool StallWatch::stalled(const Engine& engine, int step) {
    // the high-water marks follow every step, from the first: a recomputation never counts
    const bool computed = idle_limit_ > 0 && computed_further(engine);
    if (!engine.events_exhausted()) {
        best_.reset();
        last_progress_step_ = step;
        last_busy_step_ = step;
        return false;
    }
    const bool progress = progressed(engine);
    if (progress) last_progress_step_ = step;
    if (idle_limit_ > 0) {
        const FaultSchedule& faults = engine.faults();
        const bool fault_acted = faults.in_effect() || faults.fired() != faults_fired_;
        faults_fired_ = faults.fired();
        if (progress || computed || fault_acted) last_busy_step_ = step;
        if (step - last_busy_step_ >= idle_limit_) {
            spent_ = idle_limit_;
            return true;
        }
    }
    if (limit_ > 0 && step - last_progress_step_ >= limit_) {
        spent_ = limit_;
        return true;
    }
    return false;
}

}  // namespace kvsim
