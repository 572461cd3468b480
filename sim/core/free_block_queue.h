#pragma once
// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue @ bbf906a88ba1a39104884c88c9811a4f968e4659
// Intrusive doubly linked list over block ids with O(1) removal from the middle.
//
// Not upstream: the blocks that have never left the queue are one implicit run, [untouched_begin(),
// num_blocks()) in ascending id order, linked into the list as a single node. A block gets a link
// of its own only when it first leaves the queue, so building the queue and every operation cost
// nothing per pool block: a pool of a million blocks is as cheap to set up as one of a thousand.
// The order the list walks is upstream's, block for block.
#include <cstdint>
#include <vector>

#include "sim/common/first_repeat.h"
#include "sim/core/request.h"

namespace kvsim {

class FreeBlockQueue {
public:
    // All blocks [0, num_blocks) start free, in ascending id order.
    explicit FreeBlockQueue(std::uint32_t num_blocks);

    std::uint32_t size() const { return size_; }
    std::uint32_t num_blocks() const { return num_blocks_; }
    // Blocks at or above this id have never left the queue (free, in the untouched run).
    std::uint32_t untouched_begin() const { return untouched_; }
    bool contains(BlockId id) const {
        if (id < num_blocks_) [[likely]]
            return id >= untouched_ || links_[id].in_queue;
        outside_the_pool(id);
    }

    BlockId popleft();                                 // precondition: size() > 0
    std::vector<BlockId> popleft_n(std::uint32_t n);   // precondition: n <= size()
    void remove(BlockId id);                           // precondition: contains(id)
    void append(BlockId id);                           // precondition: !contains(id)
    void append_n(const std::vector<BlockId>& ids);    // tail, in the given order
    void prepend_n(const std::vector<BlockId>& ids);   // head, ids[0] ends up first

    std::vector<BlockId> to_vector() const;  // head to tail, for checkers and tests
    // The number of blocks a walk from head to tail meets (checkers: no list to allocate; the
    // untouched run counts in one go); a model error when the walk and size() disagree, as to_vector.
    std::uint32_t walk_length() const;

private:
    static constexpr std::uint32_t kNone = UINT32_MAX;
    static constexpr std::uint32_t kRun = UINT32_MAX - 1;  // the untouched run's node in the list
    struct Link {
        std::uint32_t prev = kNone;
        std::uint32_t next = kNone;
        bool in_queue = false;
    };
    Link& link(std::uint32_t node) { return node == kRun ? run_ : links_[node]; }
    const Link& link(std::uint32_t node) const { return node == kRun ? run_ : links_[node]; }
    void link_after(std::uint32_t anchor, std::uint32_t node);  // anchor kNone = head; size unchanged
    void unlink(std::uint32_t node);                            // size unchanged
    BlockId take_untouched();  // the run's first block gets its own link, out of the queue
    void check_distinct_outside(const std::vector<BlockId>& ids, const char* verb) const;
    template <class Visit>
    void walk(Visit&& visit) const;  // visit(node, blocks) head to tail, checking the links against size_
    [[noreturn]] void outside_the_pool(BlockId id) const;  // the model check that fails
    std::vector<Link> links_;  // blocks [0, untouched_); capacity num_blocks, so no reallocation
    Link run_;                 // the untouched run's links while it is not empty
    std::uint32_t untouched_ = 0;
    std::uint32_t num_blocks_ = 0;
    std::uint32_t head_ = kNone;
    std::uint32_t tail_ = kNone;
    std::uint32_t size_ = 0;
    mutable RepeatCheck repeat_check_;  // check_distinct_outside's scratch table
};

}  // namespace kvsim
