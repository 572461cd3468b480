// The repository checks scripts/test runs: scripts/check-layering (no #include runs back up a
// floor) and scripts/check-function-length (no unlisted function over 70 lines). Each passes on
// the real tree and fails, naming the file, on a copy of it with one fault planted. Last, every
// test name survives ctest's per-test filter.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "cli_runner.h"

using namespace kvsim::testing;

namespace {

namespace fs = std::filesystem;

const fs::path kSource = KVSIM_SOURCE_DIR;

CliResult run_script(const std::string& script, const fs::path& root) {
    const auto out = scratch_dir() / "script-stdout.txt";
    const auto err = scratch_dir() / "script-stderr.txt";
    const std::string command = (kSource / "scripts" / script).string() + " --root " + root.string() + " >" +
                                out.string() + " 2>" + err.string();
    const int status = std::system(command.c_str());
    return {.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1, .out = slurp(out), .err = slurp(err)};
}

// A copy of the source folders and the exceptions list, to plant a fault in.
fs::path copy_of_tree(const std::string& name) {
    const fs::path root = scratch_dir() / name;
    fs::remove_all(root);
    fs::create_directories(root);
    for (const char* top : {"sim", "properties", "fuzz", "cli", "tests"})
        fs::copy(kSource / top, root / top, fs::copy_options::recursive);
    fs::create_directories(root / "scripts");
    fs::copy_file(kSource / "scripts" / "long-functions.txt", root / "scripts" / "long-functions.txt");
    return root;
}

void append(const fs::path& file, const std::string& text) {
    std::ofstream(file, std::ios::binary | std::ios::app) << text;
}

// A function of `lines` lines in all, braces included.
std::string function_of(const std::string& name, int lines) {
    std::string text = "int " + name + "(int x) {\n";
    for (int i = 0; i < lines - 3; ++i) text += "    x += " + std::to_string(i) + ";\n";
    return text + "    return x;\n}\n";
}

}  // namespace

TEST_CASE("check-layering passes on the tree and fails on an include that runs back up a floor", "[repo]") {
    const auto clean = run_script("check-layering", kSource);
    INFO(clean.err);
    REQUIRE(clean.exit_code == 0);
    REQUIRE_THAT(clean.out, Catch::Contains(", 0 back-edges"));

    const fs::path root = copy_of_tree("layering-planted");
    REQUIRE(run_script("check-layering", root).exit_code == 0);
    append(root / "sim/common/prng.h", "#include \"cli/commands.h\"\n");
    const auto planted = run_script("check-layering", root);
    REQUIRE(planted.exit_code != 0);
    REQUIRE_THAT(planted.err, Catch::Contains("sim/common/prng.h:") && Catch::Contains("includes cli/commands.h"));
    REQUIRE_THAT(planted.out, Catch::Contains(", 1 back-edges"));
}

TEST_CASE("check-layering fails when README.md's layout table and the floors disagree", "[repo]") {
    const fs::path root = copy_of_tree("layering-readme");
    fs::copy_file(kSource / "README.md", root / "README.md");
    REQUIRE(run_script("check-layering", root).exit_code == 0);

    std::string readme = slurp(root / "README.md");
    const std::string row = "| 6 | `sim/engine/` |";
    REQUIRE(readme.find(row) != std::string::npos);
    readme.replace(readme.find(row), row.size(), "| 3 | `sim/engine/` |");
    std::ofstream(root / "README.md", std::ios::binary | std::ios::trunc) << readme;
    const auto moved = run_script("check-layering", root);
    REQUIRE(moved.exit_code != 0);
    REQUIRE_THAT(moved.err, Catch::Contains("puts sim/engine/ on floor 3, not 6"));

    fs::create_directories(root / "sim/newfolder");
    append(root / "sim/newfolder/thing.h", "#pragma once\n");
    const auto unlisted = run_script("check-layering", root);
    REQUIRE_THAT(unlisted.err, Catch::Contains("folder sim/newfolder has no floor"));
}

TEST_CASE("check-function-length passes on the tree and fails on a new long function", "[repo]") {
    const auto clean = run_script("check-function-length", kSource);
    INFO(clean.err);
    REQUIRE(clean.exit_code == 0);
    REQUIRE_THAT(clean.out, Catch::Contains(", 0 errors"));

    const fs::path root = copy_of_tree("length-planted");
    append(root / "sim/common/planted.cpp", function_of("seventy", 70) + function_of("seventy_one", 71));
    const auto planted = run_script("check-function-length", root);
    REQUIRE(planted.exit_code != 0);
    REQUIRE_THAT(planted.err, Catch::Contains("sim/common/planted.cpp: seventy_one is 71 lines"));
    REQUIRE_THAT(planted.err, !Catch::Contains("seventy is"));  // 70 lines is the limit, not over it
}

TEST_CASE("check-function-length fails on an exception that is short again or gone", "[repo]") {
    const fs::path root = copy_of_tree("length-stale");
    append(root / "sim/common/planted.cpp", function_of("short_again", 10));
    append(root / "scripts/long-functions.txt",
           "sim/common/planted.cpp short_again data table\nsim/common/gone.cpp gone data table\n");
    const auto stale = run_script("check-function-length", root);
    REQUIRE(stale.exit_code != 0);
    REQUIRE_THAT(stale.err, Catch::Contains("sim/common/planted.cpp short_again is 10 lines now"));
    REQUIRE_THAT(stale.err, Catch::Contains("sim/common/gone.cpp gone no longer exists"));
}

// catch_discover_tests hands each name to ctest as a CMake list item and back to Catch as a test
// spec: a ';' splits the name in two, and a leading '-' or '~' (negation), a '[' (tag) or a backslash
// (escape) makes the spec match no test, so the test fails in CI while passing when run by tag.
TEST_CASE("every test name survives ctest's per-test filter", "[repo]") {
    const std::regex name_re(R"re(TEST_CASE\(\s*"([^"]*)")re");
    int names = 0;
    for (const char* top : {"tests", "fuzz/tests", "properties/suites"}) {
        for (const auto& entry : fs::recursive_directory_iterator(kSource / top)) {
            if (entry.path().extension() != ".cpp") continue;
            const std::string text = slurp(entry.path());
            for (std::sregex_iterator it(text.begin(), text.end(), name_re), end; it != end; ++it) {
                const std::string name = (*it)[1].str();
                ++names;
                INFO(entry.path().string() << ": \"" << name << "\"");
                CHECK(name.find_first_of(";[\\") == std::string::npos);
                CHECK((name.empty() || (name.front() != '-' && name.front() != '~')));
            }
        }
    }
    CHECK(names > 400);
}
