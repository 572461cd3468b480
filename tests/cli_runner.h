#pragma once
// Runs the built kvsim binary and captures its exit code, stdout and stderr.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kvsim::testing {

struct CliResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

inline std::filesystem::path scratch_dir() {
    auto dir = std::filesystem::temp_directory_path() / ("kvsim-tests-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir;
}

inline std::string write_scratch(const std::string& name, const std::string& text) {
    const auto path = scratch_dir() / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

inline std::string slurp(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The kvsim under test: KVSIM_TEST_BINARY when set (an older build, to see a new test fail before
// its fix), else the one built beside the tests.
inline std::string kvsim_binary() {
    const char* other = std::getenv("KVSIM_TEST_BINARY");
    return other != nullptr && *other != '\0' ? std::string(other) : std::string(KVSIM_BINARY);
}

// A byte a terminal could take for part of an escape sequence: anything but printable ASCII and '\n'.
inline bool has_control_byte(const std::string& text) {
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte != '\n' && (byte < 0x20 || byte >= 0x7f)) return true;
    }
    return false;
}

// kvsim run by `wrapper` (a shell prefix that execs its arguments, e.g. one that sets a ulimit first).
inline CliResult run_kvsim_wrapped(const std::string& wrapper, const std::string& args) {
    const auto dir = scratch_dir();
    const auto out = dir / "stdout.txt";
    const auto err = dir / "stderr.txt";
    const std::string command =
        wrapper + (wrapper.empty() ? "" : " ") + kvsim_binary() + " " + args + " >" + out.string() + " 2>" + err.string();
    const int status = std::system(command.c_str());
    CliResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = slurp(out);
    result.err = slurp(err);
    return result;
}

inline CliResult run_kvsim(const std::string& args) { return run_kvsim_wrapped("", args); }

}  // namespace kvsim::testing
