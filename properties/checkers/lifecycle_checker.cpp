#include "properties/checkers/lifecycle_checker.h"

#include <fmt/format.h>

#include "properties/lifecycle/lifecycle_graph.h"
#include "sim/engine/engine.h"

namespace kvsim {

void check_lifecycle_transitions(const std::vector<StatusTransition>& transitions, std::vector<Violation>& out) {
    const LifecycleGraph& graph = LifecycleGraph::upstream();
    for (const StatusTransition& t : transitions) {
        if (graph.is_edge(t)) continue;
        out.push_back({.invariant = std::string(kLifecycleInvariant),
                       .request = t.req_id,
                       .blocks = {},
                       .detail = fmt::format(
                           "{} -> {} is not a transition upstream allows (vllm/v1/request.py RequestStatus)",
                           to_string(from_state(t.from)), to_string(to_state(t.to)))});
    }
}

void LifecycleChecker::check(const Engine& engine, std::vector<Violation>& out) const {
    check_lifecycle_transitions(engine.scheduler().transitions(), out);
}

}  // namespace kvsim
