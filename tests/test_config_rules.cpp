// Upstream's configuration rules (sim/trace/config_rules.h): a trace a rule rejects under the run's
// variant never runs, ends with verdict rejected and exit 78, and names the rule and its citation.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "cli_runner.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/run_trace.h"
#include "sim/common/upstream_assertion.h"
#include "sim/engine/engine.h"
#include "sim/trace/config_rules.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_schema.h"

using namespace kvsim;

namespace {

const std::string kHead = "kvsim-trace 1\n";

Trace parsed(const std::string& engine_and_connectors) {
    return parse_trace(kHead + engine_and_connectors + "segment s len=8\n@0 arrive r1 prompt=s max_tokens=2\n", "t.trace");
}

std::string rejected_by(const Trace& trace, const std::string& variant) {
    const auto r = upstream_rejects(trace, require_variant(variant));
    return r ? std::string(r->rule->id) : std::string();
}

}  // namespace

TEST_CASE("config rules: every row cites upstream and names what it rejects", "[rules]") {
    REQUIRE(config_rules().size() >= 6);
    for (const ConfigRule& rule : config_rules()) {
        INFO(rule.id);
        CHECK_FALSE(rule.rejects.empty());
        CHECK_FALSE(rule.message.empty());
        CHECK_FALSE(rule.variants.empty());
        CHECK((rule.upstream.find(" @ ") != std::string_view::npos || rule.upstream.find('#') != std::string_view::npos));
        CHECK(rule.breach != nullptr);
        CHECK_THAT(format_help(), Catch::Contains(std::string(rule.id)));
    }
}

TEST_CASE("config rules: a synchronous store load is refused, unless a published hotfix lifts it", "[rules]") {
    const Trace sync = parsed("engine block_size=4 num_blocks=9 max_model_len=32\nconnector store role=kv_both load_async=off\n");
    for (const char* release : {"v0.27.1", "v0.29.0", "v0.30.0", "v0.30.0+all_fixes"})
        CHECK(rejected_by(sync, release) == "store_load_async");
    CHECK(rejected_by(sync, "v0.30.0+sync_store_load_hotfix").empty());
    // a kv_consumer that neither looks up nor saves decode blocks never reaches the assertion
    const Trace capacity = parsed("engine block_size=4 num_blocks=9 max_model_len=32\n"
                                  "connector store role=kv_consumer load_async=off enable_lookup=off\n");
    CHECK(rejected_by(capacity, "v0.30.0").empty());
    const RunResult r = run_trace(sync, require_variant("v0.30.0"));
    CHECK(r.verdict == Verdict::rejected);
    CHECK(r.signature == "rejected:store_load_async");
    CHECK(r.steps == 0);
    CHECK(exit_code::of(r.verdict) == 78);
    CHECK_THAT(r.message, Catch::Contains("load_async must be True for better performance.") &&
                              Catch::Contains("store/worker.py") && Catch::Contains("003df2961dd8830c317a61f9745ccd557da9fa06"));
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings.front().fact_text("field") == "connector.load_async");
    CHECK(r.findings.front().fact("line") == 3);
}

TEST_CASE("config rules: the store worker's own model asserts where a rule does not stand in front", "[rules]") {
    const Trace sync = parsed("engine block_size=4 num_blocks=9 max_model_len=32\nconnector store role=kv_both load_async=off\n");
    Engine engine(sync, require_variant("v0.30.0"));
    try {
        engine.run_step(0);
        FAIL("the worker ran a synchronous store load");
    } catch (const UpstreamAssertion& a) {
        CHECK(a.id() == "store_load_async");
        CHECK_THAT(a.site(), Catch::Contains("MooncakeStoreWorker.get_finished"));
    }
}

TEST_CASE("config rules: a MultiConnector needs its own kv_role", "[rules]") {
    const Trace unnamed = parsed("engine block_size=4 num_blocks=9 max_model_len=32\n"
                                 "connector p2p role=kv_consumer\nconnector store role=kv_consumer\n");
    CHECK(rejected_by(unnamed, "v0.30.0") == "kv_role_required");
    const Trace named = parsed("engine block_size=4 num_blocks=9 max_model_len=32\nmulti role=kv_consumer\n"
                               "connector p2p role=kv_consumer\nconnector store role=kv_consumer\n");
    CHECK(rejected_by(named, "v0.30.0").empty());
    CHECK(top_level_role(named) == KvRole::kv_consumer);
    CHECK(top_level_role(unnamed) == std::nullopt);
}

