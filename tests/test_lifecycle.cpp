#include <catch2/catch.hpp>

#include "corpus_traces.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "properties/checkers/checker.h"
#include "properties/checkers/lifecycle_checker.h"
#include "properties/lifecycle/lifecycle_graph.h"
#include "sim/core/sched/scheduler.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/trace_parser.h"
#include "sim/variant/variant.h"

using namespace kvsim;
using S = LifecycleState;

namespace {

using kvsim::testing::corpus_trace_paths;

}  // namespace

TEST_CASE("the lifecycle graph holds the transitions upstream allows as named edges", "[lifecycle]") {
    const LifecycleGraph& g = LifecycleGraph::upstream();
    // upstream's RequestStatus transitions (properties/lifecycle/lifecycle_graph.cpp), as the model makes them
    const std::vector<std::pair<S, S>> allowed = {
        {S::new_request, S::waiting},
        {S::waiting, S::running},
        {S::preempted, S::running},
        {S::waiting, S::waiting_for_remote_kvs},
        {S::preempted, S::waiting_for_remote_kvs},
        {S::waiting_for_remote_kvs, S::waiting},
        {S::waiting_for_remote_kvs, S::preempted},
        {S::running, S::preempted},
        {S::running, S::finished_length_capped},
        {S::running, S::finished_stopped},
        {S::waiting, S::finished_aborted},
        {S::waiting_for_remote_kvs, S::finished_aborted},
        {S::running, S::finished_aborted},
        {S::preempted, S::finished_aborted},
        {S::preempted, S::finished_length_capped},  // a step in flight under async scheduling
        {S::preempted, S::finished_stopped},
        {S::finished_length_capped, S::freed},
        {S::finished_aborted, S::freed},
        {S::finished_stopped, S::freed},
    };
    for (const auto& [from, to] : allowed) {
        INFO(transition_key(from, to));
        REQUIRE(g.is_edge(from, to));
        REQUIRE(g.find_edge(from, to) != nullptr);
        REQUIRE_FALSE(g.find_edge(from, to)->name.empty());
    }
    const std::vector<std::pair<S, S>> forbidden = {
        {S::new_request, S::running},     {S::waiting_for_remote_kvs, S::running}, {S::running, S::waiting},
        {S::running, S::freed},           {S::waiting, S::freed},                  {S::finished_aborted, S::running},
        {S::finished_aborted, S::finished_length_capped}, {S::freed, S::waiting},  {S::preempted, S::waiting},
        {S::waiting, S::preempted},       {S::new_request, S::freed},
    };
    for (const auto& [from, to] : forbidden) {
        INFO(transition_key(from, to));
        REQUIRE_FALSE(g.is_edge(from, to));
        REQUIRE(g.find_edge(from, to) == nullptr);
    }
    REQUIRE(g.find_edge("WAITING->WAITING_FOR_REMOTE_KVS")->name == "park_async_load");
    REQUIRE(g.find_edge("NEW->WAITING")->name == "add_request");
    REQUIRE(g.find_edge("RUNNING->WAITING") == nullptr);
}

TEST_CASE("lifecycle edges come in a stable order with unique names and keys", "[lifecycle]") {
    const auto& edges = LifecycleGraph::upstream().edges();
    REQUIRE(edges.size() == boost::num_edges(LifecycleGraph::upstream().graph()));
    REQUIRE(edges.front().key == "NEW->WAITING");
    std::set<std::string> names, keys;
    for (std::size_t i = 0; i < edges.size(); ++i) {
        names.insert(edges[i].name);
        keys.insert(edges[i].key);
        REQUIRE(edges[i].key == transition_key(edges[i].from, edges[i].to));
        if (i > 0) REQUIRE(edges[i - 1].from <= edges[i].from);  // by source state
    }
    REQUIRE(names.size() == edges.size());
    REQUIRE(keys.size() == edges.size());
    // the same order every time
    const auto& again = LifecycleGraph::upstream().edges();
    REQUIRE(&again == &edges);
}

TEST_CASE("every lifecycle state is reached from NEW and every live state can reach FREED", "[lifecycle]") {
    const LifecycleGraph& g = LifecycleGraph::upstream();
    const auto from_new = g.reachable_from(S::new_request);
    for (const S s : {S::waiting, S::waiting_for_remote_kvs, S::running, S::preempted, S::finished_stopped,
                      S::finished_length_capped, S::finished_aborted, S::finished_error, S::freed})
        REQUIRE(std::find(from_new.begin(), from_new.end(), s) != from_new.end());
    for (const S s : {S::waiting, S::waiting_for_remote_kvs, S::running, S::preempted}) {
        const auto reach = g.reachable_from(s);
        REQUIRE(std::find(reach.begin(), reach.end(), S::freed) != reach.end());
    }
    REQUIRE(g.reachable_from(S::freed) == std::vector<S>{S::freed});
    REQUIRE(parse_lifecycle_state("WAITING_FOR_REMOTE_KVS") == S::waiting_for_remote_kvs);
    REQUIRE_FALSE(parse_lifecycle_state("SLEEPING").has_value());
}

