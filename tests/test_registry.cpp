// The registry of known findings (properties/findings): its witnesses, its coverage of the
// corpus, its parse errors, and that a new cause behind a known signature is NEW.
#include <catch2/catch.hpp>

#include "planted_traces.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "properties/findings/classify.h"
#include "properties/findings/registry.h"
#include "sim/trace/config_rules.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"

using namespace kvsim;
namespace fs = std::filesystem;

namespace {

const std::string kRepo = KVSIM_SOURCE_DIR;

Trace load(const std::string& relative) {
    std::ifstream in(kRepo + "/" + relative, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return parse_trace(text.str(), relative);
}

Classification classified(const Trace& trace, const std::string& variant_name, const Registry& r = builtin_registry()) {
    const Variant variant = require_variant(variant_name);
    return classify(r, trace, variant, run_trace(trace, variant));
}

std::vector<std::string> ids(const Classification& c) {
    std::vector<std::string> out;
    for (const KnownEntry* e : c.causes) out.push_back(e->id);
    return out;
}

std::string parse_error(const std::string& text) {
    try {
        parse_registry(text, "r.txt");
    } catch (const InputError& e) {
        return e.what();
    }
    return "no error";
}

const std::string kEntry =
    "finding a\n"                                    // 1
    "  class upstream\n"                             // 2
    "  variants *\n"                                 // 3
    "  signature liveness:requests_not_finished\n"  // 4
    "  upstream not_reported\n"                      // 5
    "  witness corpus/x.trace v0.30.0\n"             // 6
    "  fix describe not modelled\n"                  // 7
    "  why a test\n";                                // 8

const std::string& kPendingLookup = kvsim::testing::kPendingLookupLiveness;

// The causes the trace's expect line for `variant` names (empty without one).
std::vector<std::string> stated_causes(const Trace& trace, const std::string& variant) {
    for (const Expectation& x : trace.expectations)
        if (x.variant == variant) return x.causes;
    return {};
}

}  // namespace

TEST_CASE("registry: every entry's witnesses classify as exactly that entry, on the variants it names", "[registry]") {
    const Registry& registry = builtin_registry();
    REQUIRE(registry.entries.size() >= 20);
    for (const KnownEntry& e : registry.entries) {
        REQUIRE_FALSE(e.witnesses.empty());
        for (const Witness& w : e.witnesses) {
            INFO(e.id << ": " << w.trace << " under " << w.variant);
            REQUIRE(e.applies_to(w.variant));
            const Trace trace = load(w.trace);
            const Classification got = classified(trace, w.variant);
            // A failure here means the cause was fixed (or the matcher drifted): update or delete the entry.
            REQUIRE(got.known());
            // exactly this cause, or this cause first where removing it uncovers another that its trace's
            // expect line names (pr49252's crash needs a sharer the rollback strands)
            REQUIRE_FALSE(got.causes.empty());
            CHECK(got.causes.front()->id == e.id);
            if (got.causes.size() > 1) CHECK(stated_causes(trace, w.variant) == ids(got));
            // A muted run (a fuzz input's) has no events: the classifier replays it for those it reads.
            const Variant variant = require_variant(w.variant);
            const RunOptions muted{.text_log = false, .events = false};
            const RunResult quiet = run_trace(trace, variant, muted);
            REQUIRE(quiet.events.empty());
            CHECK(ids(classify(registry, trace, variant, quiet, muted)) == ids(got));
            // The fuzz target's runs keep the categories the registry reads.
            const RunOptions lean{.text_log = false, .events = false, .muted_keeps = registry.events_read()};
            const RunResult kept = run_trace(trace, variant, lean);
            CHECK(kept.events_kept == registry.events_read());
            CHECK(ids(classify(registry, trace, variant, kept, lean)) == ids(got));
        }
    }
}

TEST_CASE("registry: one entry per root cause: no entry's fix names two causes, no witness is another's", "[registry]") {
    std::set<std::string> witnesses;
    for (const KnownEntry& e : builtin_registry().entries) {
        INFO(e.id);
        CHECK(e.fix.patch.find('+', 1) == std::string::npos);  // one patch, not a composition
        for (const Witness& w : e.witnesses) CHECK(witnesses.insert(w.trace + " " + w.variant).second);
    }
}

TEST_CASE("registry: events_read names the categories its event conditions read, and all for a history", "[registry]") {
    const Registry& registry = builtin_registry();
    const EventCategories read = registry.events_read();
    int event_conditions = 0;
    for (const KnownEntry& e : registry.entries)
        for (const Condition& c : e.conditions) {
            if (c.kind != ConditionKind::event && c.kind != ConditionKind::no_event) continue;
            ++event_conditions;
            CHECK(read.contains(c.category));
        }
    CHECK(event_conditions >= 8);
    CHECK_FALSE(read.contains(EventCategory::schedule));  // the costly categories stay muted
    CHECK_FALSE(read.contains(EventCategory::alloc));
    CHECK(events_read(Condition{.kind = ConditionKind::history, .value = "loaded_but_never_promoted"}) ==
          EventCategories::all());
    CHECK(events_read(Condition{.kind = ConditionKind::stack}).empty());
}

TEST_CASE("registry: every failing expect line of the corpus is known, with the causes it names", "[registry]") {
    int failing = 0, compounds = 0;
    for (const auto& f : fs::recursive_directory_iterator(kRepo + "/corpus")) {
        if (f.path().extension() != ".trace") continue;
        const std::string relative = fs::relative(f.path(), kRepo).string();
        const Trace trace = load(relative);
        for (const Expectation& x : trace.expectations) {
            // a documented step-check mismatch (corpus/conformance) is a statement about upstream, not a finding
            if (x.verdict == Verdict::pass || x.verdict == Verdict::mismatch) continue;
            ++failing;
            INFO(relative << " under " << x.variant);
            const Classification c = classified(trace, x.variant);
            CHECK(c.known());
            CHECK_FALSE(x.causes.empty());  // the corpus states every failure's causes
            CHECK(ids(c) == x.causes);
            compounds += x.causes.size() > 1 ? 1 : 0;
        }
    }
    REQUIRE(failing >= 60);
    REQUIRE(compounds >= 15);  // the traces of the former compound entries
}

TEST_CASE("registry: no corpus trace is a configuration upstream rejects, under any variant it names", "[registry][rules]") {
    int judged = 0;
    for (const auto& f : fs::recursive_directory_iterator(kRepo + "/corpus")) {
        if (f.path().extension() != ".trace") continue;
        const std::string relative = fs::relative(f.path(), kRepo).string();
        const Trace trace = load(relative);
        std::set<std::string> variants;
        if (!trace.run.variant.empty()) variants.insert(trace.run.variant);
        for (const Expectation& x : trace.expectations) variants.insert(x.variant);
        for (const char* preset : {"v0.27.1", "v0.29.0", "v0.30.0", "v0.30.0+all_fixes"}) variants.insert(preset);
        for (const std::string& v : variants) {
            INFO(relative << " under " << v);
            const auto rejection = upstream_rejects(trace, require_variant(v));
            CHECK_FALSE(rejection.has_value());
            if (rejection) INFO(rejection->message());
            ++judged;
        }
    }
    REQUIRE(judged >= 400);
}

TEST_CASE("registry: a new cause behind a known signature is NEW", "[registry]") {
    const Trace pending = parse_trace(kPendingLookup, "pending.trace");
    const Variant v30 = require_variant("v0.30.0");
    const RunResult r = run_trace(pending, v30);
    REQUIRE(r.signature == "liveness:requests_not_finished");  // the signature of several known entries
    const Classification c = classify(builtin_registry(), pending, v30, r);
    CHECK(c.is_new());
    CHECK(c.causes.empty());
    CHECK(c.residue_signature == r.signature);
    // the known witness of the same signature is known, and an entry whose condition it fails is not
    const Trace cascade = load("corpus/findings/store_pins_make_preemption_free_nothing.trace");
    REQUIRE(classified(cascade, "v0.30.0").known());
    const Registry narrow = parse_registry(kEntry + "  history loaded_but_never_promoted\n", "narrow.txt");
    CHECK(classified(cascade, "v0.30.0", narrow).is_new());
    // an entry without a modelled fix matches on its conditions alone, and the residue is not run
    const Registry broad = parse_registry(kEntry, "broad.txt");
    const Classification by_conditions = classified(cascade, "v0.30.0", broad);
    CHECK(by_conditions.known());
    CHECK(by_conditions.unexplored);
    CHECK(ids(by_conditions) == std::vector<std::string>{"a"});
}

TEST_CASE("registry: conditions over typed fields, the stack and settings, and a fix that changes nothing never matches",
          "[registry]") {
    const Trace store_first = load("corpus/findings/multiconnector_store_first_p2p_notify_pull.trace");
    const std::string head = "finding b\n class upstream\n variants *\n signature crash:recving_not_finished\n"
                             " upstream known #1\n witness x.trace v0.30.0\n fix +p2p_pull_only_when_loading\n why t\n";
    const auto known_with = [&](const std::string& conditions, const std::string& fix = "") {
        std::string text = head + conditions;
        if (!fix.empty()) text.replace(text.find("fix +p2p_pull_only_when_loading"), 31, "fix " + fix);
        return classified(store_first, "v0.30.0", parse_registry(text, "c.txt")).known();
    };
    CHECK(known_with(""));
    CHECK(known_with(" stack store,p2p\n"));
    CHECK_FALSE(known_with(" stack p2p,store\n"));
    CHECK(known_with(" event p2p action=pull_result request=$request notify_only=true\n"));
    CHECK_FALSE(known_with(" event p2p action=pull_result request=$request notify_only=false\n"));
    CHECK(known_with(" no_event p2p action=finished_before_alloc\n"));
    CHECK(known_with(" connector store load_async=on\n"));
    CHECK_FALSE(known_with(" connector store lookup_async=on\n"));
    CHECK(known_with(" flag pending_load_guard=on\n"));
    CHECK_FALSE(known_with(" flag pending_load_guard=off\n"));
    // the fix is the counterfactual: one that leaves the run as it is never matches
    CHECK_FALSE(known_with("", "flags snapshot_rule=eager"));  // still crashes so
    CHECK_FALSE(known_with("", "+pr54643"));                   // a patch v0.30.0 already carries: the same run
    CHECK_FALSE(known_with("", "flags pending_load_guard=on"));
    // the engine settings as resolved: the keys the trace states, else the variant's defaults
    Trace stated = store_first;
    stated.engine.async_scheduling = false;
    stated.engine.kv_load_failure_policy = LoadFailurePolicy::recompute;
    const auto stated_known_with = [&](const std::string& conditions) {
        return classified(stated, "v0.30.0", parse_registry(head + conditions, "c.txt")).known();
    };
    CHECK(stated_known_with(" engine async_scheduling=off kv_load_failure_policy=recompute\n"));
    CHECK_FALSE(stated_known_with(" engine async_scheduling=on\n"));
    CHECK_FALSE(stated_known_with(" engine kv_load_failure_policy=fail\n"));
    const Registry old_only = parse_registry(std::string(head).replace(head.find("variants *"), 10, "variants v0.29.0*"), "o.txt");
    CHECK(classified(store_first, "v0.30.0", old_only).is_new());  // applies to v0.29.0* only
    CHECK(classified(store_first, "v0.29.0", old_only).known());
}

TEST_CASE("registry: causes are removed one fix at a time, in registry order, one re-run each", "[registry]") {
    // Two causes, each of which alone leaves the run hanging: neither fix alone drains it.
    const Trace trace = load("corpus/findings/failed_load_self_reservation_with_pending_head.trace");
    const Variant v30 = require_variant("v0.30.0");
    const RunResult run = run_trace(trace, v30);
    REQUIRE(run.signature == "liveness:requests_not_finished");
    const Classification c = classify(builtin_registry(), trace, v30, run);
    REQUIRE(c.known());
    CHECK(ids(c) == std::vector<std::string>{"async_load_self_reservation", "finished_load_behind_unadmittable_head"});
    CHECK(c.cause_set() == "async_load_self_reservation+finished_load_behind_unadmittable_head");
    CHECK(c.key() == "known:" + c.cause_set());
    // the residue after both fixes passes, and each single fix leaves a failure: both are needed
    CHECK(run_trace(trace, require_variant("v0.30.0+discard_inflight_on_failed_load+pr57841")).verdict == Verdict::pass);
    CHECK(run_trace(trace, require_variant("v0.30.0+discard_inflight_on_failed_load")).verdict != Verdict::pass);
    CHECK(run_trace(trace, require_variant("v0.30.0+pr57841")).verdict != Verdict::pass);
    // a registry of the first cause alone reports NEW, after it, under the variant with its fix
    Registry partial = builtin_registry();
    std::erase_if(partial.entries, [](const KnownEntry& e) { return e.id != "async_load_self_reservation"; });
    const Classification behind = classify(partial, trace, v30, run);
    CHECK(behind.is_new());
    CHECK(ids(behind) == std::vector<std::string>{"async_load_self_reservation"});
    CHECK(behind.residue_variant == "v0.30.0+discard_inflight_on_failed_load");
    CHECK(behind.key() == "new:liveness:requests_not_finished after async_load_self_reservation");
}

TEST_CASE("registry: a classification's re-runs share the runs whose read flags agree", "[registry]") {
    const Trace store_first = load("corpus/findings/multiconnector_store_first_p2p_notify_pull.trace");
    const Variant v30 = require_variant("v0.30.0");
    const auto entry = [](const std::string& name, const std::string& fix) {
        return "finding " + name + "\n class upstream\n variants *\n signature crash:recving_not_finished\n" +
               " upstream known #1\n witness x.trace v0.30.0\n fix " + fix + "\n why t\n";
    };
    const Registry r = parse_registry(entry("carried", "+pr54643") +            // the run itself: shared
                                          entry("eager", "flags snapshot_rule=eager") +  // made: still crashes
                                          entry("fixed", "+p2p_pull_only_when_loading"),  // made: gone
                                      "shared.txt");
    const RunResult run = run_trace(store_first, v30);
    const Classification c = classify(r, store_first, v30, run);
    REQUIRE(c.known());
    CHECK(ids(c) == std::vector<std::string>{"fixed"});
    CHECK(c.reruns.made == 2);
    CHECK(c.reruns.shared >= 1);
    CHECK_FALSE(entry_matches(r.entries[0], store_first, v30, run));
    CHECK_FALSE(entry_matches(r.entries[1], store_first, v30, run));
    CHECK(entry_matches(r.entries[2], store_first, v30, run));
}

TEST_CASE("registry: parse errors name file:line and the field", "[registry]") {
    CHECK(parse_error("  class upstream\n") == "r.txt:1: class: a field before the first 'finding ID' line");
    CHECK(parse_error(kEntry + "  colour blue\n") ==
          "r.txt:9: colour: unknown field 'colour' (expected class, variants, signature, stack, event, no_event, flag, "
          "connector, engine, history, upstream, witness, fix, why)");
    CHECK_THAT(parse_error(kEntry + "  engine chunked_prefill=on\n"),
               Catch::StartsWith("r.txt:9: engine: unknown engine setting 'chunked_prefill'"));
    CHECK_THAT(parse_error(kEntry + "  engine\n"), Catch::StartsWith("r.txt:9: engine: expected KEY=VALUE"));
    CHECK_THAT(parse_error(kEntry + "  event nosuch a=b\n"), Catch::StartsWith("r.txt:9: event: unknown event category 'nosuch'"));
    CHECK_THAT(parse_error(kEntry + "  event p2p action\n"), Catch::StartsWith("r.txt:9: event: 'action' is not KEY=VALUE"));
    CHECK_THAT(parse_error(kEntry + "  flag snapshot_rule=sometimes\n"), Catch::StartsWith("r.txt:9: flag: unknown variant flag"));
    CHECK_THAT(parse_error(kEntry + "  history whatever\n"), Catch::StartsWith("r.txt:9: history: unknown history 'whatever'"));
    CHECK_THAT(parse_error(kEntry + "  gone_with patch +pr1\n"), Catch::StartsWith("r.txt:9: gone_with: unknown field"));
    CHECK_THAT(parse_error(kEntry + "  needs a=b\n"), Catch::StartsWith("r.txt:9: needs: unknown field"));
    CHECK_THAT(parse_error(kEntry + "  signature liveness\n"), Catch::StartsWith("r.txt:9: signature: 'liveness' is not KIND:ID"));
    CHECK_THAT(parse_error(kEntry + "  upstream open 50565\n"), Catch::StartsWith("r.txt:9: upstream: '50565' is not"));
    CHECK_THAT(parse_error(std::string(kEntry).replace(kEntry.find("fix describe not modelled"), 25, "fix +nosuch")),
               Catch::StartsWith("r.txt:7: fix: unknown variant patch '+nosuch'"));
    CHECK_THAT(parse_error(std::string(kEntry).replace(kEntry.find("fix describe not modelled"), 25, "fix flags x=y")),
               Catch::StartsWith("r.txt:7: fix: unknown variant flag or value 'x=y'"));
    CHECK(parse_error(kEntry + kEntry) == "r.txt:9: finding: duplicate id 'a'");
    CHECK(parse_error("finding a\n  class upstream\nfinding b\n") == "r.txt:1: a.variants: missing");
    CHECK(parse_error("# nothing\n") == "r.txt:1: finding: the registry has no entry");
    CHECK(parse_error(kEntry) == "no error");
    CHECK_THROWS_AS(load_registry("/nonexistent/registry.txt"), InputError);
}

TEST_CASE("registry: every modelled fix removes its finding from each witness", "[registry][patch]") {
    int checked = 0;
    for (const KnownEntry& entry : builtin_registry().entries) {
        if (!entry.fix.modelled()) continue;
        for (const Witness& w : entry.witnesses) {
            INFO(entry.id << ": " << w.trace << " under " << w.variant << " with " << entry.fix.label());
            const Variant variant = require_variant(w.variant);
            const auto fixed = with_fix(variant, entry.fix);
            REQUIRE(fixed);
            const Trace trace = parse_trace_file(kRepo + "/" + w.trace);
            const RunResult without = run_trace(trace, variant);
            const RunResult with = run_trace(trace, *fixed);
            CHECK(without.verdict != Verdict::pass);
            const std::vector<std::string> stated = stated_causes(trace, w.variant);
            if (stated.size() <= 1) {
                CHECK(with.verdict == Verdict::pass);  // a witness has this one cause: its fix drains it
            } else {
                CHECK(with.signature != without.signature);  // the fix removes this cause; the next one shows
                Variant all = variant;
                for (const std::string& id : stated) all = *with_fix(all, builtin_registry().find(id)->fix);
                CHECK(run_trace(trace, all).verdict == Verdict::pass);
            }
            ++checked;
        }
    }
    CHECK(checked >= 25);
}
