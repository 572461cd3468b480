#include "fuzz/minimize/minimize.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <new>
#include <set>
#include <utility>
#include <vector>

#include "properties/harness/run_trace.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_builder.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"
#include "sim/trace/trace_schema.h"

namespace kvsim {
namespace {

// The events without those flagged in `drop`; an arrive takes every other event naming its
// request along, so that the references stay valid.
std::vector<Event> drop_events(const std::vector<Event>& events, const std::vector<bool>& drop) {
    std::set<std::string> gone;
    for (std::size_t i = 0; i < events.size(); ++i)
        if (drop[i])
            if (const auto* arrive = std::get_if<ArriveEvent>(&events[i].body)) gone.insert(arrive->request_id);
    std::vector<Event> out;
    for (std::size_t i = 0; i < events.size(); ++i) {
        if (drop[i]) continue;
        const Event& e = events[i];
        if (const std::string* id = event_request_id(e.body);
            id != nullptr && !std::holds_alternative<ArriveEvent>(e.body) && gone.contains(*id))
            continue;
        out.push_back(e);
    }
    return out;
}

std::set<std::string> used_segments(const Trace& t) {
    std::set<std::string> used;
    for (const auto& e : t.events)
        if (const auto* arrive = std::get_if<ArriveEvent>(&e.body)) used.insert(arrive->prompt.begin(), arrive->prompt.end());
    for (const auto& s : t.store) used.insert(s.prefix.begin(), s.prefix.end());
    return used;
}

// A number in the trace, moved toward `target` (a lower bound, a default, or the previous
// event's step). Bools are knobs with values 0 and 1.
struct Knob {
    std::function<std::int64_t(const Trace&)> get;
    std::function<void(Trace&, std::int64_t)> set;
    std::int64_t target = 0;
};

template <class T>
Knob int_knob(std::function<T&(Trace&)> field, std::int64_t target) {
    Knob k;
    k.get = [field](const Trace& t) { return static_cast<std::int64_t>(field(const_cast<Trace&>(t))); };
    k.set = [field](Trace& t, std::int64_t v) { field(t) = static_cast<T>(v); };
    k.target = target;
    return k;
}

Knob bool_knob(std::function<bool&(Trace&)> field, bool target) {
    Knob k;
    k.get = [field](const Trace& t) -> std::int64_t { return field(const_cast<Trace&>(t)) ? 1 : 0; };
    k.set = [field](Trace& t, std::int64_t v) { field(t) = v != 0; };
    k.target = target ? 1 : 0;
    return k;
}

class Minimizer {
public:
    Minimizer(const Variant& variant, std::string signature, const MinimizeOptions& options)
        : variant_(variant), signature_(std::move(signature)), options_(options) {
        run_options_.check_determinism = signature_.rfind("nondeterminism:", 0) == 0;
        liveness_ = signature_.rfind("liveness:", 0) == 0;
    }

    Trace run(const Trace& input) {
        stats_.events_before = input.events.size();
        stats_.bytes_before = print_trace(input).size();
        best_ = input;
        if (!signature_.empty() && interesting(best_)) {
            stats_.reproduced = true;
            best_.expectations.clear();  // expect lines never influence a run
            while (stats_.rounds < options_.max_rounds && budget_left()) {
                ++stats_.rounds;
                bool progress = false;
                progress |= pass_events();
                progress |= pass_connectors();
                progress |= pass_store();
                progress |= pass_segments();
                progress |= pass_workers();
                progress |= pass_knobs(boolean_knobs());
                progress |= pass_knobs(number_knobs());
                progress |= pass_names();
                if (!progress) break;
            }
            stats_.budget_exhausted = !budget_left();
        } else {
            best_ = input;
        }
        stats_.events_after = best_.events.size();
        stats_.bytes_after = print_trace(best_).size();
        if (options_.stats != nullptr) *options_.stats = stats_;
        return best_;
    }

private:
    bool budget_left() const { return stats_.runs < options_.max_runs; }

