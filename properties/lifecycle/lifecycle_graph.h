#pragma once
// The request lifecycle as a graph (`kvsim coverage` counts its edges): vertices are the
// request statuses plus two pseudo-states, NEW (before Scheduler.add_request) and FREED (the request
// object deleted, its blocks freed); edges are the transitions upstream allows, each with a name.
// Scheduler::transitions() reports every transition the model makes; an observed transition that
// is not an edge is a lifecycle violation (properties/checkers/lifecycle_checker.h), and the edges a
// corpus exercised are its lifecycle coverage (`kvsim coverage`, the nightly report).
#include <boost/graph/adjacency_list.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/request.h"

namespace kvsim {

struct StatusTransition;

// One vertex per state, in this (stable) order.
enum class LifecycleState {
    new_request,  // NEW: not yet added (StatusTransition::from == nullopt)
    waiting,
    waiting_for_remote_kvs,
    running,
    preempted,
    finished_stopped,
    finished_length_capped,
    finished_aborted,
    finished_ignored,
    finished_error,
    freed,  // FREED: request object deleted (StatusTransition::to == nullopt)
};
inline constexpr int kNumLifecycleStates = 11;

// "NEW", "WAITING", ..., "FINISHED_ABORTED", "FREED" (upstream's RequestStatus names).
std::string_view to_string(LifecycleState state);
std::optional<LifecycleState> parse_lifecycle_state(std::string_view name);
LifecycleState lifecycle_state(RequestStatus status);
// StatusTransition::from: nullopt = NEW; StatusTransition::to: nullopt = FREED.
LifecycleState from_state(const std::optional<RequestStatus>& from);
LifecycleState to_state(const std::optional<RequestStatus>& to);

// "WAITING->RUNNING": the key of a transition (coverage sets, reports, JSON).
std::string transition_key(LifecycleState from, LifecycleState to);

// Vertex and edge bundles of the Boost graph.
struct LifecycleVertex {
    LifecycleState state = LifecycleState::new_request;
};
struct LifecycleEdge {
    std::string name;      // e.g. "park_async_load"
    std::string trigger;   // who makes it upstream, one line
    bool modelled = true;  // false: upstream allows it, but kvsim's model never makes it (no EOS, no grammar errors)
};
using LifecycleGraphType = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, LifecycleVertex,
                                                 LifecycleEdge>;

// One edge, as edges() lists it.
struct LifecycleEdgeInfo {
    LifecycleState from;
    LifecycleState to;
    std::string key;  // transition_key(from, to)
    std::string name;
    std::string trigger;
    bool modelled = true;
};

class LifecycleGraph {
public:
    // The transitions upstream allows, as kvsim's model makes them (lifecycle_graph.cpp; every
    // set_status in sim/core/sched/scheduler.cpp).
    static const LifecycleGraph& upstream();

    bool is_edge(LifecycleState from, LifecycleState to) const;
    bool is_edge(const StatusTransition& transition) const;
    // nullptr when (from, to) is not an edge.
    const LifecycleEdgeInfo* find_edge(LifecycleState from, LifecycleState to) const;
    const LifecycleEdgeInfo* find_edge(std::string_view key) const;
    // Every edge in a stable order: by source state (enum order), then in the order added.
    const std::vector<LifecycleEdgeInfo>& edges() const { return edges_; }
    // States reachable from `start` along edges (breadth-first search), in enum order.
    std::vector<LifecycleState> reachable_from(LifecycleState start) const;
    const LifecycleGraphType& graph() const { return graph_; }

private:
    LifecycleGraph();
    void add(LifecycleState from, LifecycleState to, std::string name, std::string trigger, bool modelled = true);

    LifecycleGraphType graph_;
    std::vector<LifecycleEdgeInfo> edges_;
};

}  // namespace kvsim
