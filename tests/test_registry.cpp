// The registry of known findings (properties/findings): its witnesses, its coverage of the
// corpus, its parse errors, and that a new cause behind a known signature is NEW.
#include <catch2/catch.hpp>

#include "planted_traces.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "properties/findings/classify.h"
#include "properties/findings/registry.h"
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

const KnownEntry* classified(const Trace& trace, const std::string& variant_name, const Registry& r = builtin_registry()) {
    const Variant variant = require_variant(variant_name);
    return classify(r, trace, variant, run_trace(trace, variant));
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
    "  fix +a_patch_that_does_not_exist_yet\n"      // 7
    "  why a test\n";                                // 8

const std::string& kPendingLookup = kvsim::testing::kPendingLookupLiveness;

}  // namespace

TEST_CASE("registry: every entry's witnesses still classify as that entry, on the variants it names", "[registry]") {
    const Registry& registry = builtin_registry();
    REQUIRE(registry.entries.size() >= 11);
    for (const KnownEntry& e : registry.entries) {
        REQUIRE_FALSE(e.witnesses.empty());
        for (const Witness& w : e.witnesses) {
            INFO(e.id << ": " << w.trace << " under " << w.variant);
            REQUIRE(e.applies_to(w.variant));
            const Trace trace = load(w.trace);
            const KnownEntry* got = classified(trace, w.variant);
            // A failure here means the cause was fixed (or the matcher drifted): update or delete the entry.
            REQUIRE(got != nullptr);
            CHECK(got->id == e.id);
            // A muted run (a fuzz input's) has no events: the classifier replays it for those it reads.
            const Variant variant = require_variant(w.variant);
            const RunOptions muted{.text_log = false, .events = false};
            const RunResult quiet = run_trace(trace, variant, muted);
            REQUIRE(quiet.events.empty());
            const KnownEntry* from_muted = classify(registry, trace, variant, quiet, muted);
            REQUIRE(from_muted != nullptr);
            CHECK(from_muted->id == e.id);
            // The fuzz target's runs keep the categories the registry reads: classified without a replay.
            const RunOptions lean{.text_log = false, .events = false, .muted_keeps = registry.events_read()};
            const RunResult kept = run_trace(trace, variant, lean);
            CHECK(kept.events_kept == registry.events_read());
            const KnownEntry* from_kept = classify(registry, trace, variant, kept, lean);
            REQUIRE(from_kept != nullptr);
            CHECK(from_kept->id == e.id);
        }
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
    CHECK(event_conditions > 10);
    CHECK(read == EventCategories{EventCategory::invalid, EventCategory::load, EventCategory::p2p, EventCategory::worker});
    CHECK_FALSE(read.contains(EventCategory::schedule));  // the costly categories stay muted
    CHECK_FALSE(read.contains(EventCategory::alloc));
    CHECK(events_read(Condition{.kind = ConditionKind::history, .value = "loaded_but_never_promoted"}) ==
          EventCategories::all());
    CHECK(events_read(Condition{.kind = ConditionKind::gone_with}).empty());
}

TEST_CASE("registry: every failing expect line of the corpus is a known finding", "[registry]") {
    int failing = 0;
    for (const auto& f : fs::recursive_directory_iterator(kRepo + "/corpus")) {
        if (f.path().extension() != ".trace") continue;
        const std::string relative = fs::relative(f.path(), kRepo).string();
        const Trace trace = load(relative);
        for (const Expectation& x : trace.expectations) {
            // a documented step-check mismatch (corpus/conformance) is a statement about upstream, not a finding
            if (x.verdict == Verdict::pass || x.verdict == Verdict::mismatch) continue;
            ++failing;
            INFO(relative << " under " << x.variant);
            CHECK(classified(trace, x.variant) != nullptr);
        }
    }
    REQUIRE(failing >= 20);
}

TEST_CASE("registry: a new cause behind a known signature is NEW", "[registry]") {
    const Trace pending = parse_trace(kPendingLookup, "pending.trace");
    const Variant v30 = require_variant("v0.30.0");
    const RunResult r = run_trace(pending, v30);
    REQUIRE(r.signature == "liveness:requests_not_finished");  // the signature of three known entries
    REQUIRE(classify(builtin_registry(), pending, v30, r) == nullptr);
    // the known witness of the same signature is known, and an entry whose condition it fails is not
    const Trace cascade = load("corpus/findings/store_pins_make_preemption_free_nothing.trace");
    REQUIRE(classified(cascade, "v0.30.0") != nullptr);
    const Registry narrow = parse_registry(kEntry + "  history loaded_but_never_promoted\n", "narrow.txt");
    REQUIRE(classified(cascade, "v0.30.0", narrow) == nullptr);
    const Registry broad = parse_registry(kEntry, "broad.txt");
    REQUIRE(classified(cascade, "v0.30.0", broad) == &broad.entries.front());
}

TEST_CASE("registry: conditions over typed fields, the stack, settings and counterfactual re-runs", "[registry]") {
    const Trace store_first = load("corpus/findings/multiconnector_store_first_p2p_notify_pull.trace");
    const std::string head = "finding b\n class upstream\n variants *\n signature crash:recving_not_finished\n"
                             " upstream known #1\n witness x.trace v0.30.0\n fix +p\n why t\n";
    const auto known_with = [&](const std::string& conditions) {
        const Registry r = parse_registry(head + conditions, "c.txt");
        return classified(store_first, "v0.30.0", r) != nullptr;
    };
    CHECK(known_with(" stack store,p2p\n"));
    CHECK_FALSE(known_with(" stack p2p,store\n"));
    CHECK(known_with(" event p2p action=pull_result request=$request notify_only=true\n"));
    CHECK_FALSE(known_with(" event p2p action=pull_result request=$request notify_only=false\n"));
    CHECK(known_with(" no_event p2p action=finished_before_alloc\n"));
    CHECK(known_with(" connector store load_async=off\n"));
    CHECK_FALSE(known_with(" connector store load_async=on\n"));
    // the engine settings as resolved: the keys the trace states, else the variant's defaults
    Trace stated = store_first;
    stated.engine.async_scheduling = false;
    stated.engine.kv_load_failure_policy = LoadFailurePolicy::recompute;
    const auto stated_known_with = [&](const std::string& conditions) {
        return classified(stated, "v0.30.0", parse_registry(head + conditions, "c.txt")) != nullptr;
    };
    CHECK(stated_known_with(" engine async_scheduling=off kv_load_failure_policy=recompute\n"));
    CHECK_FALSE(stated_known_with(" engine async_scheduling=on\n"));
    CHECK_FALSE(stated_known_with(" engine kv_load_failure_policy=fail\n"));
    const Variant v30 = require_variant("v0.30.0");
    CHECK(known_with(fmt::format(" engine kv_load_failure_policy={}\n", to_string(v30.load_failure_policy_default))));
    CHECK(known_with(" flag pending_load_guard=on\n"));
    CHECK_FALSE(known_with(" flag pending_load_guard=off\n"));
    CHECK_FALSE(known_with(" gone_with flags snapshot_rule=eager\n"));  // still crashes so
    CHECK_FALSE(known_with(" gone_with patch +not_a_patch_yet\n"));     // unresolvable: no match
    CHECK_FALSE(known_with(" gone_with flags pending_load_guard=on\n"));  // the variant's own flags: the same run
    CHECK_FALSE(known_with(" gone_with patch +pr54643\n"));             // a patch v0.30.0 already carries
    CHECK_FALSE(known_with(" gone_with no_fault load_fail\n"));         // no such fault to take out: the same trace
    CHECK(known_with(" gone_with patch +p2p_pull_only_when_loading\n"));  // the fix: the crash is gone
    const Registry old_only = parse_registry(std::string(head).replace(head.find("variants *"), 10, "variants v0.29.0*"), "o.txt");
    CHECK(classified(store_first, "v0.30.0", old_only) == nullptr);  // applies to v0.29.0* only
    CHECK(classified(store_first, "v0.29.0", old_only) != nullptr);
}

namespace {

// A flag the run of `trace` under `variant` never read, and a value of it other than the variant's.
std::pair<std::string, std::string> unread_flag(const Trace& trace, const Variant& variant) {
    const std::uint32_t read = run_trace(trace, variant).flags_read;
    const std::vector<int> bits = variant_flag_bits();
    for (std::size_t row = 0; row < bits.size(); ++row) {
        if ((read >> bits[row] & 1u) != 0) continue;
        const FlagDescription& flag = variant_flags()[row];
        for (const std::string_view value : flag.value_names)
            if (value != variant_flag_value(variant, flag.flag)) return {std::string(flag.flag), std::string(value)};
    }
    return {};
}

}  // namespace

TEST_CASE("registry: a classification's counterfactuals share the runs whose read flags agree", "[registry]") {
    const Trace store_first = load("corpus/findings/multiconnector_store_first_p2p_notify_pull.trace");
    const Variant v30 = require_variant("v0.30.0");
    Variant eager = v30;
    REQUIRE(set_variant_flag(eager, "snapshot_rule", "eager"));
    const auto [flag, value] = unread_flag(store_first, eager);
    REQUIRE_FALSE(flag.empty());
    const auto entry = [](const std::string& name, const std::string& condition) {
        return "finding " + name + "\n class upstream\n variants *\n signature crash:recving_not_finished\n" +
               " upstream known #1\n witness x.trace v0.30.0\n fix +p\n why t\n gone_with " + condition + "\n";
    };
    const Registry r = parse_registry(entry("carried", "patch +pr54643") +           // the run itself: shared
                                          entry("eager", "flags snapshot_rule=eager") +  // made: still crashes
                                          entry("eager_and_unread", "flags snapshot_rule=eager " + flag + "=" + value) +
                                          entry("fixed", "patch +p2p_pull_only_when_loading"),  // made: gone
                                      "shared.txt");
    const RunResult run = run_trace(store_first, v30);
    VariantReruns reruns;
    const KnownEntry* known = classify(r, store_first, v30, run, {}, &reruns);
    REQUIRE(known != nullptr);
    CHECK(known->id == "fixed");  // a run shared regardless of the flags it read would have said "still crashes"
    CHECK(reruns.made == 2);
    CHECK(reruns.shared == 2);
    // each entry on its own (its own re-runs) decides as it did within the classification
    CHECK_FALSE(entry_matches(r.entries[0], store_first, v30, run));
    CHECK_FALSE(entry_matches(r.entries[1], store_first, v30, run));
    CHECK_FALSE(entry_matches(r.entries[2], store_first, v30, run));
    CHECK(entry_matches(r.entries[3], store_first, v30, run));
    // the unread flag, set on its own over the eager variant, makes the eager run again
    Variant both = eager;
    REQUIRE(set_variant_flag(both, flag, value));
    CHECK(run_trace(store_first, both).signature == run_trace(store_first, eager).signature);
}

TEST_CASE("registry: classifying each witness with shared re-runs agrees with each entry's own", "[registry]") {
    int shared = 0, compared = 0;
    for (const KnownEntry& owner : builtin_registry().entries) {
        for (const Witness& w : owner.witnesses) {
            INFO(w.trace << " under " << w.variant);
            const Trace trace = load(w.trace);
            const Variant variant = require_variant(w.variant);
            const RunResult run = run_trace(trace, variant);
            VariantReruns reruns;
            const KnownEntry* known = classify(builtin_registry(), trace, variant, run, {}, &reruns);
            const auto& entries = builtin_registry().entries;
            const auto alone = std::find_if(entries.begin(), entries.end(), [&](const KnownEntry& e) {
                return entry_matches(e, trace, variant, run, {}, &builtin_registry());
            });
            CHECK(known == (alone == entries.end() ? nullptr : &*alone));
            shared += reruns.shared;
            ++compared;
        }
    }
    CHECK(compared > 30);
    CHECK(shared > 0);
}

TEST_CASE("registry: parse errors name file:line and the field", "[registry]") {
    CHECK(parse_error("  class upstream\n") == "r.txt:1: class: a field before the first 'finding ID' line");
    CHECK(parse_error(kEntry + "  colour blue\n") ==
          "r.txt:9: colour: unknown field 'colour' (expected class, variants, signature, stack, event, no_event, flag, "
          "connector, engine, history, gone_with, known_with, upstream, needs, witness, fix, why)");
    CHECK_THAT(parse_error(kEntry + "  engine chunked_prefill=on\n"),
               Catch::StartsWith("r.txt:9: engine: unknown engine setting 'chunked_prefill'"));
    CHECK_THAT(parse_error(kEntry + "  engine\n"), Catch::StartsWith("r.txt:9: engine: expected KEY=VALUE"));
    CHECK_THAT(parse_error(kEntry + "  event nosuch a=b\n"), Catch::StartsWith("r.txt:9: event: unknown event category 'nosuch'"));
    CHECK_THAT(parse_error(kEntry + "  event p2p action\n"), Catch::StartsWith("r.txt:9: event: 'action' is not KEY=VALUE"));
    CHECK_THAT(parse_error(kEntry + "  flag snapshot_rule=sometimes\n"), Catch::StartsWith("r.txt:9: flag: unknown variant flag"));
    CHECK_THAT(parse_error(kEntry + "  history whatever\n"), Catch::StartsWith("r.txt:9: history: unknown history 'whatever'"));
    CHECK_THAT(parse_error(kEntry + "  gone_with patch pr1\n"), Catch::StartsWith("r.txt:9: gone_with: a patch is written +NAME"));
    CHECK_THAT(parse_error(kEntry + "  known_with patch pr1\n"), Catch::StartsWith("r.txt:9: known_with: a patch is written +NAME"));
    CHECK_THAT(parse_error(kEntry + "  known_with flags snapshot_rule=eager\n"),
               Catch::StartsWith("r.txt:9: known_with: only a patch is known_with's edit"));
    CHECK_THAT(parse_error(kEntry + "  signature liveness\n"), Catch::StartsWith("r.txt:9: signature: 'liveness' is not KIND:ID"));
    CHECK_THAT(parse_error(kEntry + "  upstream open 50565\n"), Catch::StartsWith("r.txt:9: upstream: '50565' is not"));
    CHECK(parse_error(kEntry + kEntry) == "r.txt:9: finding: duplicate id 'a'");
    CHECK(parse_error("finding a\n  class upstream\nfinding b\n") == "r.txt:1: a.variants: missing");
    CHECK(parse_error("# nothing\n") == "r.txt:1: finding: the registry has no entry");
    CHECK(parse_error(kEntry) == "no error");  // a fix patch need not resolve (yet)
    CHECK_THROWS_AS(load_registry("/nonexistent/registry.txt"), InputError);
}

TEST_CASE("registry: every fix patch resolves and removes its finding from each witness", "[registry][patch]") {
    int checked = 0;
    for (const KnownEntry& entry : builtin_registry().entries) {
        if (entry.fix_patch.empty()) continue;
        for (const Witness& w : entry.witnesses) {
            const std::string patched = w.variant + entry.fix_patch;
            INFO(entry.id << ": " << w.trace << " under " << patched);
            std::string error;
            const auto variant = resolve_variant(patched, &error);
            REQUIRE(variant);
            const Trace trace = parse_trace_file(kRepo + "/" + w.trace);
            const RunResult without = run_trace(trace, require_variant(w.variant));
            const RunResult with = run_trace(trace, *variant);
            CHECK(without.verdict != Verdict::pass);
            CHECK(with.signature != without.signature);
            ++checked;
        }
    }
    CHECK(checked >= 10);
}

TEST_CASE("registry: known_with holds when the patched run fails as another known entry", "[registry]") {
    const Trace trace = load("corpus/findings/store_pin_cascade_hides_finished_load_behind_unadmittable_head.trace");
    const auto entry = [](const std::string& id, const std::string& condition) {
        return "finding " + id + "\n class upstream\n variants *\n signature liveness:requests_not_finished\n" +
               " upstream known #1\n witness x.trace v0.30.0\n fix +p\n why t\n " + condition + "\n";
    };
    const std::string behind = entry("behind", "gone_with patch +pr57841");
    const std::string hiding = entry("hiding", "known_with patch +pin_aware_preemption");
    const Registry both = parse_registry(behind + hiding, "k.txt");
    // +pr57841 alone leaves the cascade: `behind` does not match; behind the cascade it does
    REQUIRE(classified(trace, "v0.30.0", both) == &both.entries[1]);
    REQUIRE(classified(trace, "v0.30.0+pin_aware_preemption", both) == &both.entries[0]);
    // nothing else known behind it, or the patch leaves nothing: no match
    const Registry alone = parse_registry(hiding, "a.txt");
    CHECK(classified(trace, "v0.30.0", alone) == nullptr);
    const Registry drained = parse_registry(behind + entry("drained", "known_with patch +all_fixes"), "d.txt");
    CHECK(classified(trace, "v0.30.0", drained) == nullptr);
    CHECK(classified(trace, "v0.30.0")->id == "store_pin_cascade_hides_known_finding");
}
