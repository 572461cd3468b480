#pragma once
// Every request status transition the scheduler made in the last step is an edge of the
// request lifecycle graph (properties/lifecycle/lifecycle_graph.h: upstream's RequestStatus
// transitions). Invariant id: lifecycle_transition.
#include <vector>

#include "properties/checkers/checker.h"

namespace kvsim {

struct StatusTransition;

inline constexpr std::string_view kLifecycleInvariant = "lifecycle_transition";

// Appends one lifecycle_transition violation per transition that is not an edge.
void check_lifecycle_transitions(const std::vector<StatusTransition>& transitions, std::vector<Violation>& out);

class LifecycleChecker : public Checker {
public:
    std::string_view name() const override { return "lifecycle_checker"; }
    void check(const Engine& engine, std::vector<Violation>& out) const override;
};

}  // namespace kvsim
