#include "cli/output_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace kvsim::cli {
namespace {

std::string why(int error) { return error == 0 ? std::string("write error") : std::string(std::strerror(error)); }

}  // namespace

bool write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write,
                       std::string_view option) {
    errno = 0;
    std::ofstream out(path, std::ios::binary);
    if (out) write(out);
    if (out) out.close();  // the last bytes reach the device here: a full one fails the close
    if (!out) {
        std::cerr << "kvsim: " << option << ": cannot write " << path << ": " << why(errno) << "\n";
        return false;
    }
    return true;
}

bool write_output_file(const std::string& path, std::string_view text, std::string_view option) {
    return write_output_file(path, [&](std::ostream& out) { out << text; }, option);
}

bool names_input(const std::string& output, const std::string& input, std::string_view option) {
    std::error_code ec;
    if (output.empty() || input == "-" || !std::filesystem::equivalent(output, input, ec) || ec) return false;
    std::cerr << "kvsim: " << option << ": " << output << " is the input trace (it would be overwritten)\n";
    return true;
}

bool flush_standard_output() {
    errno = 0;
    std::cout.flush();
    const bool flushed = static_cast<bool>(std::cout) && std::fflush(stdout) == 0 && std::ferror(stdout) == 0;
    if (!flushed) std::cerr << "kvsim: cannot write standard output: " << why(errno) << "\n";
    return flushed;
}

}  // namespace kvsim::cli
