// `kvsim run --json` and `--log-format jsonl`: the typed results parsed back.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sstream>

#include "cli_runner.h"
#include "properties/harness/run_json.h"
#include "sim/trace/trace_parser.h"
#include "sim/variant/variant.h"

using namespace kvsim;
using namespace kvsim::testing;
using nlohmann::json;

namespace {

const std::string kCorpus = std::string(KVSIM_SOURCE_DIR) + "/corpus/";

json run_json_of(const std::string& args, int expected_exit) {
    const CliResult r = run_kvsim("run " + args + " --json");
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == expected_exit);
    return json::parse(r.out);  // the whole stdout is one object
}

std::vector<json> jsonl_of(const std::string& text) {
    std::vector<json> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) out.push_back(json::parse(line));
    return out;
}

}  // namespace

TEST_CASE("run --json: a crash trace", "[cli][json]") {
    const std::string trace = kCorpus + "upstream/seed000_multiconnector_both.trace";
    const json j = run_json_of(trace + " --variant v0.29.0", 2);
    CHECK(j["verdict"] == "crash");
    CHECK(j["signature"] == "crash:missing_current_block_table");
    CHECK(j["variant"] == "v0.29.0");
    CHECK(j["expect"]["status"] == "met");
    CHECK(j["expect"]["expected"]["verdict"] == "crash");
    CHECK(j["repro"] == "kvsim run " + trace + " --variant v0.29.0");
    CHECK(j["digest"].get<std::string>().size() == 16);
    REQUIRE(j["findings"].size() == 1);
    const json& f = j["findings"][0];
    CHECK(f["kind"] == "crash");
    CHECK(f["signature"] == j["signature"]);
    CHECK(f["upstream_file"] == "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/scheduler.py");
    CHECK(f["upstream_function"] == "MooncakeStoreScheduler._apply_current_save_block_ids");
    CHECK(f["connector"] == "store");
    CHECK(f["invariant"].is_null());
    const std::string request = f["request"];
    CHECK(f["detail"] == "Missing current block table for store request " + request);
    CHECK(f["step"] == j["steps"].get<int>() - 1);
    CHECK(f["message"] == j["message"]);
    CHECK(j["crash"]["id"] == "missing_current_block_table");
    CHECK(j["crash"]["request"] == request);

    // the verdict line of the same run carries the same facts
    const CliResult text = run_kvsim("run " + trace + " --variant v0.29.0 --quiet");
    CHECK_THAT(text.out, Catch::Contains("digest=" + j["digest"].get<std::string>()) &&
                             Catch::Contains(" -- " + j["message"].get<std::string>() + " | repro: "));
}

TEST_CASE("run --json: a violation trace", "[cli][json]") {
    const json j = run_json_of(kCorpus + "upstream/seed000_multiconnector_both.trace --variant v0.27.1", 1);
    CHECK(j["verdict"] == "violation");
    CHECK(j["signature"] == "violation:save_tokens_without_blocks");
    CHECK(j["expect"]["status"] == "met");
    CHECK(j["crash"].is_null());
    REQUIRE(j["findings"].size() >= 1);
    for (const json& f : j["findings"]) {
        CHECK(f["kind"] == "violation");
        CHECK(f["step"] == j["steps"].get<int>() - 1);
    }
    const json& f = j["findings"][0];
    CHECK(f["invariant"] == "save_tokens_without_blocks");
    CHECK(f["connector"] == "store");
    CHECK(f["upstream_file"].is_null());
    CHECK(f["request"].is_string());
    CHECK(f["tokens"]["end"].get<int>() > f["tokens"]["start"].get<int>());
    CHECK_THAT(f["message"].get<std::string>(),
               Catch::StartsWith("step " + std::to_string(f["step"].get<int>()) + ": save_tokens_without_blocks request=" +
                                 f["request"].get<std::string>()));

    const json freed = run_json_of(kCorpus + "upstream/issue52360_preempted_save_reads_reused_blocks.trace --variant v0.27.1", 1);
    const json& read = freed["findings"][0];
    CHECK(read["invariant"] == "read_freed_block");
    CHECK(read["rank"].is_number_integer());
    CHECK_FALSE(read["blocks"].empty());
}

TEST_CASE("run --json: a liveness trace", "[cli][json]") {
    const json j = run_json_of(kCorpus + "findings/finished_load_behind_unadmittable_head.trace", 3);
    CHECK(j["verdict"] == "liveness");
    CHECK(j["signature"] == "liveness:requests_not_finished");
    CHECK(j["expect"]["status"] == "met");
    REQUIRE(j["findings"].size() == 1);
    const json& f = j["findings"][0];
    CHECK(f["kind"] == "liveness");
    CHECK(f["invariant"] == "requests_not_finished");
    CHECK(f["facts"]["max_steps"] == 200);
    CHECK(f["facts"]["unfinished"].get<int>() >= 1);
    CHECK(f["message"] == "step limit 200 reached: " + std::to_string(f["facts"]["unfinished"].get<int>()) +
                              " request(s) unfinished, " + std::to_string(f["facts"]["held"].get<int>()) +
                              " finished but holding blocks");
}

