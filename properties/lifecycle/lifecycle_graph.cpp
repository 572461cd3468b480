#include "properties/lifecycle/lifecycle_graph.h"

#include <boost/graph/breadth_first_search.hpp>

#include <algorithm>
#include <stdexcept>

#include "sim/core/sched/scheduler.h"

namespace kvsim {
namespace {

// NEW, then upstream's RequestStatus names in their order, then FREED.
static_assert(static_cast<int>(LifecycleState::waiting) == 1 + static_cast<int>(RequestStatus::waiting));
static_assert(static_cast<int>(LifecycleState::finished_error) == 1 + static_cast<int>(RequestStatus::finished_error));
static_assert(kNumLifecycleStates == kRequestStatusNames.size() + 2);
constexpr EnumNames<LifecycleState, kNumLifecycleStates> kStateNames = [] {
    EnumNames<LifecycleState, kNumLifecycleStates> out{};
    out.front() = {LifecycleState::new_request, "NEW"};
    for (std::size_t i = 0; i < kRequestStatusNames.size(); ++i)
        out[i + 1] = {static_cast<LifecycleState>(i + 1), kRequestStatusNames[i].name};
    out.back() = {LifecycleState::freed, "FREED"};
    return out;
}();

std::size_t vertex_of(LifecycleState state) { return static_cast<std::size_t>(state); }

using Vertex = boost::graph_traits<LifecycleGraphType>::vertex_descriptor;

class ReachVisitor : public boost::default_bfs_visitor {
public:
    explicit ReachVisitor(std::vector<bool>& seen) : seen_(&seen) {}
    void discover_vertex(Vertex v, const LifecycleGraphType&) const { (*seen_)[v] = true; }

private:
    std::vector<bool>* seen_;
};

}  // namespace

std::string_view to_string(LifecycleState state) {
    if (const auto name = find_enum_name(kStateNames, state)) return *name;
    throw std::logic_error("to_string: LifecycleState out of range");
}

std::optional<LifecycleState> parse_lifecycle_state(std::string_view name) { return parse_enum(kStateNames, name); }

LifecycleState lifecycle_state(RequestStatus status) {
    switch (status) {
        case RequestStatus::waiting: return LifecycleState::waiting;
        case RequestStatus::waiting_for_remote_kvs: return LifecycleState::waiting_for_remote_kvs;
        case RequestStatus::running: return LifecycleState::running;
        case RequestStatus::preempted: return LifecycleState::preempted;
        case RequestStatus::finished_stopped: return LifecycleState::finished_stopped;
        case RequestStatus::finished_length_capped: return LifecycleState::finished_length_capped;
        case RequestStatus::finished_aborted: return LifecycleState::finished_aborted;
        case RequestStatus::finished_ignored: return LifecycleState::finished_ignored;
        case RequestStatus::finished_error: return LifecycleState::finished_error;
    }
    throw std::logic_error("lifecycle_state: RequestStatus value is not an enumerator");
}

LifecycleState from_state(const std::optional<RequestStatus>& from) {
    return from ? lifecycle_state(*from) : LifecycleState::new_request;
}

LifecycleState to_state(const std::optional<RequestStatus>& to) {
    return to ? lifecycle_state(*to) : LifecycleState::freed;
}

std::string transition_key(LifecycleState from, LifecycleState to) {
    std::string key(to_string(from));
    key += "->";
    key += to_string(to);
    return key;
}

const LifecycleGraph& LifecycleGraph::upstream() {
    static const LifecycleGraph graph;
    return graph;
}

// RequestStatus in vllm/v1/request.py @ dba83d52c06471eabafba4310718ac7a100cbfa4 and vllm/v1/core/sched/scheduler.py @ 003df2961dd8830c317a61f9745ccd557da9fa06, as the model makes
// the transitions: Scheduler::add_request, schedule_waiting (admit / park), the promotion in
// try_promote_blocked_waiting_request, preempt_request, check_stop, finish_requests, free_blocks.
LifecycleGraph::LifecycleGraph() {
    using S = LifecycleState;
    for (int i = 0; i < kNumLifecycleStates; ++i)
        boost::add_vertex(LifecycleVertex{.state = static_cast<S>(i)}, graph_);

    add(S::new_request, S::waiting, "add_request", "Scheduler.add_request: appended to the waiting queue");

    add(S::waiting, S::running, "schedule_new", "Scheduler.schedule waiting loop: allocate_slots succeeded (new request)");
    add(S::waiting, S::waiting_for_remote_kvs, "park_async_load",
        "Scheduler.schedule: the connector loads asynchronously (load_kv_async); parked in skipped_waiting");
    add(S::waiting, S::finished_aborted, "abort_waiting", "Scheduler.finish_requests(FINISHED_ABORTED) on a waiting request");
    add(S::waiting, S::finished_error, "error_waiting",
        "Scheduler.finish_requests(FINISHED_ERROR): KV-load failure policy=fail, grammar error", false);

    add(S::waiting_for_remote_kvs, S::waiting, "promote",
        "Scheduler.schedule: id in finished_recving_kv_req_ids, _update_waiting_for_remote_kv (num_preemptions == 0)");
    add(S::waiting_for_remote_kvs, S::preempted, "promote_preempted",
        "Scheduler.schedule: id in finished_recving_kv_req_ids, _update_waiting_for_remote_kv (num_preemptions > 0)");
    add(S::waiting_for_remote_kvs, S::finished_aborted, "abort_waiting_for_remote_kvs",
        "Scheduler.finish_requests(FINISHED_ABORTED) while the load is in flight or done");
    add(S::waiting_for_remote_kvs, S::finished_error, "error_waiting_for_remote_kvs",
        "update_from_output -> finish_requests(FINISHED_ERROR): an async load failed, kv_load_failure_policy=fail");

    add(S::running, S::preempted, "preempt", "Scheduler._preempt_request: allocate_slots failed in the running loop");
    add(S::running, S::finished_stopped, "stop", "update_from_output -> check_stop: EOS (a trace's @N stop)");
    add(S::running, S::finished_length_capped, "length_capped",
        "update_from_output -> check_stop: max_tokens or max_model_len reached");
    add(S::running, S::finished_aborted, "abort_running", "Scheduler.finish_requests(FINISHED_ABORTED) on a running request");
    add(S::running, S::finished_error, "error_running",
        "update_from_output -> finish_requests(FINISHED_ERROR): a sync load failed, kv_load_failure_policy=fail");

    add(S::preempted, S::running, "schedule_resumed", "Scheduler.schedule waiting loop: allocate_slots succeeded (resumed)");
    add(S::preempted, S::waiting_for_remote_kvs, "park_async_load_resumed",
        "Scheduler.schedule: a preempted request's external hit loads asynchronously again");
    add(S::preempted, S::finished_aborted, "abort_preempted", "Scheduler.finish_requests(FINISHED_ABORTED) on a preempted request");
    add(S::preempted, S::finished_error, "error_preempted", "Scheduler.finish_requests(FINISHED_ERROR)", false);
    // Async scheduling: the output of a step dispatched before the request was preempted arrives later and
    // stops it (vllm/v1/core/sched/scheduler.py Scheduler.update_from_output, stopped_preempted_reqs @
    // 00024d314514900f361ad072af6931e403b7f589).
    add(S::preempted, S::finished_stopped, "stop_preempted",
        "update_from_output -> check_stop on an in-flight step's output after preemption (stopped_preempted_reqs)");
    add(S::preempted, S::finished_length_capped, "length_capped_preempted",
        "update_from_output -> check_stop on an in-flight step's output after preemption (stopped_preempted_reqs)");

    add(S::finished_stopped, S::freed, "free_stopped", "Scheduler._free_blocks (at once or after a delayed free)");
    add(S::finished_length_capped, S::freed, "free_length_capped",
        "Scheduler._free_blocks: at once, or on finished_sending after a delayed free");
    add(S::finished_aborted, S::freed, "free_aborted",
        "Scheduler._free_blocks: at once, or on finished_recving / finished_sending after a delayed free");
    add(S::finished_error, S::freed, "free_error",
        "Scheduler._free_blocks: at once, or on finished_recving / finished_sending after a delayed free");

    auto [first, last] = boost::edges(graph_);
    for (auto it = first; it != last; ++it) {
        const LifecycleEdge& e = graph_[*it];
        const S from = graph_[boost::source(*it, graph_)].state;
        const S to = graph_[boost::target(*it, graph_)].state;
        edges_.push_back({.from = from,
                          .to = to,
                          .key = transition_key(from, to),
                          .name = e.name,
                          .trigger = e.trigger,
                          .modelled = e.modelled});
    }
}

void LifecycleGraph::add(LifecycleState from, LifecycleState to, std::string name, std::string trigger, bool modelled) {
    if (is_edge(from, to)) throw std::logic_error("LifecycleGraph: duplicate edge " + transition_key(from, to));
    boost::add_edge(vertex_of(from), vertex_of(to),
                    LifecycleEdge{.name = std::move(name), .trigger = std::move(trigger), .modelled = modelled}, graph_);
}

bool LifecycleGraph::is_edge(LifecycleState from, LifecycleState to) const {
    return boost::edge(vertex_of(from), vertex_of(to), graph_).second;
}

bool LifecycleGraph::is_edge(const StatusTransition& transition) const {
    return is_edge(from_state(transition.from), to_state(transition.to));
}

const LifecycleEdgeInfo* LifecycleGraph::find_edge(LifecycleState from, LifecycleState to) const {
    const auto it = std::find_if(edges_.begin(), edges_.end(),
                                 [&](const LifecycleEdgeInfo& e) { return e.from == from && e.to == to; });
    return it == edges_.end() ? nullptr : &*it;
}

const LifecycleEdgeInfo* LifecycleGraph::find_edge(std::string_view key) const {
    const auto it = std::find_if(edges_.begin(), edges_.end(), [&](const LifecycleEdgeInfo& e) { return e.key == key; });
    return it == edges_.end() ? nullptr : &*it;
}

std::vector<LifecycleState> LifecycleGraph::reachable_from(LifecycleState start) const {
    std::vector<bool> seen(boost::num_vertices(graph_), false);
    boost::breadth_first_search(graph_, vertex_of(start), boost::visitor(ReachVisitor(seen)));
    std::vector<LifecycleState> out;
    for (std::size_t v = 0; v < seen.size(); ++v)
        if (seen[v]) out.push_back(graph_[v].state);
    return out;
}

}  // namespace kvsim
