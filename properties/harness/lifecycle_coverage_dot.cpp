// The lifecycle graph with a corpus's coverage, drawn as Graphviz DOT by Boost.Graph.
#include <boost/graph/graphviz.hpp>
#include <fmt/format.h>

#include <algorithm>

#include "properties/harness/lifecycle_coverage.h"

namespace kvsim {
namespace {

void add_edge(LifecycleDotGraph& g, LifecycleState from, LifecycleState to, LifecycleDotEdge edge) {
    boost::add_edge(static_cast<std::size_t>(from), static_cast<std::size_t>(to), std::move(edge), g);
}

LifecycleDotEdge drawn_edge(const LifecycleEdgeInfo& e, int traces, bool upstream_only) {
    if (traces > 0)
        return {e.key, fmt::format("{} x{}", e.name, traces), traces, "solid", "black",
                fmt::format("{:.1f}", 1.0 + 0.5 * std::min(traces, 8))};
    return {e.key, e.name, 0, upstream_only ? "dotted" : "dashed", "gray50", "1.0"};
}

}  // namespace

LifecycleDotGraph lifecycle_coverage_graph(const LifecycleCoverage& coverage) {
    LifecycleDotGraph g(kNumLifecycleStates);
    for (int s = 0; s < kNumLifecycleStates; ++s)
        g[static_cast<std::size_t>(s)].name = std::string(to_string(static_cast<LifecycleState>(s)));
    for (const LifecycleEdgeInfo& e : LifecycleGraph::upstream().edges())
        add_edge(g, e.from, e.to, drawn_edge(e, coverage.traces_of(e.key), !e.modelled));
    for (const auto& [key, traces] : coverage.non_edges) {
        const auto arrow = key.find("->");
        const auto from = parse_lifecycle_state(key.substr(0, arrow));
        const auto to = arrow == std::string::npos ? std::nullopt : parse_lifecycle_state(key.substr(arrow + 2));
        if (from && to)
            add_edge(g, *from, *to, {key, fmt::format("not an edge x{}", traces), traces, "bold", "red", "2.0"});
    }
    return g;
}

boost::dynamic_properties lifecycle_dot_properties(LifecycleDotGraph& g) {
    boost::dynamic_properties dp(boost::ignore_other_properties);
    dp.property("node_id", boost::get(&LifecycleDotVertex::name, g));
    dp.property("key", boost::get(&LifecycleDotEdge::key, g));
    dp.property("label", boost::get(&LifecycleDotEdge::label, g));
    dp.property("weight", boost::get(&LifecycleDotEdge::weight, g));
    dp.property("style", boost::get(&LifecycleDotEdge::style, g));
    dp.property("color", boost::get(&LifecycleDotEdge::color, g));
    dp.property("penwidth", boost::get(&LifecycleDotEdge::penwidth, g));
    return dp;
}

void write_lifecycle_dot(std::ostream& out, const LifecycleCoverage& coverage) {
    LifecycleDotGraph g = lifecycle_coverage_graph(coverage);
    boost::write_graphviz_dp(out, g, lifecycle_dot_properties(g), "node_id");
}

}  // namespace kvsim