TEST_CASE("run --json: the registry's cause set and the settings off upstream's defaults", "[cli][json][settings]") {
    const CliResult r = run_kvsim("run " + kCorpus + "upstream/seed000_multiconnector_both.trace --variant v0.29.0 --json");
    REQUIRE(r.exit_code == 2);
    const json j = json::parse(r.out);
    CHECK(j["registry"]["outcome"] == "known");
    REQUIRE(j["registry"]["causes"].size() == 1);
    CHECK(j["registry"]["causes"][0]["id"] == "seed000_pending_load_save");
    CHECK(j["registry"]["causes"][0]["fix"] == "+pr54643");
    std::vector<std::string> setting_keys;
    for (const json& d : j["settings"]) {
        if (d["group"] == "setting") setting_keys.push_back(d["key"]);
        if (d["group"] == "setting") CHECK_FALSE(d["source"].get<std::string>().empty());
        if (d["group"] == "sizing") CHECK(d["key"].get<std::string>().starts_with("engine."));
    }
    // kv_both children of a kv_both MultiConnector are no documented deployment; async scheduling is off
    CHECK(setting_keys == std::vector<std::string>{"stack", "engine.async_scheduling"});
    // the documented prefiller at upstream's defaults: no setting differs
    const CliResult d = run_kvsim("run " + kCorpus + "findings/inflight_write_producer_store_load.trace --json");
    const json dj = json::parse(d.out);
    for (const json& s : dj["settings"]) CHECK((s["group"] == "sizing" || s["group"] == "environment"));
    CHECK(dj["registry"]["causes"][0]["id"] == "inflight_write_producer_store_load");
}

TEST_CASE("run --log-format jsonl: one object per event, the text log's fields", "[cli][json]") {
    const std::string trace = kCorpus + "upstream/seed000_multiconnector_both.trace";
    const CliResult text = run_kvsim("run " + trace + " --variant v0.29.0");
    const CliResult jsonl = run_kvsim("run " + trace + " --variant v0.29.0 --log-format jsonl");
    REQUIRE(jsonl.exit_code == 2);
    // the same verdict line ends both
    const auto last_line = [](const std::string& s) { return s.substr(s.rfind('\n', s.size() - 2) + 1); };
    CHECK(last_line(jsonl.out) == last_line(text.out));
    const std::vector<json> events = jsonl_of(jsonl.out.substr(0, jsonl.out.size() - last_line(jsonl.out).size()));
    // every line of the text log but the verdict line and the registry's classification line before it
    const auto text_lines = std::count(text.out.begin(), text.out.end(), '\n') - 2;
    REQUIRE_THAT(text.out, Catch::Contains("\nregistry: known: seed000_pending_load_save (fix +pr54643)\n"));
    REQUIRE(static_cast<long>(events.size()) == text_lines);

    const json& arrive = events.front();
    CHECK(arrive["step"] == 0);
    CHECK(arrive["category"] == "arrive");
    CHECK(arrive["request"].is_string());
    CHECK(arrive["prompt"].is_number_integer());
    CHECK(arrive["remote_prefill"].is_boolean());
    const std::string first_line = text.out.substr(0, text.out.find('\n'));
    CHECK_THAT(first_line, Catch::Contains(arrive["request"].get<std::string>() +
                                           " prompt=" + std::to_string(arrive["prompt"].get<int>())));

    const json& park = events.at(2);
    CHECK(park["category"] == "park");
    CHECK(park["request"] == arrive["request"]);
    CHECK(park["blocks"] == json::array({1, 2, 3}));
    CHECK(park["external"] == 48);
    const json& crash = events.back();
    CHECK(crash["category"] == "crash");
    CHECK(crash["id"] == "missing_current_block_table");
    CHECK(crash["function"] == "MooncakeStoreScheduler._apply_current_save_block_ids");
}

TEST_CASE("events render to the text log, and their JSON carries every field", "[json]") {
    const Trace trace = parse_trace_file(kCorpus + "examples/06_store_saves_with_faults.trace");
    const RunResult r = run_trace(trace, require_variant(trace.run.variant));
    std::string rendered;
    for (const LogEvent& e : r.events) rendered += render_line(e);
    CHECK(rendered == r.log);
    for (const LogEvent& e : r.events) {
        const json j = json::parse(event_json(e).dump());
        CHECK(j["category"] == std::string(to_string(e.category)));
        CHECK(j.size() == e.fields.size() + 2);
        if (!e.request().empty()) CHECK(j["request"] == std::string(e.request()));
    }
}

TEST_CASE("run --log-format with --json or --quiet and no --log is refused, not dropped", "[cli][json]") {
    const std::string trace = kCorpus + "upstream/seed000_multiconnector_both.trace";
    for (const std::string mode : {"--json", "--quiet"}) {
        const CliResult r = run_kvsim("run " + trace + " --variant v0.29.0 --log-format jsonl " + mode);
        INFO(mode);
        CHECK(r.exit_code == 64);
        CHECK(r.out.empty());
        CHECK(r.err == "kvsim: --log-format: with " + mode + " the event log is written only to --log FILE; give --log\n");
    }
    const std::string log = (scratch_dir() / "json-with-jsonl.jsonl").string();
    const CliResult with_log = run_kvsim("run " + trace + " --variant v0.29.0 --log-format jsonl --json --log " + log);
    CHECK(with_log.exit_code == 2);
    CHECK(json::parse(with_log.out)["verdict"] == "crash");
    CHECK_FALSE(jsonl_of(slurp(log)).empty());
    CHECK(run_kvsim("run " + trace + " --variant v0.29.0 --json").exit_code == 2);  // the default format is fine
}
