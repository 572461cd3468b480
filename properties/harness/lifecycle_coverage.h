#pragma once
// Lifecycle coverage of a set of traces: which request lifecycle edges
// (properties/lifecycle/lifecycle_graph.h) their runs exercise, which they never reach, and any
// transition that is not an edge at all. `kvsim coverage` prints it.
#include <boost/graph/adjacency_list.hpp>
#include <boost/property_map/dynamic_property_map.hpp>

#include <map>
#include <ostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "properties/lifecycle/lifecycle_graph.h"
#include "sim/variant/variant.h"

namespace kvsim {

struct TraceFiles {
    std::vector<std::string> files;  // sorted, without duplicates
    std::set<std::string> named;     // the files named as such, not found under a directory
    std::string missing;             // the first path that is neither a directory nor a file (empty: none)
};

// The files under `paths` (directories searched recursively): *.trace only, or every regular
// file when any_name is set (fuzzer corpora).
TraceFiles find_trace_files(const std::vector<std::string>& paths, bool any_name);

struct LifecycleCoverage {
    int files = 0;
    int traces_run = 0;
    int rejected = 0;         // not a valid trace
    int without_variant = 0;  // no fixed variant, no run variant, no expect line
    std::map<std::string, int> verdicts;     // verdict (or "internal-error") -> traces
    std::map<std::string, int> edge_traces;  // transition key -> traces that made it
    std::vector<std::string> rejected_examples;  // the first few parse errors

    // Edges of LifecycleGraph::upstream(), in its order.
    int edges_modelled = 0;
    std::vector<const LifecycleEdgeInfo*> exercised;      // modelled, made by a trace
    std::vector<const LifecycleEdgeInfo*> mislabelled;    // made by a trace although marked upstream only
    std::vector<const LifecycleEdgeInfo*> never_reached;  // modelled, made by no trace
    std::vector<const LifecycleEdgeInfo*> not_modelled;   // upstream only, made by no trace
    std::vector<std::pair<std::string, int>> non_edges;   // transitions that are not edges -> traces

    int traces_of(const std::string& key) const;
};

// Runs every file under `fixed_variant`, else under the trace's run variant, else its first
// expect line's variant; files that do not parse are counted as rejected, except a file in
// `named`, which throws its InputError (as do a named file without a variant).
LifecycleCoverage measure_lifecycle_coverage(const std::vector<std::string>& files,
                                             const std::optional<Variant>& fixed_variant,
                                             const std::set<std::string>& named = {});

// `variant_flag` is the variant every trace was run under, empty when each chose its own.
nlohmann::ordered_json coverage_json(const LifecycleCoverage& coverage, const std::string& variant_flag);
std::string render_coverage(const LifecycleCoverage& coverage, const std::string& variant_flag);

// The lifecycle graph drawn (`kvsim coverage --dot`): a vertex per state, named by it; an edge per
// lifecycle edge, exercised ones solid and weighted by the traces that made them, unreached ones
// dashed (dotted: upstream only), transitions that are not edges bold red.
struct LifecycleDotVertex {
    std::string name;
};
struct LifecycleDotEdge {
    std::string key;  // "FROM->TO"
    std::string label;
    int weight = 0;  // traces that made it
    std::string style;
    std::string color;
    std::string penwidth;
};
using LifecycleDotGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, LifecycleDotVertex, LifecycleDotEdge>;
LifecycleDotGraph lifecycle_coverage_graph(const LifecycleCoverage& coverage);
// The graph's Graphviz attributes (node_id is the state's name), for write_graphviz_dp and read_graphviz.
boost::dynamic_properties lifecycle_dot_properties(LifecycleDotGraph& graph);
// Boost.Graph's write_graphviz_dp over lifecycle_coverage_graph.
void write_lifecycle_dot(std::ostream& out, const LifecycleCoverage& coverage);

}  // namespace kvsim
