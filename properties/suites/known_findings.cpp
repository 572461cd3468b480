// The known-findings list of the clean property suites (see known_findings.h), and one witness
// test per entry: a shrunk counterexample RapidCheck found, which must still produce exactly
// that finding. When a cause is fixed the witness fails: delete the entry (and its witness).
#include "properties/suites/known_findings.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <sstream>

#include "properties/generators/rc_support.h"
#include "sim/trace/trace_parser.h"

namespace kvsim::propgen {
namespace {

using Events = std::vector<LogEvent>;

// The request the upstream assertion the run died on names.
std::string crashed_request(const RunResult& r) { return r.crash ? r.crash->request : std::string(); }

// The request the run's first violation names.
std::string violation_request(const RunResult& r) {
    if (r.findings.empty() || r.findings.front().kind != FindingKind::violation) return {};
    return r.findings.front().request;
}

bool any_event(const Events& events, auto predicate) { return std::any_of(events.begin(), events.end(), predicate); }

bool is_p2p_action(const LogEvent& e, std::string_view action, const std::string& id) {
    return e.category == EventCategory::p2p && e.text("action") == action && e.request() == id;
}

bool store_before_p2p(const Trace& t) {
    return t.connectors.size() == 2 && t.connectors[0].kind == "store" && t.connectors[1].kind == "p2p";
}

// The D worker reported a notify-only pull (no blocks) for `id` in finished_recving.
bool notify_pull_reported(const Events& events, const std::string& id) {
    return any_event(events, [&](const LogEvent& e) {
        return is_p2p_action(e, "pull_result", id) && e.text("outcome") == "ok" && e.flag("notify_only") &&
               e.flag("reported");
    });
}

bool p2p_aborted_before_alloc(const Events& events, const std::string& id) {
    return any_event(events, [&](const LogEvent& e) { return is_p2p_action(e, "finished_before_alloc", id); });
}

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

// K3: request `id` lost its whole async load, was freed and promoted with nothing computed, and
// from then on only asks the store again (an async lookup) without ever being parked or
// admitted: its own stale _inflight_prefills entry reserves the blocks it needs.
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

std::set<std::string> unfinished_requests(const Trace& t, const Events& events) {
    std::set<std::string> ids;
    for (const Event& e : t.events)
        if (const auto* a = std::get_if<ArriveEvent>(&e.body)) ids.insert(a->request_id);
    for (const LogEvent& e : events)
        if (e.category == EventCategory::free) ids.erase(std::string(e.request()));
    return ids;
}

// A finished async load (recv_done) never followed by a promotion.
bool loaded_but_never_promoted(const Events& events, const std::string& id) {
    bool waiting_for_promotion = false;
    for (const LogEvent& e : events) {
        if (e.request() != id) continue;
        if (e.category == EventCategory::recv_done && !e.flag("delayed_free")) waiting_for_promotion = true;
        if (e.category == EventCategory::promote) waiting_for_promotion = false;
    }
    return waiting_for_promotion;
}

// Steps in which the whole running batch was preempted and nothing was scheduled.
int whole_batch_preemptions(const Events& events) {
    int n = 0;
    for (const LogEvent& e : events) {
        if (e.category != EventCategory::schedule) continue;
        const bool nothing_scheduled =
            e.value<CountList>("new")->empty() && e.value<CountList>("cached")->empty() && e.integer("tokens") == 0;
        if (nothing_scheduled && !e.value<NameList>("preempted")->empty()) ++n;
    }
    return n;
}

// The scheduler rewound request `id` after a failed load.
bool load_failed_for(const Events& events, const std::string& id) {
    return any_event(events,
                     [&](const LogEvent& e) { return e.category == EventCategory::invalid && e.request() == id; });
}

}  // namespace

const std::vector<KnownFinding>& known_findings() {
    static const std::vector<KnownFinding> list = {
        {"p2p_notify_pull_after_abort", KnownFindingKind::upstream, "crash:recving_unknown_request",
         "A decode request (remote_prefill=on) aborted before it was ever allocated: "
         "MooncakeConnectorScheduler.request_finished queues an empty pull so the prefill side frees its "
         "blocks (mooncake_connector.py, request_finished, do_remote_prefill branch); the D worker's "
         "process_pulling_result puts every ok pull, empty or not, into finished_recving; the request is "
         "already gone, so Scheduler._update_from_kv_xfer_finished fails `assert req_id in self.requests`. "
         "Modelled on purpose (p2p_worker.h set_report_empty_pulls); reported upstream-plausible.",
         [](const Trace&, const Variant&, const RunResult& r) {
             if (r.signature != "crash:recving_unknown_request") return false;
             const std::string id = crashed_request(r);
             return !id.empty() && p2p_aborted_before_alloc(r.events, id) && notify_pull_reported(r.events, id);
         }},
        {"p2p_notify_pull_store_first", KnownFindingKind::upstream,
         "crash:recving_not_finished, crash:recving_unknown_request, violation:load_into_foreign_block",
         "MultiConnector(store, p2p), store listed first: for a remote_prefill request the store child "
         "wins the load when it holds the prompt, so MooncakeConnector.update_state_after_alloc gets "
         "num_external_tokens=0 and still queues a notify-only pull (do_remote_prefill is set); the D worker "
         "reports it in finished_recving, which the scheduler misreads: `assert "
         "RequestStatus.is_finished(req.status)` for a RUNNING request, or an early promotion while the "
         "store's async load is still in flight: the request runs (and may be preempted and re-parked on "
         "other blocks), then the real store finished_recving names a running or freed request, or the "
         "late store load writes into blocks the request no longer owns (KV corruption). With p2p listed first this cannot happen. Reported "
         "upstream-plausible.",
         [](const Trace& t, const Variant&, const RunResult& r) {
             const bool crash =
                 r.signature == "crash:recving_not_finished" || r.signature == "crash:recving_unknown_request";
             const bool foreign_load = r.signature == "violation:load_into_foreign_block" &&
                                       r.findings.front().connector == "store";
             if (!crash && !foreign_load) return false;
             if (!store_before_p2p(t)) return false;
             const std::string id = crash ? crashed_request(r) : violation_request(r);
             return !id.empty() && notify_pull_reported(r.events, id) && !p2p_aborted_before_alloc(r.events, id);
         }},
        {"async_load_self_reservation", KnownFindingKind::upstream, "liveness:requests_not_finished",
         "An async load fails completely (load_fail, recompute policy): _update_waiting_for_remote_kv frees "
         "the request's blocks with nothing computed, but nothing discards it from _inflight_prefills "
         "(upstream discards only in _preempt_request, _free_request and _update_after_schedule). Promoted "
         "to WAITING, it asks the store again, gets an async load again, and "
         "_inflight_prefill_reserved_blocks() now counts its OWN full-sequence need as reserved: it is "
         "admitted only if free >= 2 x its need. With a pool smaller than that it waits forever (the "
         "docstring's 'the candidate async load isn't yet in the set' does not hold). Reported "
         "upstream-plausible.",
         [](const Trace& t, const Variant&, const RunResult& r) {
             if (r.signature != "liveness:requests_not_finished") return false;
             const auto stuck = unfinished_requests(t, r.events);
             return !stuck.empty() && std::any_of(stuck.begin(), stuck.end(), [&](const std::string& id) {
                 return self_reserved_after_failed_load(r.events, id);
             });
         }},
        {"finished_load_behind_unadmittable_head", KnownFindingKind::upstream, "liveness:requests_not_finished",
         "Head-of-line deadlock in the waiting phase (FCFS). A request whose lookup was pending (or that was "
         "otherwise skipped) sits at the head of skipped_waiting; a request behind it finished its async load "
         "(finished_recving) but is promoted only when the waiting loop reaches it. The head cannot be "
         "allocated while the loaded request holds its blocks, the loop breaks at the head every step, and the "
         "loaded request is never promoted, run or freed. Upstream's loop has the same break (scheduler.py, "
         "'if new_blocks is None: break'); the class upstream PR #57841 (open) discusses. Also "
         "corpus/findings/finished_load_behind_unadmittable_head.trace. Reported upstream-plausible.",
         [](const Trace& t, const Variant&, const RunResult& r) {
             if (r.signature != "liveness:requests_not_finished") return false;
             const auto stuck = unfinished_requests(t, r.events);
             return std::any_of(stuck.begin(), stuck.end(), [&](const std::string& id) {
                 return loaded_but_never_promoted(r.events, id);
             });
         }},
        {"store_pin_preemption_cascade", KnownFindingKind::upstream, "liveness:requests_not_finished",
         "Zero-reclaim preemption livelock. Store-job pins (#52372) keep a preempted request's blocks "
         "referenced until every rank reports, so preempting the last running request frees nothing; the "
         "allocation retry loop of Scheduler.schedule then preempts the next one and finally the request "
         "itself (running becomes empty, nothing is scheduled). When the jobs report, both are admitted "
         "again (scheduler_reserve_full_isl checks each against the current free blocks alone), grow, and "
         "the cascade repeats forever. The same shape as the deferred-free cascade that vllm-project/vllm "
         "#49675 fixes (its retry loop stops when the victim's blocks cannot be returned yet), but caused by "
         "connector pins, which #49675 does not look at. Matched only when the run shows repeated "
         "whole-batch preemptions and the same trace drains once store jobs do not pin (delay_free).",
         [](const Trace& t, const Variant& v, const RunResult& r) {
             if (r.signature != "liveness:requests_not_finished") return false;
             if (v.save_block_refs != SaveBlockRefs::store_job_pins) return false;
             if (whole_batch_preemptions(r.events) < 2) return false;
             Variant unpinned = v;
             unpinned.save_block_refs = SaveBlockRefs::delay_free;
             unpinned.name += " (store jobs unpinned)";
             return run_trace(t, unpinned).verdict != Verdict::liveness;
         }},
        {"store_tracker_not_rewound_after_load_failure", KnownFindingKind::upstream,
         "violation:save_tokens_without_blocks",
         "A synchronous store load fails (load_fail, kv_load_failure_policy recompute): "
         "Scheduler._update_requests_with_invalid_blocks rewinds num_computed_tokens to the first invalid "
         "block, but nobody tells MooncakeStoreScheduler, whose RequestTracker.token_len keeps counting "
         "from the loaded length (build_connector_meta, cached branch: token_len += the scheduled tokens "
         "present in all_token_ids). The next steps save token ranges the recompute has not reached: the "
         "failed load's garbage blocks go to the store under valid hashes (store poisoning), and once "
         "token_len passes the allocated blocks a save names fewer blocks than tokens. Matched only when "
         "the same trace without that request's load_fail fault shows no such save.",
         [](const Trace& t, const Variant& v, const RunResult& r) {
             if (r.signature != "violation:save_tokens_without_blocks") return false;
             const std::string id = violation_request(r);
             if (id.empty() || !load_failed_for(r.events, id)) return false;
             Trace without = t;
             std::erase_if(without.events, [&](const Event& e) {
                 const auto* f = std::get_if<FaultEvent>(&e.body);
                 return f != nullptr && f->kind == FaultKind::load_fail && f->request_id == id;
             });
             return run_trace(without, v).signature != "violation:save_tokens_without_blocks";
         }},
        {"seed001_eager_snapshot_stale_save", KnownFindingKind::known_bug, "crash:missing_current_block_table",
         "Seed 001 (vllm-project/vllm#54853, #55066): v0.29.0's eager KVConnectorBlockState snapshots only "
         "new requests and cached requests that got a new block, but a store save fires on the step that "
         "FILLS a block (a decode step with save_decode_cache=on, or a prefill chunk ending inside an "
         "already allocated block), so _apply_current_save_block_ids asserts. v0.29.0+003 (the #54643 "
         "backport) keeps it: it is not a clean preset for this bug (corpus/upstream/seed001_*.trace "
         "expects the crash). Matched only when the same trace no longer crashes so with #54853's "
         "every-scheduled snapshot.",
         [](const Trace& t, const Variant& v, const RunResult& r) {
             if (r.signature != "crash:missing_current_block_table") return false;
             if (v.snapshot_rule != SnapshotRule::eager) return false;
             Variant fixed = v;
             fixed.snapshot_rule = SnapshotRule::every_scheduled;
             fixed.name += "+pr54853";
             const RunResult again = run_trace(t, fixed);
             return again.signature != "crash:missing_current_block_table" && !again.internal_error;
         }},
    };
    return list;
}

const KnownFinding* match_known_finding(const Trace& trace, const Variant& variant, const RunResult& result) {
    if (result.internal_error) return nullptr;  // never known: a kvsim precondition failed
    for (const KnownFinding& k : known_findings())
        if (k.matches(trace, variant, result)) return &k;
    return nullptr;
}

}  // namespace kvsim::propgen