    bool interesting(const Trace& t) {
        if (!budget_left()) return false;
        try {
            validate_trace(t);
        } catch (const InputError&) {
            return false;
        }
        ++stats_.runs;
        try {
            const RunResult r = run_trace(t, variant_, run_options_);
            return !r.internal_error && r.signature == signature_ && (!options_.also_keep || options_.also_keep(t, r));
        } catch (const std::bad_alloc&) {
            throw;  // out of memory is the process's, not the candidate's (kvsim's main exits 71)
        } catch (const std::exception&) {
            return false;
        }
    }

    bool try_accept(Trace candidate) {
        if (candidate == best_ || !interesting(candidate)) return false;
        best_ = std::move(candidate);
        ++stats_.accepted;
        return true;
    }

    // ddmin over the event list: chunks of n/2, n/4, ..., 1 events.
    bool pass_events() {
        bool progress = false;
        std::size_t chunk = std::max<std::size_t>(1, best_.events.size() / 2);
        while (!best_.events.empty() && budget_left()) {
            for (std::size_t start = 0; start < best_.events.size() && budget_left();) {
                std::vector<bool> drop(best_.events.size(), false);
                for (std::size_t i = start; i < std::min(start + chunk, drop.size()); ++i) drop[i] = true;
                Trace candidate = best_;
                candidate.events = drop_events(best_.events, drop);
                if (try_accept(std::move(candidate)))
                    progress = true;
                else
                    start += chunk;
            }
            if (chunk == 1) break;
            chunk /= 2;
        }
        return progress;
    }

    // Drop a connector with everything that needs it: store lines and store faults, remote
    // flags no remaining connector serves, load faults when no connector is left.
    bool pass_connectors() {
        bool progress = false;
        for (std::size_t i = best_.connectors.size(); i-- > 0 && budget_left();) {
            if (i >= best_.connectors.size()) continue;
            Trace c = best_;
            c.connectors.erase(c.connectors.begin() + static_cast<std::ptrdiff_t>(i));
            if (c.connectors.empty()) c.multi.reset();
            if (!std::any_of(c.connectors.begin(), c.connectors.end(),
                             [](const ConnectorSpec& spec) { return spec.kind == kConnectorStore; }))
                c.store.clear();
            std::vector<bool> drop(c.events.size(), false);
            for (std::size_t e = 0; e < c.events.size(); ++e) {
                if (auto* arrive = std::get_if<ArriveEvent>(&c.events[e].body)) {
                    arrive->remote_prefill = arrive->remote_prefill && accepts_remote_prefill(c.connectors);
                    arrive->remote_decode = arrive->remote_decode && accepts_remote_decode(c.connectors);
                } else if (const auto* fault = std::get_if<FaultEvent>(&c.events[e].body)) {
                    drop[e] = !connectors_take_fault(c.connectors, fault->kind);
                }
            }
            c.events = drop_events(c.events, drop);
            progress |= try_accept(std::move(c));
        }
        return progress;
    }

    bool pass_store() {
        bool progress = false;
        for (std::size_t i = best_.store.size(); i-- > 0 && budget_left();) {
            if (i >= best_.store.size()) continue;
            Trace c = best_;
            c.store.erase(c.store.begin() + static_cast<std::ptrdiff_t>(i));
            progress |= try_accept(std::move(c));
        }
        return progress;
    }

