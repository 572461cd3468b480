#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"
#include "properties/harness/lifecycle_coverage.h"
#include "properties/lifecycle/lifecycle_graph.h"
#include "sim/variant/variant.h"

using namespace kvsim::testing;

namespace {
const std::string kExamples = std::string(KVSIM_SOURCE_DIR) + "/corpus/examples";

int example_count() {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(kExamples)) n += e.path().extension() == ".trace" ? 1 : 0;
    return n;
}
}  // namespace

TEST_CASE("kvsim coverage lists the lifecycle edges exercised and never reached", "[coverage]") {
    const auto r = run_kvsim("coverage " + kExamples);
    REQUIRE(r.exit_code == 0);
    REQUIRE(r.err.empty());
    const int n = example_count();
    REQUIRE_THAT(r.out, Catch::StartsWith("kvsim coverage: " + std::to_string(n) + " traces run (" + std::to_string(n) +
                                          " files, 0 rejected, 0 without a variant)"));
    REQUIRE_THAT(r.out, Catch::Contains("lifecycle edges exercised: ") && Catch::Contains("never reached: ") &&
                            Catch::Contains("not modelled by kvsim (upstream only): "));
    REQUIRE_THAT(r.out, Catch::Contains("NEW->WAITING") && Catch::Contains("add_request") &&
                            Catch::Contains("RUNNING->FINISHED_STOPPED"));
}

TEST_CASE("kvsim coverage --json counts traces per edge", "[coverage]") {
    const auto r = run_kvsim("coverage " + kExamples + " --variant v0.30.0 --json");
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    const int n = example_count();
    REQUIRE(j["traces_run"] == n);
    REQUIRE(j["variant"] == "v0.30.0");
    const auto& graph = kvsim::LifecycleGraph::upstream();
    REQUIRE(j["edges"].size() == graph.edges().size());
    int exercised = 0;
    for (std::size_t i = 0; i < graph.edges().size(); ++i) {
        const auto& e = j["edges"][i];
        REQUIRE(e["key"] == graph.edges()[i].key);  // the graph's stable order
        REQUIRE(e["traces"].get<int>() <= n);
        if (e["traces"].get<int>() > 0) ++exercised;
    }
    REQUIRE(j["edges_exercised"] == exercised);
    REQUIRE(j["edges"][0]["key"] == "NEW->WAITING");
    REQUIRE(j["edges"][0]["traces"] == n);  // every trace adds a request
    REQUIRE(j["exercised"].size() + j["never_reached"].size() + j["not_modelled"].size() == graph.edges().size());
    REQUIRE(j["non_edges"].empty());
    REQUIRE(j["not_modelled"].size() > 0);
}

TEST_CASE("kvsim coverage --any-name takes fuzzer corpus files and counts the invalid ones", "[coverage]") {
    const auto dir = scratch_dir() / "fuzz-corpus";
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(kExamples + "/01_single_request.trace", dir / "0a1b2c3d",
                               std::filesystem::copy_options::overwrite_existing);
    write_scratch("fuzz-corpus/ffee", "not a trace\n");
    const auto only_traces = run_kvsim("coverage " + dir.string() + " --json");
    REQUIRE(only_traces.exit_code == 0);
    REQUIRE(nlohmann::json::parse(only_traces.out)["files"] == 0);

    const auto any = run_kvsim("coverage " + dir.string() + " --any-name --variant v0.29.0 --json");
    REQUIRE(any.exit_code == 0);
    const auto j = nlohmann::json::parse(any.out);
    REQUIRE(j["files"] == 2);
    REQUIRE(j["traces_run"] == 1);
    REQUIRE(j["rejected"] == 1);
    REQUIRE(j["exercised"].size() == 4);
}

TEST_CASE("kvsim coverage on a missing directory is a usage error", "[coverage]") {
    const auto r = run_kvsim("coverage /nonexistent/corpus");
    REQUIRE(r.exit_code == 64);
    REQUIRE_THAT(r.err, Catch::Contains("no such file or directory"));
}

// The library under `kvsim coverage` (properties/harness/lifecycle_coverage.h), called directly.

TEST_CASE("find_trace_files takes *.trace (or every file) under directories, sorted, once each", "[coverage]") {
    const auto dir = scratch_dir() / "find-trace-files";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "sub");
    const std::string b = write_scratch("find-trace-files/sub/b.trace", "kvsim-trace 1\n");
    const std::string a = write_scratch("find-trace-files/a.trace", "kvsim-trace 1\n");
    const std::string other = write_scratch("find-trace-files/notes.txt", "x\n");

    const auto traces = kvsim::find_trace_files({dir.string(), a}, false);
    REQUIRE(traces.missing.empty());
    REQUIRE(traces.files == std::vector<std::string>{a, b});
    const auto any = kvsim::find_trace_files({dir.string()}, true);
    REQUIRE(any.files == std::vector<std::string>{a, other, b});
    const auto missing = kvsim::find_trace_files({a, "/nonexistent/corpus"}, false);
    REQUIRE(missing.missing == "/nonexistent/corpus");
}

