#pragma once
// The trace files under corpus/, sorted by path (directory order is not deterministic).
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace kvsim::testing {

inline std::vector<std::string> corpus_trace_paths() {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(KVSIM_SOURCE_DIR) + "/corpus"))
        if (entry.is_regular_file() && entry.path().extension() == ".trace") out.push_back(entry.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace kvsim::testing