    bool pass_segments() {
        bool progress = false;
        // Segments nothing names (their tokens come from their own name: no effect on the run).
        {
            const auto used = used_segments(best_);
            Trace c = best_;
            std::erase_if(c.segments, [&](const Segment& s) { return !used.contains(s.name); });
            progress |= try_accept(std::move(c));
        }
        // One segment less in a prompt or a store prefix.
        for (std::size_t e = 0; e < best_.events.size() && budget_left(); ++e) {
            if (!std::holds_alternative<ArriveEvent>(best_.events[e].body)) continue;
            for (std::size_t j = std::get<ArriveEvent>(best_.events[e].body).prompt.size(); j-- > 0 && budget_left();) {
                auto& prompt = std::get<ArriveEvent>(best_.events[e].body).prompt;
                if (prompt.size() <= 1 || j >= prompt.size()) continue;
                Trace c = best_;
                auto& p = std::get<ArriveEvent>(c.events[e].body).prompt;
                p.erase(p.begin() + static_cast<std::ptrdiff_t>(j));
                progress |= try_accept(std::move(c));
            }
        }
        for (std::size_t s = 0; s < best_.store.size() && budget_left(); ++s) {
            for (std::size_t j = best_.store[s].prefix.size(); j-- > 0 && budget_left();) {
                if (best_.store[s].prefix.size() <= 1 || j >= best_.store[s].prefix.size()) continue;
                Trace c = best_;
                c.store[s].prefix.erase(c.store[s].prefix.begin() + static_cast<std::ptrdiff_t>(j));
                progress |= try_accept(std::move(c));
            }
        }
        // Explicit token lists become generated segments of the same length (len=N reads better).
        for (std::size_t s = 0; s < best_.segments.size() && budget_left(); ++s) {
            if (best_.segments[s].generated) continue;
            Trace c = best_;
            Segment& seg = c.segments[s];
            seg.tokens = generated_segment_tokens(seg.name, static_cast<int>(seg.tokens.size()));
            seg.generated = true;
            progress |= try_accept(std::move(c));
        }
        return progress;
    }

    bool pass_workers() {
        if (best_.workers == WorkerConfig{}) return false;
        Trace c = best_;
        c.workers = WorkerConfig{};
        return try_accept(std::move(c));
    }

    std::vector<Knob> boolean_knobs() const {
        std::vector<Knob> knobs;
        const EngineConfig engine_defaults;
        knobs.push_back(bool_knob([](Trace& t) -> bool& { return t.engine.chunked_prefill; }, engine_defaults.chunked_prefill));
        knobs.push_back(bool_knob([](Trace& t) -> bool& { return t.engine.prefix_caching; }, engine_defaults.prefix_caching));
        knobs.push_back(bool_knob([](Trace& t) -> bool& { return t.engine.reserve_full_isl; }, engine_defaults.reserve_full_isl));
        const ConnectorSpec cd;
        for (std::size_t i = 0; i < best_.connectors.size(); ++i) {
            knobs.push_back(bool_knob([i](Trace& t) -> bool& { return t.connectors[i].load_async; }, cd.load_async));
            knobs.push_back(bool_knob([i](Trace& t) -> bool& { return t.connectors[i].lookup_async; }, cd.lookup_async));
            knobs.push_back(bool_knob([i](Trace& t) -> bool& { return t.connectors[i].enable_lookup; }, cd.enable_lookup));
            knobs.push_back(bool_knob([i](Trace& t) -> bool& { return t.connectors[i].save_decode_cache; }, cd.save_decode_cache));
        }
        for (std::size_t e = 0; e < best_.events.size(); ++e) {
            if (!std::holds_alternative<ArriveEvent>(best_.events[e].body)) continue;
            knobs.push_back(bool_knob([e](Trace& t) -> bool& { return std::get<ArriveEvent>(t.events[e].body).remote_prefill; }, false));
            knobs.push_back(bool_knob([e](Trace& t) -> bool& { return std::get<ArriveEvent>(t.events[e].body).remote_decode; }, false));
        }
        return knobs;
    }

    // The pool, with max_model_len coming down to what it holds (upstream's KV cache check,
    // sim/trace/config_rules.h): a smaller pool is otherwise a configuration upstream refuses.
    static Knob pool_knob() {
        Knob k = int_knob<int>([](Trace& t) -> int& { return t.engine.num_blocks; }, 2);
        k.set = [](Trace& t, std::int64_t v) {
            t.engine.num_blocks = static_cast<int>(v);
            fit_upstream_limits(t.engine, trace_min_model_len(t));
        };
        return k;
    }

