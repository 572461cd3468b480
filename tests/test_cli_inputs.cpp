#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cli_runner.h"

using namespace kvsim::testing;

namespace {

const std::string kTrace = std::string(KVSIM_SOURCE_DIR) + "/corpus/examples/01_single_request.trace";

// Writes `text` into the FIFO at `path` once a reader opens it, then, until `done`, ends every
// later open of it at once (a reader that opens it again reads nothing instead of waiting forever).
std::thread feed_fifo(const std::string& path, std::string text, const std::atomic<bool>& done) {
    return std::thread([path, text = std::move(text), &done] {
        const int fd = ::open(path.c_str(), O_WRONLY);
        if (fd < 0) return;
        for (std::size_t written = 0; written < text.size();) {
            const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
            if (n <= 0) break;
            written += static_cast<std::size_t>(n);
        }
        ::close(fd);
        while (!done) {
            const int again = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
            if (again >= 0) ::close(again);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    });
}

}  // namespace

TEST_CASE("kvsim run reads its trace once: a FIFO feeds both the run and the page", "[cli][inputs]") {
    const auto fifo = (scratch_dir() / "trace.fifo").string();
    ::unlink(fifo.c_str());
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const auto page = (scratch_dir() / "fifo.html").string();
    std::atomic<bool> done = false;
    std::thread writer = feed_fifo(fifo, slurp(kTrace), done);
    const auto r = run_kvsim("run " + fifo + " -q --html " + page);
    done = true;
    writer.join();
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::StartsWith("pass "));
    CHECK_THAT(slurp(page), Catch::Contains("One request, no connector: the smallest complete run."));
    ::unlink(fifo.c_str());
}

TEST_CASE("kvsim run - reads the trace from standard input", "[cli][inputs]") {
    const auto page = (scratch_dir() / "stdin.html").string();
    const auto r = run_kvsim("run - -q --html " + page + " < " + kTrace);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::StartsWith("pass - "));
    CHECK_THAT(slurp(page), Catch::Contains("One request, no connector: the smallest complete run."));
    const auto empty = run_kvsim("run - -q < /dev/null");
    CHECK(empty.exit_code == 65);
    CHECK_THAT(empty.err, Catch::StartsWith("kvsim: -:"));
}