TEST_CASE("the lifecycle checker fails on a transition that is not an edge", "[lifecycle]") {
    std::vector<Violation> out;
    check_lifecycle_transitions({{"r1", std::nullopt, RequestStatus::waiting},
                                 {"r1", RequestStatus::waiting, RequestStatus::waiting_for_remote_kvs},
                                 {"r1", RequestStatus::waiting_for_remote_kvs, RequestStatus::waiting},
                                 {"r1", RequestStatus::waiting, RequestStatus::running},
                                 {"r1", RequestStatus::running, RequestStatus::finished_length_capped},
                                 {"r1", RequestStatus::finished_length_capped, std::nullopt}},
                                out);
    REQUIRE(out.empty());

    check_lifecycle_transitions({{"r2", RequestStatus::waiting_for_remote_kvs, RequestStatus::running},
                                 {"r3", RequestStatus::running, std::nullopt},
                                 {"r4", RequestStatus::waiting, RequestStatus::finished_aborted}},
                                out);
    REQUIRE(out.size() == 2);
    REQUIRE(out[0].invariant == "lifecycle_transition");
    REQUIRE(out[0].request == "r2");
    REQUIRE_THAT(out[0].detail, Catch::Contains("WAITING_FOR_REMOTE_KVS -> RUNNING"));
    REQUIRE(out[1].request == "r3");
    REQUIRE_THAT(out[1].detail, Catch::Contains("RUNNING -> FREED"));
}

TEST_CASE("the lifecycle checker is one of the core checkers", "[lifecycle]") {
    const auto checkers = make_core_checkers();
    REQUIRE(std::any_of(checkers.begin(), checkers.end(),
                        [](const auto& c) { return c->name() == "lifecycle_checker"; }));
}

TEST_CASE("a run records its lifecycle transitions", "[lifecycle]") {
    const Trace trace = parse_trace_file(std::string(KVSIM_SOURCE_DIR) + "/corpus/examples/01_single_request.trace");
    std::string error;
    const RunResult r = run_trace(trace, *resolve_variant("v0.30.0", &error));
    REQUIRE(r.verdict == Verdict::pass);
    REQUIRE(r.lifecycle_edges == std::set<std::string>{"NEW->WAITING", "WAITING->RUNNING", "RUNNING->FINISHED_LENGTH_CAPPED",
                                                       "FINISHED_LENGTH_CAPPED->FREED"});
}

TEST_CASE("every corpus trace makes only lifecycle edges under each variant it expects", "[lifecycle]") {
    const auto traces = corpus_trace_paths();
    REQUIRE(traces.size() >= 10);
    std::set<std::string> covered;
    int runs = 0;
    for (const auto& path : traces) {
        const Trace trace = parse_trace_file(path);
        for (const auto& expectation : trace.expectations) {
            INFO(path << " under " << expectation.variant);
            std::string error;
            const auto variant = resolve_variant(expectation.variant, &error);
            REQUIRE(variant.has_value());
            const RunResult r = run_trace(trace, *variant);
            ++runs;
            REQUIRE_FALSE(r.internal_error);
            REQUIRE(r.signature != "violation:lifecycle_transition");
            for (const auto& key : r.lifecycle_edges) {
                INFO(key);
                REQUIRE(LifecycleGraph::upstream().find_edge(key) != nullptr);
            }
            covered.insert(r.lifecycle_edges.begin(), r.lifecycle_edges.end());
        }
    }
    REQUIRE(runs >= static_cast<int>(traces.size()));
    for (const char* key : {"NEW->WAITING", "WAITING->RUNNING", "WAITING->WAITING_FOR_REMOTE_KVS", "WAITING_FOR_REMOTE_KVS->WAITING",
                            "RUNNING->PREEMPTED", "PREEMPTED->RUNNING", "RUNNING->FINISHED_LENGTH_CAPPED",
                            "FINISHED_LENGTH_CAPPED->FREED", "RUNNING->FINISHED_ABORTED", "FINISHED_ABORTED->FREED"}) {
        INFO(key);
        REQUIRE(covered.contains(key));
    }
}
