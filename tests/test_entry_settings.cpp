// What each root cause needs, computed from its witnesses (properties/findings/entry_settings.h), and
// `kvsim findings`, which prints it: the table of properties/findings/README.md is its output.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>

#include "cli_runner.h"
#include "properties/findings/entry_settings.h"
#include "properties/findings/registry.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"

using namespace kvsim;
using kvsim::testing::run_kvsim;

namespace {

const std::string kRoot = KVSIM_SOURCE_DIR;

// Two witnesses of one entry, from text: one at upstream's defaults but for a prefix-caching switch,
// one that also turns async scheduling off.
std::map<std::string, std::string> two_witnesses() {
    const std::string head =
        "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_batched_tokens=1024 max_running=16 max_model_len=512";
    const std::string tail = "\nconnector store role=kv_both\nsegment s len=8\n@0 arrive r1 prompt=s max_tokens=2\n";
    return {{"a.trace", head + " prefix_caching=off" + tail},
            {"b.trace", head + " prefix_caching=off async_scheduling=off" + tail},
            {"defaults.trace", head + tail}};
}

WitnessLoader from_map(const std::map<std::string, std::string>& files) {
    return [files](const std::string& path) { return parse_trace(files.at(path), path); };
}

KnownEntry entry_with(std::vector<Witness> witnesses) {
    KnownEntry e;
    e.id = "x";
    e.line = 3;
    e.witnesses = std::move(witnesses);
    return e;
}

}  // namespace

TEST_CASE("entry settings: needs are the settings every witness differs in", "[findings][settings]") {
    const KnownEntry e = entry_with({{"a.trace", "v0.30.0"}, {"b.trace", "v0.30.0"}});
    const EntrySettings s = entry_settings(e, from_map(two_witnesses()), "r.txt");
    REQUIRE(s.witnesses.size() == 2);
    CHECK(s.witnesses[0].settings.size() == 1);
    CHECK(s.witnesses[1].settings.size() == 2);
    REQUIRE(s.needs.size() == 1);
    CHECK(s.needs[0].key == "engine.prefix_caching");
    CHECK(s.needs[0].value == "off");
    CHECK(s.needs[0].upstream == "on");
    CHECK_FALSE(s.needs[0].source.empty());
    CHECK_FALSE(s.reachable_with_defaults);

    const EntrySettings d = entry_settings(entry_with({{"a.trace", "v0.30.0"}, {"defaults.trace", "v0.30.0"}}),
                                           from_map(two_witnesses()), "r.txt");
    CHECK(d.reachable_with_defaults);
    CHECK(d.needs.empty());
    CHECK_THAT(findings_table({d}), Catch::Contains("| `x` | upstream | not_reported | yes | nothing: upstream's defaults |"));
}

TEST_CASE("entry settings: a witness whose variant does not resolve names the registry line", "[findings][settings]") {
    const KnownEntry e = entry_with({{"a.trace", "v9.9.9"}});
    try {
        entry_settings(e, from_map(two_witnesses()), "r.txt");
        FAIL("no error");
    } catch (const InputError& error) {
        CHECK(error.file() == "r.txt");
        CHECK(error.line() == 3);
        CHECK(error.field() == "witness");
    }
}

TEST_CASE("entry settings: the registry's one cause reachable with upstream's defaults is computed, not typed",
          "[findings][settings]") {
    const std::vector<EntrySettings> all = registry_settings(builtin_registry(), witness_loader(kRoot));
    REQUIRE(all.size() == builtin_registry().entries.size());
    std::vector<std::string> reachable;
    for (const EntrySettings& s : all)
        if (s.reachable_with_defaults && s.entry->finding_class == FindingClass::upstream) reachable.push_back(s.entry->id);
    // #45357's frees deferred only for a top-level consumer: the documented prefiller, async store loads
    // landing within the step, everything else upstream's default.
    CHECK(std::find(reachable.begin(), reachable.end(), "inflight_write_producer_store_load") != reachable.end());
    for (const EntrySettings& s : all) {
        INFO(s.entry->id);
        for (const WitnessSettings& w : s.witnesses)
            for (const SettingDifference& d : w.settings)
                CHECK_FALSE(d.key == "connector.store.load_async");  // refused upstream (rule store_load_async)
    }
}

TEST_CASE("properties/findings/README.md carries the current `kvsim findings --markdown` table", "[findings][docs]") {
    std::ifstream in(kRoot + "/properties/findings/README.md", std::ios::binary);
    REQUIRE(in);
    const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO("a root cause or its witnesses changed: run scripts/update-findings-doc");
    CHECK(readme.find(findings_table(registry_settings(builtin_registry(), witness_loader(kRoot)))) !=
          std::string::npos);
}

TEST_CASE("kvsim findings prints every entry, as text, JSON and markdown", "[findings][cli]") {
    const auto text = run_kvsim("findings --root " + kRoot);
    REQUIRE(text.exit_code == 0);
    CHECK_THAT(text.out, Catch::Contains("inflight_write_producer_store_load  upstream  upstream not_reported") &&
                             Catch::Contains("  reachable with upstream's defaults\n"));
    const auto json = run_kvsim("findings --json --root " + kRoot);
    REQUIRE(json.exit_code == 0);
    const auto parsed = nlohmann::json::parse(json.out);
    REQUIRE(parsed.size() == builtin_registry().entries.size());
    CHECK(parsed[0].contains("needs"));
    CHECK(parsed[0]["witnesses"][0].contains("settings"));
    const auto md = run_kvsim("findings --markdown --root " + kRoot);
    CHECK(md.out == findings_table(registry_settings(builtin_registry(), witness_loader(kRoot))));

    const auto nowhere = run_kvsim("findings --root /nonexistent");
    CHECK(nowhere.exit_code == 65);
    CHECK_THAT(nowhere.err, Catch::StartsWith("/nonexistent/corpus/") && Catch::Contains(":0: file: "));
    CHECK(run_kvsim("findings --json --markdown").exit_code == 64);
}
