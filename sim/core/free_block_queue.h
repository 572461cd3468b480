#pragma once
// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue @ bbf906a88ba1a39104884c88c9811a4f968e4659
// Intrusive doubly linked list over block ids with O(1) removal from the middle.
#include <cstdint>
#include <vector>

#include "sim/core/request.h"

namespace kvsim {

class FreeBlockQueue {
public:
    // All blocks [0, num_blocks) start free, in ascending id order.
    explicit FreeBlockQueue(std::uint32_t num_blocks);

    std::uint32_t size() const { return size_; }
    bool contains(BlockId id) const;

    BlockId popleft();                                 // precondition: size() > 0
    std::vector<BlockId> popleft_n(std::uint32_t n);   // precondition: n <= size()
    void remove(BlockId id);                           // precondition: contains(id)
    void append(BlockId id);                           // precondition: !contains(id)
    void append_n(const std::vector<BlockId>& ids);    // tail, in the given order
    void prepend_n(const std::vector<BlockId>& ids);   // head, ids[0] ends up first

    std::vector<BlockId> to_vector() const;  // head to tail, for checkers and tests
    // The number of blocks a walk from head to tail meets (checkers: no list to allocate); a model
    // error when the walk and size() disagree, as to_vector.
    std::uint32_t walk_length() const;

private:
    static constexpr std::uint32_t kNone = UINT32_MAX;
    struct Link {
        std::uint32_t prev = kNone;
        std::uint32_t next = kNone;
        bool in_queue = false;
    };
    void link_after(std::uint32_t anchor, BlockId id);  // anchor kNone = head
    template <class Visit>
    void walk(Visit&& visit) const;  // head to tail, checking the links against size_
    std::vector<Link> links_;
    std::uint32_t head_ = kNone;
    std::uint32_t tail_ = kNone;
    std::uint32_t size_ = 0;
};

}  // namespace kvsim