    // max_model_len, toward the shortest that holds every prompt and store prefix.
    Knob model_len_knob() const {
        Knob k = int_knob<int>([](Trace& t) -> int& { return t.engine.max_model_len; }, trace_min_model_len(best_));
        k.set = [](Trace& t, std::int64_t v) {
            t.engine.max_model_len = static_cast<int>(v);
            t.engine.max_batched_tokens = batch_budget(t.engine.chunked_prefill, t.engine.max_batched_tokens,
                                                       t.engine.max_model_len);
        };
        return k;
    }

    std::vector<Knob> number_knobs() const {
        std::vector<Knob> knobs;
        // Events first: all of them earlier at once, then each one toward the previous event's step.
        if (!best_.events.empty()) {
            Knob shift;
            shift.get = [](const Trace& t) -> std::int64_t { return t.events.front().step; };
            shift.set = [](Trace& t, std::int64_t v) {
                const int delta = t.events.front().step - static_cast<int>(v);
                for (auto& e : t.events) e.step -= delta;
            };
            shift.target = 0;
            knobs.push_back(shift);
        }
        for (std::size_t e = 0; e < best_.events.size(); ++e) {
            const int previous = e == 0 ? 0 : best_.events[e - 1].step;
            knobs.push_back(int_knob<int>([e](Trace& t) -> int& { return t.events[e].step; }, previous));
            const EventBody& body = best_.events[e].body;
            if (std::holds_alternative<ArriveEvent>(body)) {
                knobs.push_back(int_knob<int>([e](Trace& t) -> int& { return std::get<ArriveEvent>(t.events[e].body).max_tokens; }, 1));
            } else if (const auto* fault = std::get_if<FaultEvent>(&body)) {
                if (fault->kind == FaultKind::store_delay || fault->kind == FaultKind::lookup_pending)
                    knobs.push_back(int_knob<int>([e](Trace& t) -> int& { return std::get<FaultEvent>(t.events[e].body).steps; }, 1));
                if (fault->kind == FaultKind::store_delay || fault->kind == FaultKind::store_fail)
                    knobs.push_back(int_knob<int>([e](Trace& t) -> int& { return std::get<FaultEvent>(t.events[e].body).rank; }, 0));
            }
        }
        for (std::size_t s = 0; s < best_.segments.size(); ++s) {
            Knob len;
            len.get = [s](const Trace& t) -> std::int64_t { return static_cast<std::int64_t>(t.segments[s].tokens.size()); };
            len.set = [s](Trace& t, std::int64_t v) {
                Segment& seg = t.segments[s];
                if (seg.generated)
                    seg.tokens = generated_segment_tokens(seg.name, static_cast<int>(v));
                else
                    seg.tokens.resize(static_cast<std::size_t>(v));
            };
            len.target = 1;
            knobs.push_back(len);
        }
        for (std::size_t i = 0; i < best_.connectors.size(); ++i)
            if (best_.connectors[i].kind == kConnectorStandIn)
                knobs.push_back(int_knob<int>([i](Trace& t) -> int& { return t.connectors[i].load_delay; }, ConnectorSpec{}.load_delay));
        // A liveness finding keeps its pool: too few blocks would starve a request for good
        // and manufacture the finding.
        if (!liveness_) knobs.push_back(pool_knob());
        knobs.push_back(model_len_knob());
        knobs.push_back(int_knob<int>([](Trace& t) -> int& { return t.engine.long_prefill_threshold; }, 0));
        if (!liveness_) knobs.push_back(int_knob<int>([](Trace& t) -> int& { return t.run.max_steps; }, 1));
        const WorkerConfig wd;
        knobs.push_back(int_knob<int>([](Trace& t) -> int& { return t.workers.ranks; }, wd.ranks));
        knobs.push_back(int_knob<int>([](Trace& t) -> int& { return t.workers.store_delay_min; }, wd.store_delay_min));
        knobs.push_back(int_knob<int>([](Trace& t) -> int& { return t.workers.store_delay_max; }, wd.store_delay_max));
        knobs.push_back(int_knob<int>([](Trace& t) -> int& { return t.workers.load_delay_min; }, wd.load_delay_min));
        knobs.push_back(int_knob<int>([](Trace& t) -> int& { return t.workers.load_delay_max; }, wd.load_delay_max));
        knobs.push_back(int_knob<int>([](Trace& t) -> int& { return t.workers.pull_delay; }, wd.pull_delay));
        return knobs;
    }

