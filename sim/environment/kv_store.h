#pragma once
// The external KV store's contents: which block hashes it holds. Seeded from the
// trace's `store` lines, grown by completed store jobs, read by lookups.
#include <cstddef>
#include <unordered_set>
#include <vector>

#include "sim/core/request.h"

namespace kvsim {

class KvStore {
public:
    bool contains(BlockHash hash) const { return present_.contains(hash); }
    void put(BlockHash hash) { present_.insert(hash); }
    std::size_t size() const { return present_.size(); }

    // Leading hashes present, stopping at the first miss (a prefix hit).
    int prefix_hit_blocks(const std::vector<BlockHash>& hashes) const {
        int n = 0;
        for (BlockHash h : hashes) {
            if (!present_.contains(h)) break;
            ++n;
        }
        return n;
    }

private:
    std::unordered_set<BlockHash> present_;  // looked up, never walked: no order reaches a run
};

}  // namespace kvsim
