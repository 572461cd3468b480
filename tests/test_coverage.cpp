#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"
#include "properties/lifecycle/lifecycle_graph.h"

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
