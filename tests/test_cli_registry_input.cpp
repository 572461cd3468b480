#include <catch2/catch.hpp>

#include <filesystem>

#include "cli_runner.h"

using namespace kvsim::testing;

TEST_CASE("registry input: its errors never echo raw escape bytes", "[cli][registry]") {
    const std::string esc = "\x1b]0;pwned\x07\x1b[31m";
    for (const std::string& text : {"finding " + esc + "x\n", "finding a\nclass " + esc + "\n",
                                    "finding a\nevent " + esc + "\n", "finding a\nsignature " + esc + "\n",
                                    "finding a\nupstream open #1 " + esc + "\n"}) {
        const auto path = write_scratch("evil_registry.txt", text);
        for (const std::string sub : {"explore --seeds 1 --registry ", "findings --registry "}) {
            INFO(sub << text);
            const auto r = run_kvsim(sub + path);
            CHECK(r.exit_code == 65);
            CHECK_FALSE(has_control_byte(r.err));
            CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
            CHECK_THAT(r.err, Catch::StartsWith("kvsim: " + path + ":") && Catch::Contains("\\x1b"));
        }
    }
}

TEST_CASE("registry input: --registry naming a directory says so", "[cli][registry]") {
    const auto dir = scratch_dir().string();
    const auto r = run_kvsim("explore --seeds 1 --registry " + dir);
    CHECK(r.exit_code == 65);
    CHECK_THAT(r.err, Catch::Contains("is a directory"));
    CHECK(r.err.find("has no entry") == std::string::npos);
}

TEST_CASE("kvsim report quotes a malformed campaign word", "[cli][registry]") {
    const auto dir = scratch_dir() / "campaign_evil";
    std::filesystem::create_directories(dir);
    write_scratch("campaign_evil/campaign.txt", "canary \x1b[31mred\n");
    const auto r = run_kvsim("report " + dir.string());
    CHECK(r.exit_code == 65);
    CHECK_FALSE(has_control_byte(r.err));
    CHECK_THAT(r.err, Catch::Contains("\\x1b"));
}