namespace kvsim::propgen {
namespace {

// One shrunk counterexample per entry, as RapidCheck found it on the clean presets.
struct Witness {
    std::string_view finding;
    std::string_view variant;
    std::string_view trace;
};

constexpr std::string_view kHeader =
    "kvsim-trace 1\n"
    "engine block_size=4 num_blocks=NB max_batched_tokens=2048 max_running=16 max_model_len=2048 "
    "chunked_prefill=on prefix_caching=on long_prefill_threshold=0 reserve_full_isl=on\n"
    "run seed=0 max_steps=400\n"
    "workers ranks=1 store_delay_min=1 store_delay_max=1 load_delay_min=1 load_delay_max=1 pull_delay=1\n";

const std::vector<Witness>& witnesses() {
    static const std::vector<Witness> list = {
        {"p2p_notify_pull_after_abort", "v0.30.0",
         "NB=7\n"
         "connector p2p role=kv_consumer\n"
         "segment s0 len=4\n"
         "@0 arrive r0 prompt=s0 max_tokens=1 remote_prefill=on\n"
         "@0 abort r0\n"},
        {"p2p_notify_pull_store_first", "v0.30.0",
         "NB=8\n"
         "connector store role=kv_consumer load_async=off\n"
         "connector p2p role=kv_consumer\n"
         "segment s0 len=4\n"
         "store prefix=s0\n"
         "@0 arrive r0 prompt=s0+s0 max_tokens=1 remote_prefill=on\n"},
        {"p2p_notify_pull_store_first", "v0.30.0",  // the early promotion: a late store load into lost blocks
         "kvsim-trace 1\n"
         "engine block_size=16 num_blocks=18 max_batched_tokens=2048 max_running=16 max_model_len=2048 "
         "chunked_prefill=on prefix_caching=off long_prefill_threshold=64 reserve_full_isl=off\n"
         "run seed=350217 max_steps=3397\n"
         "connector store role=kv_consumer load_async=on lookup_async=off enable_lookup=on save_decode_cache=on\n"
         "connector p2p role=kv_consumer\n"
         "workers ranks=1 store_delay_min=2 store_delay_max=5 load_delay_min=1 load_delay_max=4 pull_delay=1\n"
         "segment s0 len=48\n"
         "store prefix=s0+s0\n"
         "@0 arrive r0 prompt=s0+s0 max_tokens=4\n"
         "@0 arrive r1 prompt=s0+s0+s0 max_tokens=1 remote_prefill=on\n"
         "@0 arrive r2 prompt=s0+s0+s0+s0 max_tokens=1 remote_prefill=on\n"},
        {"async_load_self_reservation", "v0.30.0",
         "NB=15\n"
         "connector store role=kv_consumer\n"
         "segment s0 len=12\n"
         "store prefix=s0+s0\n"
         "@0 arrive r0 prompt=s0+s0+s0 max_tokens=1\n"
         "@0 fault load_fail request=r0\n"},
        {"finished_load_behind_unadmittable_head", "v0.30.0",
         "NB=5\n"
         "connector store role=kv_consumer lookup_async=on\n"
         "connector p2p role=kv_consumer\n"
         "segment s0 len=4\n"
         "@0 arrive r0 prompt=s0+s0+s0 max_tokens=1\n"
         "@0 arrive r1 prompt=s0+s0 max_tokens=1 remote_prefill=on\n"
         "@0 fault lookup_pending steps=1 request=r0\n"},
        {"store_pin_preemption_cascade", "v0.30.0",
         "NB=7 block_size=8 prefix_caching=off long_prefill_threshold=20\n"
         "connector store role=kv_both enable_lookup=off\n"
         "segment s0 len=7\n"
         "@0 arrive r0 prompt=s0 max_tokens=4\n"
         "@0 arrive r1 prompt=s0+s0+s0 max_tokens=21\n"
         "@0 arrive r2 prompt=s0+s0+s0 max_tokens=1\n"},
        {"store_tracker_not_rewound_after_load_failure", "v0.30.0",
         "NB=18 block_size=8 prefix_caching=off max_batched_tokens=48\n"
         "connector store role=kv_both load_async=off\n"
         "segment s0 len=19\n"
         "store prefix=s0\n"
         "@0 arrive r0 prompt=s0+s0 max_tokens=1\n"
         "@0 arrive r1 prompt=s0+s0+s0 max_tokens=1\n"
         "@0 fault load_fail request=r1\n"},
        {"seed001_eager_snapshot_stale_save", "v0.29.0+003",
         "NB=8 long_prefill_threshold=5\n"
         "connector store role=kv_both\n"
         "segment s0 len=4\n"
         "@0 arrive r0 prompt=s0+s0 max_tokens=1\n"},
    };
    return list;
}

// The witness text: a whole trace, or the shared header with the first line's engine overrides applied.
std::string witness_text(const Witness& w) {
    if (w.trace.starts_with("kvsim-trace")) return std::string(w.trace);
    const auto nl = w.trace.find('\n');
    std::string engine_overrides(w.trace.substr(0, nl));
    std::string text(kHeader);
    std::istringstream in(engine_overrides);
    std::string kv;
    while (in >> kv) {
        const auto eq = kv.find('=');
        const std::string key = kv.substr(0, eq);
        const std::string value = kv.substr(eq + 1);
        if (key == "NB") {
            text.replace(text.find("NB"), 2, value);
            continue;
        }
        const auto at = text.find(" " + key + "=");
        const auto end = text.find_first_of(" \n", at + 1);
        text.replace(at + 1, end - at - 1, key + "=" + value);
    }
    return text + std::string(w.trace.substr(nl + 1));
}

TEST_CASE("known findings: every entry has a witness that still shows it", "[property][known]") {
    std::set<std::string_view> witnessed;
    for (const Witness& w : witnesses()) {
        const std::string text = witness_text(w);
        INFO("witness of " << w.finding << " under " << w.variant << ":\n" << text);
        const Trace trace = parse_trace(text, std::string(w.finding) + ".trace");
        const Variant variant = require_variant(w.variant);
        const RunResult r = run_trace(trace, variant);
        INFO("run: " << to_string(r.verdict) << " " << r.signature << " -- " << r.message);
        const KnownFinding* known = match_known_finding(trace, variant, r);
        // A failure here means the cause was fixed (or the matcher drifted): delete the entry.
        REQUIRE(known != nullptr);
        CHECK(known->name == w.finding);
        witnessed.insert(w.finding);
    }
    for (const KnownFinding& k : known_findings()) {
        INFO("known finding without a witness: " << k.name);
        CHECK(witnessed.contains(k.name));
    }
}

}  // namespace
}  // namespace kvsim::propgen
