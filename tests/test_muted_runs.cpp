// RunOptions::events off and run_for_search (properties/harness/run_trace.h) against the full run,
// over every corpus trace under every clean and broken preset: the same verdict, signature, message,
// steps, findings and crash; no events when muted (but the categories RunOptions::muted_keeps names);
// a failing search run keeps its events; a muted determinism replay folds every event the full run
// has into its fingerprint (EventLog::mute), and compares those.
#include <catch2/catch.hpp>

#include "corpus_traces.h"

#include <cstdint>
#include <string>
#include <vector>

#include "properties/harness/run_trace.h"
#include "sim/trace/trace_parser.h"
#include "sim/variant/variant.h"

namespace kvsim {
namespace {

struct CorpusTrace {
    std::string path;
    Trace trace;
};

std::vector<CorpusTrace> corpus_traces() {
    std::vector<CorpusTrace> traces;
    for (const std::string& path : testing::corpus_trace_paths()) traces.push_back({path, parse_trace_file(path)});
    return traces;
}

std::vector<std::string> finding_lines(const RunResult& r) {
    std::vector<std::string> out;
    for (const Finding& f : r.findings) out.push_back(f.signature() + " | " + f.message());
    return out;
}

void require_same_outcome(const RunResult& full, const RunResult& lean) {
    CHECK(lean.verdict == full.verdict);
    CHECK(lean.internal_error == full.internal_error);
    CHECK(lean.signature == full.signature);
    CHECK(lean.message == full.message);
    CHECK(lean.steps == full.steps);
    CHECK(lean.lifecycle_edges == full.lifecycle_edges);
    CHECK(finding_lines(lean) == finding_lines(full));
    CHECK(lean.crash.has_value() == full.crash.has_value());
}

std::uint64_t fingerprint_of(const std::vector<LogEvent>& events) { return events_fingerprint(events); }

}  // namespace

TEST_CASE("a fingerprinting log folds an event it does not keep as it folds the same event kept", "[events]") {
    EventLog kept;
    kept.mute(EventCategories::all(), true);
    EventLog unkept;
    unkept.mute({}, true);
    EventLog plain;
    plain.mute(EventCategories::all());
    for (EventLog* log : {&kept, &unkept, &plain}) {
        log->set_step(3);
        log->event(EventCategory::alloc, "{request} +{blocks}").request("r0").blocks("blocks", std::vector<int>{4, 5});
        log->event(EventCategory::schedule, "x").requests("new", std::vector<std::string>{"r0", "r1"})
            .request_counts("counts", CountList{{"r0", 2}}).flag("f", true).text("t", "why")
            .block_groups("g", std::vector<std::vector<int>>{{1}, {2, 3}});
    }
    CHECK(kept.events().size() == 2);
    CHECK(unkept.events().empty());
    CHECK(kept.fingerprint() == unkept.fingerprint());
    CHECK(kept.fingerprint() == fingerprint_of(kept.events()));
    CHECK(plain.fingerprint() != kept.fingerprint());  // not fingerprinting: nothing folded
    EventLog changed;
    changed.mute({}, true);
    changed.set_step(3);
    changed.event(EventCategory::alloc, "{request} +{blocks}").request("r0").blocks("blocks", std::vector<int>{4, 6});
    EventLog first_only;
    first_only.mute({}, true);
    first_only.set_step(3);
    first_only.event(EventCategory::alloc, "{request} +{blocks}").request("r0").blocks("blocks", std::vector<int>{4, 5});
    CHECK(changed.fingerprint() != first_only.fingerprint());
}

TEST_CASE("a muted run decides as the full run does, and a failing search run keeps its events", "[run][events]") {
    const std::vector<CorpusTrace> traces = corpus_traces();
    REQUIRE(traces.size() > 40);
    int failing = 0;
    for (const char* name : {"v0.27.1", "v0.29.0", "v0.30.0", "v0.30.0+all_fixes"}) {
        const Variant variant = require_variant(name);
        for (const auto& [path, trace] : traces) {
            INFO(path << " under " << name);
            const RunResult full = run_trace(trace, variant, RunOptions{.text_log = false});
            const RunResult muted = run_trace(trace, variant, RunOptions{.text_log = false, .events = false});
            require_same_outcome(full, muted);
            CHECK(muted.events.empty());
            CHECK_FALSE(full.events.empty());
            // the determinism replay of a muted run: every event of the full run folded, none kept
            const RunResult replayed =
                run_trace(trace, variant, RunOptions{.check_determinism = true, .text_log = false, .events = false});
            require_same_outcome(full, replayed);
            CHECK(replayed.events.empty());
            CHECK(replayed.events_fingerprint == fingerprint_of(full.events));
            const RunResult search = run_for_search(trace, variant);
            require_same_outcome(full, search);
            const bool failed = full.verdict != Verdict::pass || full.internal_error;
            failing += failed ? 1 : 0;
            CHECK(search.events.size() == (failed ? full.events.size() : 0));
        }
    }
    CHECK(failing > 20);  // the corpus's findings and broken presets: both branches are exercised
}

TEST_CASE("a muted run keeping some categories keeps exactly the full run's events of those categories", "[run][events]") {
    const std::vector<CorpusTrace> traces = corpus_traces();
    const EventCategories kept{EventCategory::invalid, EventCategory::load, EventCategory::p2p, EventCategory::worker};
    const auto of_kept = [&](const std::vector<LogEvent>& events) {
        std::vector<std::string> lines;
        for (const LogEvent& e : events)
            if (kept.contains(e.category)) lines.push_back(render_line(e));
        return lines;
    };
    std::size_t kept_events = 0;
    for (const char* name : {"v0.29.0", "v0.30.0"}) {
        const Variant variant = require_variant(name);
        for (const auto& [path, trace] : traces) {
            INFO(path << " under " << name);
            const RunResult full = run_trace(trace, variant, RunOptions{.text_log = false});
            const RunResult lean = run_trace(trace, variant, RunOptions{.text_log = false, .events = false, .muted_keeps = kept});
            require_same_outcome(full, lean);
            CHECK(full.events_kept == EventCategories::all());
            CHECK(lean.events_kept == kept);
            CHECK(of_kept(lean.events) == of_kept(full.events));
            CHECK(of_kept(lean.events).size() == lean.events.size());  // nothing of another category
            CHECK(lean.events.size() < full.events.size());
            kept_events += lean.events.size();
        }
    }
    CHECK(kept_events > 100);  // the corpus loads, fails loads and pulls: the filter keeps something
}

TEST_CASE("EventCategories: a bit per category", "[events]") {
    EventCategories some{EventCategory::p2p, EventCategory::reset};
    CHECK(some.contains(EventCategory::p2p));
    CHECK(some.contains(EventCategory::reset));
    CHECK_FALSE(some.contains(EventCategory::arrive));
    CHECK(EventCategories::all().contains(some));
    CHECK_FALSE(some.contains(EventCategories::all()));
    CHECK(some.contains(EventCategories{}));
    some.insert(EventCategory::arrive);
    CHECK(some.contains(EventCategories{EventCategory::arrive, EventCategory::p2p}));
    for (int c = 0; c <= static_cast<int>(EventCategory::reset); ++c) {
        INFO(c);
        CHECK(EventCategories::all().contains(static_cast<EventCategory>(c)));
        CHECK(parse_event_category(to_string(static_cast<EventCategory>(c))) == static_cast<EventCategory>(c));
    }
}

TEST_CASE("events off is ignored when the text log or the timeline needs them, and a muted replay compares fingerprints",
          "[run][events]") {
    const Trace trace = parse_trace_file(std::string(KVSIM_SOURCE_DIR) + "/corpus/examples/01_single_request.trace");
    const Variant variant = require_variant("v0.30.0");
    const RunResult with_text = run_trace(trace, variant, RunOptions{.text_log = true, .events = false});
    CHECK_FALSE(with_text.events.empty());
    CHECK_FALSE(with_text.log.empty());
    const RunOptions muted_replay{.check_determinism = true, .text_log = false, .events = false};
    const RunResult replayed = run_trace(trace, variant, muted_replay);
    CHECK(replayed.verdict == Verdict::pass);
    CHECK(replayed.events.empty());  // muted: no text, no digest, no event kept
    CHECK(replayed.log.empty());
    CHECK(replayed.digest == 0);
    // the fold of every event: another run's is the same, another trace's is not, a run without the replay has none
    CHECK(replayed.events_fingerprint == run_trace(trace, variant, muted_replay).events_fingerprint);
    CHECK(replayed.events_fingerprint == fingerprint_of(with_text.events));
    const Trace other = parse_trace_file(std::string(KVSIM_SOURCE_DIR) + "/corpus/examples/02_shared_prefix.trace");
    CHECK(replayed.events_fingerprint != run_trace(other, variant, muted_replay).events_fingerprint);
    const RunResult timeline = run_trace(trace, variant, RunOptions{.record_timeline = true, .text_log = false, .events = false});
    CHECK(timeline.timeline.has_value());
    CHECK_FALSE(timeline.events.empty());
}

}  // namespace kvsim
