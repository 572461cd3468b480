#pragma once
// One run of a trace under one variant, with every checker after every step.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "properties/checkers/finding.h"
#include "properties/harness/timeline.h"
#include "sim/common/event_log.h"
#include "sim/trace/trace.h"
#include "sim/variant/variant.h"

namespace kvsim {

struct RunResult {
    Verdict verdict = Verdict::pass;
    std::string signature;  // findings.front().signature(), empty on pass and on an internal error
    std::string message;    // findings.front().message(): one line, what failed, where
    int steps = 0;          // steps executed
    std::string log;        // the event log's text, rendered from `events`
    std::uint64_t digest = 0;
    // With RunOptions::check_determinism on a muted run (EventLog::mute, fingerprint): the fold of
    // every event, which the replay compares; else the fold of none.
    std::uint64_t events_fingerprint = 0;
    bool internal_error = false;  // kvsim's own model precondition failed
    // Request lifecycle transitions the run made, as "FROM->TO" keys (transition_key in
    // properties/lifecycle/lifecycle_graph.h): the lifecycle coverage of this trace. A key that is
    // not a lifecycle edge is also a lifecycle_transition violation.
    std::set<std::string> lifecycle_edges;
    // Every finding; the one the verdict, signature and message report comes first (a
    // nondeterminism finding precedes the first replay's own findings).
    std::vector<Finding> findings;
    std::optional<UpstreamCrash> crash;  // the upstream assertion the run died on
    std::vector<LogEvent> events;        // the event log as typed events
    // The categories `events` holds every event of: all, unless the run was muted (RunOptions::events
    // off), when only RunOptions::muted_keeps.
    EventCategories events_kept = EventCategories::all();
    // The FlagReads bits of the variant flags the run's decisions read (Engine::flags_read); every
    // bit in a result no engine ran.
    std::uint32_t flags_read = ~std::uint32_t{0};
    std::optional<Timeline> timeline;    // when RunOptions::record_timeline asked for it
};

struct RunOptions {
    // Replay and compare the logs: their texts and digests, or without text_log their typed events
    // (the texts are rendered only when the events differ, for the finding), or on a muted run
    // (`events` off) the fingerprints of their events, the pair run again with the events when those
    // differ.
    bool check_determinism = false;
    bool record_timeline = false;    // keep the step-by-step timeline (the views of a run)
    // false: RunResult::log stays empty and digest 0 (nobody formats the text; `events` are kept).
    bool text_log = true;
    // false (with text_log and record_timeline off): the event log is muted and
    // RunResult::events stays empty; verdict, signature, message, findings and crash are the same.
    // For runs nobody reads the events of (a fuzz input that passes); a caller that needs the events
    // of a failing run runs it again with them.
    bool events = true;
    // What a muted run keeps all the same (RunResult::events_kept): the fuzz target keeps the
    // categories the registry's conditions read, so that classifying a failing input needs no replay.
    EventCategories muted_keeps = {};
    // A muted run folds every event into RunResult::events_fingerprint (what the determinism replay
    // compares; the classifier compares a fix's run with the run it fixes). A run that keeps every event
    // leaves it to events_fingerprint(events).
    bool fingerprint = false;
    // Checkers that judge only what a step touched (Checker::check_step) also sweep everything
    // every `sweep_period` steps and after the last step. 0: by pool size (1 up to
    // kBlocksPerSweepStep blocks, so small pools are swept every step).
    int sweep_period = 0;
    // Evaluate the trace's `@STEP check` lines (they read the state, never change the run); a
    // difference is the verdict mismatch when nothing else failed. The fuzz target turns them off.
    bool step_checks = true;
    // A search's hang budget: > 0 ends the run as at the step limit (a liveness finding, with the
    // fact `stalled`) once StallWatch (properties/checkers/liveness_checker.h) saw this many steps
    // in a row without progress after the last event. 0: only run.max_steps ends a run.
    int stall_steps = 0;
    // A search's idle budget: > 0 ends the run the same way once StallWatch saw this many steps in a
    // row, after the last event and with every fault settled, without progress and without any
    // request computing a token it never computed before. 0: off.
    int idle_steps = 0;
};

inline constexpr int kBlocksPerSweepStep = 1024;
// The sweep period `options` gives for a pool of `num_blocks` blocks.
int sweep_period(const RunOptions& options, int num_blocks);

RunResult run_trace(const Trace& trace, const Variant& variant, const RunOptions& options = {});

// A search's run (kvsim explore, the fuzz target's NEW findings): `options` with no text log and no
// events; a run that fails is run again with its events. The verdict is the same either way; only a
// failing run keeps its events. (The fuzz target runs its inputs muted with run_trace, keeping the
// categories the registry reads: the classifier replays a failing run only for events it lacks.)
RunResult run_for_search(const Trace& trace, const Variant& variant, RunOptions options = {});

}  // namespace kvsim
