#pragma once
// Repeated ids in one call's list of block ids, for the model's own checks and for a list that must
// name each block once. Linear: each id is marked in a table indexed by id, then unmarked; the table
// keeps its size between calls, so a call allocates only to reach a larger id.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace kvsim {

class RepeatCheck {
public:
    // The first id other than `ignored` that occurs twice.
    std::optional<std::uint32_t> first_repeat(const std::vector<std::uint32_t>& ids,
                                               std::optional<std::uint32_t> ignored = std::nullopt) {
        std::optional<std::uint32_t> found;
        std::size_t marked = 0;
        for (; marked < ids.size(); ++marked) {
            const std::uint32_t id = ids[marked];
            if (id == ignored) continue;
            if (!mark(id)) {
                found = id;
                break;
            }
        }
        for (std::size_t i = 0; i < marked; ++i)
            if (ids[i] != ignored) seen_[ids[i]] = 0;
        return found;
    }

    // Drops every `ignored` id and every occurrence of an id after its first; the rest keep their order.
    void erase_repeats(std::vector<std::uint32_t>& ids, std::optional<std::uint32_t> ignored = std::nullopt) {
        std::size_t kept = 0;
        for (const std::uint32_t id : ids)
            if (id != ignored && mark(id)) ids[kept++] = id;
        ids.resize(kept);
        for (const std::uint32_t id : ids) seen_[id] = 0;
    }

private:
    // Marks `id`; false when it was marked already.
    bool mark(std::uint32_t id) {
        if (id >= seen_.size()) seen_.resize(std::max<std::size_t>(std::size_t{id} + 1, 2 * seen_.size()), 0);
        if (seen_[id] != 0) return false;
        seen_[id] = 1;
        return true;
    }

    std::vector<std::uint8_t> seen_;  // all zero between calls
};

}  // namespace kvsim
