#pragma once
// The first value other than `ignored` that occurs twice in a list, for the model's own checks of
// one call's block ids: a pairwise scan while the list is short (no allocation), a sorted copy beyond.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>

namespace kvsim {

inline constexpr std::size_t kPairwiseRepeatScan = 32;

template <class T>
std::optional<T> first_repeat(const std::vector<T>& values, std::optional<T> ignored = std::nullopt) {
    if (values.size() <= kPairwiseRepeatScan) {
        for (std::size_t i = 1; i < values.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                if (values[i] == values[j] && values[i] != ignored) return values[i];
        return std::nullopt;
    }
    std::vector<T> sorted = values;
    if (ignored) sorted.erase(std::remove(sorted.begin(), sorted.end(), *ignored), sorted.end());
    std::sort(sorted.begin(), sorted.end());
    const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
    if (twice == sorted.end()) return std::nullopt;
    return *twice;
}

}  // namespace kvsim
