#pragma once
// `kvsim run`: replay one trace; print its event log and one verdict line (or one JSON object).
#include <string>

namespace kvsim::cli {

struct RunCommandOptions {
    std::string trace_path;
    std::string variant;      // empty: the trace's run line
    std::string log_path;     // empty: the log goes to stdout (unless quiet or json)
    std::string log_format = "text";  // text | jsonl
    bool log_format_given = false;    // --log-format was on the command line
    bool quiet = false;
    bool check_determinism = false;
    bool json = false;  // the whole result as one JSON object instead of the log and verdict line
    std::string html_path;      // non-empty: also write the run's HTML page there
    std::string perfetto_path;  // non-empty: also write the run as Chrome trace-event JSON there
    std::string async_scheduling;  // on | off: overrides the trace's engine key; both: a run under each; empty: the trace's
};

int run_run(const RunCommandOptions& options);

}  // namespace kvsim::cli