TEST_CASE("measure_lifecycle_coverage counts traces per edge and sorts the edges into three lists", "[coverage]") {
    const auto files = kvsim::find_trace_files({kExamples}, false).files;
    const auto coverage = kvsim::measure_lifecycle_coverage(files, kvsim::require_variant("v0.30.0"));
    const int n = example_count();
    REQUIRE(coverage.files == n);
    REQUIRE(coverage.traces_run == n);
    REQUIRE(coverage.rejected == 0);
    REQUIRE(coverage.traces_of("NEW->WAITING") == n);
    REQUIRE(coverage.traces_of("not an edge") == 0);
    REQUIRE(coverage.non_edges.empty());
    const auto& graph = kvsim::LifecycleGraph::upstream();
    REQUIRE(coverage.exercised.size() + coverage.never_reached.size() + coverage.not_modelled.size() ==
            graph.edges().size());
    for (const auto* e : coverage.exercised) REQUIRE(coverage.traces_of(e->key) > 0);
    for (const auto* e : coverage.never_reached) REQUIRE((e->modelled && coverage.traces_of(e->key) == 0));
    for (const auto* e : coverage.not_modelled) REQUIRE_FALSE(e->modelled);

    const auto j = kvsim::coverage_json(coverage, "v0.30.0");
    REQUIRE(j["traces_run"] == n);
    REQUIRE(j["edges_exercised"] == coverage.exercised.size());
    REQUIRE_THAT(kvsim::render_coverage(coverage, "v0.30.0"),
                 Catch::StartsWith("kvsim coverage: " + std::to_string(n) + " traces run (" + std::to_string(n) +
                                   " files, 0 rejected, 0 without a variant) under v0.30.0\n"));
}

TEST_CASE("measure_lifecycle_coverage counts invalid files and traces without a variant", "[coverage]") {
    const std::string bad = write_scratch("coverage-bad.trace", "not a trace\n");
    const std::string no_variant = write_scratch("coverage-no-variant.trace",
                                                 "kvsim-trace 1\nengine block_size=4 num_blocks=16 max_model_len=60\n"
                                                 "segment a len=6\n@0 arrive r1 prompt=a max_tokens=2\n");
    const auto coverage = kvsim::measure_lifecycle_coverage({bad, no_variant}, std::nullopt);
    REQUIRE(coverage.files == 2);
    REQUIRE(coverage.rejected == 1);
    REQUIRE(coverage.rejected_examples.size() == 1);
    REQUIRE(coverage.without_variant == 1);
    REQUIRE(coverage.traces_run == 0);
    REQUIRE(coverage.exercised.empty());
}

// A trace's `@N stop` makes RUNNING->FINISHED_STOPPED and FINISHED_STOPPED->FREED, and the header's
// counts add up: exercised + never reached = modelled, with nothing exercised outside them.
TEST_CASE("kvsim coverage counts a stopped request's edges as modelled and exercised", "[coverage]") {
    const std::string trace = write_scratch("coverage-stop.trace",
                                            "kvsim-trace 1\nrun variant=v0.30.0\n"
                                            "engine block_size=4 num_blocks=16 max_model_len=60\n"
                                            "segment a len=6\n@0 arrive r1 prompt=a max_tokens=8\n@2 stop r1\n");
    const auto r = run_kvsim("coverage " + trace + " --json");
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    const auto has = [](const nlohmann::json& keys, const std::string& key) {
        return std::find(keys.begin(), keys.end(), key) != keys.end();
    };
    CHECK(has(j["exercised"], "RUNNING->FINISHED_STOPPED"));
    CHECK(has(j["exercised"], "FINISHED_STOPPED->FREED"));
    CHECK_FALSE(has(j["not_modelled"], "RUNNING->FINISHED_STOPPED"));
    CHECK(j["mislabelled"].empty());
    CHECK(j["edges_exercised"].get<std::size_t>() + j["never_reached"].size() == j["edges_modelled"].get<std::size_t>());

    const auto text = run_kvsim("coverage " + trace).out;
    CHECK_THAT(text, Catch::Contains("lifecycle edges exercised: " + j["edges_exercised"].dump() + " of " +
                                     j["edges_modelled"].dump() + " modelled"));
    CHECK_THAT(text, Catch::Contains("never reached: " + std::to_string(j["never_reached"].size()) + "\n"));
}

TEST_CASE("kvsim coverage of the whole corpus makes no edge marked upstream only", "[coverage]") {
    const auto r = run_kvsim("coverage " + std::string(KVSIM_SOURCE_DIR) + "/corpus --json");
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["rejected"] == 0);
    CHECK(j["mislabelled"].empty());
    CHECK(j["non_edges"].empty());
}

TEST_CASE("kvsim coverage of a named invalid trace fails with the parser's error", "[coverage]") {
    const std::string bad = write_scratch("coverage-named-bad.trace", "run variant=v0.30.0\n");
    const auto r = run_kvsim("coverage " + bad);
    CHECK(r.exit_code == 65);
    CHECK(r.out.empty());
    CHECK(r.err == "kvsim: " + bad + ":1: header: expected 'kvsim-trace 1' as the first line, got 'run'\n");

    const std::string no_variant = write_scratch("coverage-named-no-variant.trace",
                                                 "kvsim-trace 1\nengine block_size=4 num_blocks=16 max_model_len=60\n"
                                                 "segment a len=6\n@0 arrive r1 prompt=a max_tokens=2\n");
    const auto nv = run_kvsim("coverage " + no_variant);
    CHECK(nv.exit_code == 65);
    CHECK_THAT(nv.err, Catch::StartsWith("kvsim: " + no_variant + ":0: run.variant: no variant: give --variant"));
    CHECK(run_kvsim("coverage " + no_variant + " --variant v0.30.0").exit_code == 0);
}
