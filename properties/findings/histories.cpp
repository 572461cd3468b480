#include "properties/findings/histories.h"

#include <algorithm>
#include <set>
#include <string>

namespace kvsim {
namespace {

using Events = std::vector<LogEvent>;

// What the scheduler itself does with request `id`: its own events and the P2P scheduler's
// request_finished outcomes, not worker traffic or connector metadata about it.
bool scheduler_event_about(const LogEvent& e, const std::string& id) {
    if (e.request() != id) return false;
    switch (e.category) {
        case EventCategory::arrive: case EventCategory::alloc: case EventCategory::preempt:
        case EventCategory::promote: case EventCategory::lookup: case EventCategory::park:
        case EventCategory::invalid: case EventCategory::finish: case EventCategory::recv_done:
        case EventCategory::send_done: case EventCategory::hold: case EventCategory::free:
        case EventCategory::abort: return true;
        case EventCategory::p2p: {
            const std::string_view action = e.text("action");
            return action == "finished_before_alloc" || action == "not_processed" || action == "length_capped";
        }
        default: return false;
    }
}

bool self_reserved_after_failed_load(const Events& events, const std::string& id) {
    std::size_t promoted_at = events.size();
    for (std::size_t i = 0; i < events.size(); ++i) {
        const LogEvent& e = events[i];
        if (e.request() != id || e.integer("computed") != 0) continue;
        if (e.category == EventCategory::invalid) promoted_at = events.size();
        if (e.category == EventCategory::promote && i > 0) promoted_at = i;
    }
    if (promoted_at == events.size()) return false;
    bool asked_async = false;
    for (std::size_t i = promoted_at + 1; i < events.size(); ++i) {
        const LogEvent& e = events[i];
        if (!scheduler_event_about(e, id)) continue;
        if (e.category != EventCategory::lookup) return false;  // parked, admitted, aborted, finished...: not stuck
        asked_async = asked_async || e.flag("async");
    }
    return asked_async;
}

bool loaded_but_never_promoted(const Events& events, const std::string& id) {
    bool waiting_for_promotion = false;
    for (const LogEvent& e : events) {
        if (e.request() != id) continue;
        if (e.category == EventCategory::recv_done && !e.flag("delayed_free")) waiting_for_promotion = true;
        if (e.category == EventCategory::promote) waiting_for_promotion = false;
    }
    return waiting_for_promotion;
}

int whole_batch_preemptions(const Events& events) {
    int n = 0;
    for (const LogEvent& e : events) {
        if (e.category != EventCategory::schedule) continue;
        const auto* fresh = e.value<CountList>("new");
        const auto* cached = e.value<CountList>("cached");
        const auto* preempted = e.value<NameList>("preempted");
        if (fresh == nullptr || cached == nullptr || preempted == nullptr) continue;
        if (fresh->empty() && cached->empty() && e.integer("tokens") == 0 && !preempted->empty()) ++n;
    }
    return n;
}

std::set<std::string> unfinished_requests(const Trace& t, const Events& events) {
    std::set<std::string> ids;
    for (const Event& e : t.events)
        if (const auto* a = std::get_if<ArriveEvent>(&e.body)) ids.insert(a->request_id);
    for (const LogEvent& e : events)
        if (e.category == EventCategory::free) ids.erase(std::string(e.request()));
    return ids;
}

bool some_unfinished(const Trace& t, const Events& events, bool (*holds)(const Events&, const std::string&)) {
    const auto stuck = unfinished_requests(t, events);
    return std::any_of(stuck.begin(), stuck.end(), [&](const std::string& id) { return holds(events, id); });
}

}  // namespace

bool history_holds(std::string_view name, const Trace& trace, const std::vector<LogEvent>& events) {
    if (name == "self_reserved_after_failed_load") return some_unfinished(trace, events, &self_reserved_after_failed_load);
    if (name == "loaded_but_never_promoted") return some_unfinished(trace, events, &loaded_but_never_promoted);
    if (name == "repeated_whole_batch_preemption") return whole_batch_preemptions(events) >= 2;
    return false;
}

}  // namespace kvsim
