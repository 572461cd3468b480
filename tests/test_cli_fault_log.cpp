#include <catch2/catch.hpp>

#include <sstream>

#include "cli_runner.h"

using namespace kvsim::testing;

namespace {

const std::string kExamples = std::string(KVSIM_SOURCE_DIR) + "/corpus/examples/";

// The log lines of category fault ("    2 fault     store_fail rank=0": the text after the category).
std::vector<std::string> fault_lines(const std::string& log) {
    std::vector<std::string> out;
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string step, category, rest;
        words >> step >> category;
        if (category != "fault") continue;
        std::getline(words >> std::ws, rest);
        out.push_back(rest);
    }
    return out;
}

}  // namespace

TEST_CASE("the text log prints only the keys a fault kind takes", "[cli][fault]") {
    const auto p2p = run_kvsim("run " + kExamples + "07_p2p_load_failure.trace");
    REQUIRE(p2p.exit_code == 0);
    const auto load = fault_lines(p2p.out);
    REQUIRE(load.size() == 1);
    CHECK(load[0] == "load_fail request=d1");

    const auto store = run_kvsim("run " + kExamples + "06_store_saves_with_faults.trace");
    const auto lines = fault_lines(store.out);
    REQUIRE(!lines.empty());
    for (const std::string& line : lines) {
        INFO(line);
        if (line.rfind("store_delay ", 0) == 0) CHECK(line.find("request=") == std::string::npos);
        if (line.rfind("store_fail ", 0) == 0) {
            CHECK(line.find("request=") == std::string::npos);
            CHECK(line.find("steps=") == std::string::npos);
        }
        if (line.rfind("lookup_pending ", 0) == 0) CHECK(line.find("rank=") == std::string::npos);
    }
}