TEST_CASE("config rules: the KV cache holds one request of max_model_len tokens, the null block apart", "[rules]") {
    // 9 blocks of 4 tokens: 36 tokens with the null block, 32 without
    CHECK(rejected_by(parsed("engine block_size=4 num_blocks=9 max_model_len=32\n"), "v0.30.0").empty());
    CHECK(rejected_by(parsed("engine block_size=4 num_blocks=9 max_model_len=33\n"), "v0.30.0") ==
          "kv_cache_reserves_null_block");
    CHECK(rejected_by(parsed("engine block_size=4 num_blocks=9 max_model_len=36\n"), "v0.30.0+pre47272").empty());
    CHECK(rejected_by(parsed("engine block_size=4 num_blocks=9 max_model_len=36\n"), "v0.27.1").empty());
    CHECK(rejected_by(parsed("engine block_size=4 num_blocks=9 max_model_len=37\n"), "v0.27.1") ==
          "kv_cache_holds_max_model_len");
    CHECK(rejected_by(parsed("engine block_size=4 num_blocks=9 max_model_len=37\n"), "v0.30.0") ==
          "kv_cache_holds_max_model_len");
}

TEST_CASE("config rules: the scheduler config's budget checks", "[rules]") {
    CHECK(rejected_by(parsed("engine block_size=4 num_blocks=9 max_model_len=32 chunked_prefill=off max_batched_tokens=16\n"),
                      "v0.30.0") == "chunked_prefill_budget");
    CHECK(rejected_by(parsed("engine block_size=4 num_blocks=9 max_model_len=32 chunked_prefill=off max_batched_tokens=32\n"),
                      "v0.30.0")
              .empty());
    CHECK(rejected_by(parsed("engine block_size=4 num_blocks=9 max_model_len=32 max_batched_tokens=8 max_running=9\n"),
                      "v0.30.0") == "batched_tokens_below_max_num_seqs");
    CHECK(rejected_by(parsed("engine block_size=4 num_blocks=9 max_model_len=32 max_batched_tokens=8 max_running=8\n"),
                      "v0.30.0")
              .empty());
}

TEST_CASE("config rules: kvsim run stops before step 0 with one line naming the rule, exit 78", "[rules][cli]") {
    using namespace kvsim::testing;
    const auto path = write_scratch("rejected.trace", kHead + "engine block_size=4 num_blocks=9 max_model_len=32\n"
                                                              "run variant=v0.30.0\n"
                                                              "connector store role=kv_both load_async=off\n"
                                                              "segment s len=8\n@0 arrive r1 prompt=s max_tokens=2\n");
    const auto r = run_kvsim("run " + path);
    CHECK(r.exit_code == 78);
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::StartsWith("kvsim: " + path + ":4: connector.load_async: upstream rejects this configuration "
                                               "(rule store_load_async)"));
    const auto json = run_kvsim("run " + path + " --json");
    CHECK(json.exit_code == 78);
    const auto j = nlohmann::json::parse(json.out);
    CHECK(j["verdict"] == "rejected");
    CHECK(j["signature"] == "rejected:store_load_async");
    const auto both = run_kvsim("run " + path + " --async-scheduling both --quiet");
    CHECK(both.exit_code == 78);
    CHECK_THAT(both.err, Catch::StartsWith("kvsim: [async_scheduling=off] " + path + ":4: connector.load_async: "));
    const auto lifted = run_kvsim("run " + path + " --variant v0.30.0+sync_store_load_hotfix --quiet");
    CHECK(lifted.exit_code == 0);
    const auto matrix = run_kvsim("matrix " + path + " --variants v0.30.0,v0.30.0+sync_store_load_hotfix");
    CHECK_THAT(matrix.out, Catch::Contains("rejected (store_load_async)"));
}
