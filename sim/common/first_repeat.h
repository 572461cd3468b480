#pragma once
// The first id other than `ignored` that occurs twice in one call's list, for the model's own
// checks of the block ids a call takes. Linear: each id is marked in a table indexed by id, then
// unmarked; the table keeps its size between calls, so a check allocates only to reach a larger id.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace kvsim {

class RepeatCheck {
public:
    std::optional<std::uint32_t> first_repeat(const std::vector<std::uint32_t>& ids,
                                               std::optional<std::uint32_t> ignored = std::nullopt) {
        std::optional<std::uint32_t> found;
        std::size_t marked = 0;
        for (; marked < ids.size(); ++marked) {
            const std::uint32_t id = ids[marked];
            if (id == ignored) continue;
            if (id >= seen_.size()) seen_.resize(std::max<std::size_t>(std::size_t{id} + 1, 2 * seen_.size()), 0);
            if (seen_[id] != 0) {
                found = id;
                break;
            }
            seen_[id] = 1;
        }
        for (std::size_t i = 0; i < marked; ++i)
            if (ids[i] != ignored) seen_[ids[i]] = 0;
        return found;
    }

private:
    std::vector<std::uint8_t> seen_;  // all zero between calls
};

}  // namespace kvsim
