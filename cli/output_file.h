#pragma once
// Where kvsim writes: files named by an option (--log, --html, --dot, -o...) and standard output,
// each checked after it is flushed and closed, so that a full device or an unwritable path is
// one line on stderr and exit 74 (exit_code::kOutputError), never a silent success.
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace kvsim::cli {

// Writes `text` to `path`; false after printing "kvsim: OPTION: cannot write PATH: why".
bool write_output_file(const std::string& path, std::string_view text, std::string_view option);
// The same with a writer that streams into the file.
bool write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write,
                       std::string_view option);

// Whether `output` names the same file as `input` (which it would overwrite); prints
// "kvsim: OPTION: OUTPUT is the input trace" when it does.
bool names_input(const std::string& output, const std::string& input, std::string_view option);

// Flushes standard output; false after printing "kvsim: cannot write standard output: why".
bool flush_standard_output();

}  // namespace kvsim::cli