    // Each knob: its target outright, else the smallest value toward it found by halving
    // the distance (the current value is known to keep the signature).
    bool pass_knobs(const std::vector<Knob>& knobs) {
        bool progress = false;
        for (const Knob& knob : knobs) {
            if (!budget_left()) break;
            const std::int64_t value = knob.get(best_);
            if (value == knob.target) continue;
            Trace c = best_;
            knob.set(c, knob.target);
            if (try_accept(std::move(c))) {
                progress = true;
                continue;
            }
            if (value < knob.target) continue;  // below a default: only the default itself is tried
            std::int64_t bad = knob.target, good = value;
            while (good - bad > 1 && budget_left()) {
                const std::int64_t mid = bad + (good - bad) / 2;
                Trace m = best_;
                knob.set(m, mid);
                if (try_accept(std::move(m))) {
                    good = mid;
                    progress = true;
                } else {
                    bad = mid;
                }
            }
        }
        return progress;
    }

    // Short names for long ones: requests r1, r2... in arrival order, segments s1, s2...
    // Tried once each (a generated segment's tokens come from its name, so a rename may lose
    // the finding).
    bool pass_names() {
        bool progress = false;
        if (!renamed_requests_) {
            renamed_requests_ = true;
            std::vector<std::string> ids;
            for (const auto& e : best_.events)
                if (const auto* a = std::get_if<ArriveEvent>(&e.body)) ids.push_back(a->request_id);
            const bool long_names = std::any_of(ids.begin(), ids.end(), [](const std::string& id) { return id.size() > 8; });
            if (long_names) {
                std::map<std::string, std::string> new_name;
                for (std::size_t i = 0; i < ids.size(); ++i) new_name[ids[i]] = "r" + std::to_string(i + 1);
                Trace c = best_;
                for (auto& e : c.events)
                    if (std::string* id = event_request_id(e.body)) *id = new_name.at(*id);
                progress |= try_accept(std::move(c));
            }
        }
        if (!renamed_segments_) {
            renamed_segments_ = true;
            const bool long_names = std::any_of(best_.segments.begin(), best_.segments.end(),
                                                [](const Segment& s) { return s.name.size() > 12; });
            if (long_names) {
                std::map<std::string, std::string> new_name;
                for (std::size_t i = 0; i < best_.segments.size(); ++i) new_name[best_.segments[i].name] = "s" + std::to_string(i + 1);
                Trace c = best_;
                for (auto& seg : c.segments) {
                    seg.name = new_name.at(seg.name);
                    if (seg.generated) seg.tokens = generated_segment_tokens(seg.name, static_cast<int>(seg.tokens.size()));
                }
                auto map_names = [&](std::vector<std::string>& names) {
                    for (auto& n : names) n = new_name.contains(n) ? new_name.at(n) : n;
                };
                for (auto& e : c.events)
                    if (auto* a = std::get_if<ArriveEvent>(&e.body)) map_names(a->prompt);
                for (auto& s : c.store) map_names(s.prefix);
                progress |= try_accept(std::move(c));
            }
        }
        return progress;
    }

    const Variant& variant_;
    std::string signature_;
    MinimizeOptions options_;
    RunOptions run_options_;
    bool liveness_ = false;
    bool renamed_requests_ = false;
    bool renamed_segments_ = false;
    MinimizeStats stats_;
    Trace best_;
};

}  // namespace

Trace minimize_trace(const Trace& trace, const Variant& variant, const std::string& signature, MinimizeOptions options) {
    Minimizer minimizer(variant, signature, options);
    return minimizer.run(trace);
}

}  // namespace kvsim
