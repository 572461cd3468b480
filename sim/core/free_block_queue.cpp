#include "sim/core/free_block_queue.h"

#include "sim/common/model_check.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace kvsim {
namespace {

constexpr ModelCheck require{.component = "FreeBlockQueue"};

}  // namespace

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.__init__ @ bbf906a88ba1a39104884c88c9811a4f968e4659
FreeBlockQueue::FreeBlockQueue(std::uint32_t num_blocks) : links_(num_blocks) {
    require(num_blocks < kNone, "num_blocks {} collides with the end marker", num_blocks);
    for (std::uint32_t id = 0; id < num_blocks; ++id)  // 0 <-> 1 <-> ... <-> num_blocks-1
        links_[id] = Link{.prev = id == 0 ? kNone : id - 1, .next = id + 1 == num_blocks ? kNone : id + 1, .in_queue = true};
    if (num_blocks > 0) {
        head_ = 0;
        tail_ = num_blocks - 1;
    }
    size_ = num_blocks;
}

bool FreeBlockQueue::contains(BlockId id) const {
    require(id < links_.size(), "block {} is outside the pool of {} blocks", id, links_.size());
    return links_[id].in_queue;
}

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.popleft @ bbf906a88ba1a39104884c88c9811a4f968e4659
BlockId FreeBlockQueue::popleft() {
    require(size_ > 0 && head_ != kNone, "No free blocks available");
    const BlockId id = head_;
    remove(id);
    return id;
}

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.popleft_n (absent from bbf906a88ba1a39104884c88c9811a4f968e4659; contract per
// tests/v1/core/test_kv_cache_utils.py @ 002f10e0cfa1373a19a0d2756598a34b700d20e5): the first n blocks, head first.
std::vector<BlockId> FreeBlockQueue::popleft_n(std::uint32_t n) {
    require(n <= size_, "cannot pop {} blocks from a queue of {}", n, size_);
    std::vector<BlockId> out;
    out.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) out.push_back(popleft());
    return out;
}

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.remove @ bbf906a88ba1a39104884c88c9811a4f968e4659
void FreeBlockQueue::remove(BlockId id) {
    require(contains(id), "cannot remove block {}: it is not in the free queue", id);
    require(size_ > 0, "block {} is marked queued but the queue is empty", id);
    Link& link = links_[id];
    if (link.prev != kNone) links_[link.prev].next = link.next;
    else head_ = link.next;
    if (link.next != kNone) links_[link.next].prev = link.prev;
    else tail_ = link.prev;
    link = Link{};
    --size_;
}

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.append @ bbf906a88ba1a39104884c88c9811a4f968e4659
void FreeBlockQueue::append(BlockId id) {
    require(!contains(id), "cannot append block {}: it is already in the free queue", id);
    link_after(tail_, id);
}

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.append_n (absent from bbf906a88ba1a39104884c88c9811a4f968e4659; contract per
// tests/v1/core/test_kv_cache_utils.py @ 002f10e0cfa1373a19a0d2756598a34b700d20e5): to the tail, in the given order.
void FreeBlockQueue::append_n(const std::vector<BlockId>& ids) {
    std::vector<bool> seen(links_.size(), false);
    for (BlockId id : ids) {
        require(!contains(id), "cannot append block {}: it is already in the free queue", id);
        require(!seen[id], "cannot append block {} twice in one call", id);
        seen[id] = true;
    }
    for (BlockId id : ids) link_after(tail_, id);
}

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.prepend_n (absent from bbf906a88ba1a39104884c88c9811a4f968e4659, came with #42656;
// contract per tests/v1/core/test_kv_cache_utils.py @ 002f10e0cfa1373a19a0d2756598a34b700d20e5): to the head, ids[0] first.
void FreeBlockQueue::prepend_n(const std::vector<BlockId>& ids) {
    std::vector<bool> seen(links_.size(), false);
    for (BlockId id : ids) {
        require(!contains(id), "cannot prepend block {}: it is already in the free queue", id);
        require(!seen[id], "cannot prepend block {} twice in one call", id);
        seen[id] = true;
    }
    std::uint32_t anchor = kNone;
    for (BlockId id : ids) {
        link_after(anchor, id);
        anchor = id;
    }
}

template <class Visit>
void FreeBlockQueue::walk(Visit&& visit) const {
    std::uint32_t walked = 0;
    for (std::uint32_t id = head_; id != kNone; id = links_[id].next) {
        require(walked < size_, "the linked list is longer than size()");
        visit(id);
        ++walked;
    }
    require(walked == size_, "the linked list holds {} blocks but size() is {}", walked, size_);
}

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.get_all_free_blocks @ bbf906a88ba1a39104884c88c9811a4f968e4659
std::vector<BlockId> FreeBlockQueue::to_vector() const {
    std::vector<BlockId> out;
    out.reserve(size_);
    walk([&](BlockId id) { out.push_back(id); });
    return out;
}

std::uint32_t FreeBlockQueue::walk_length() const {
    std::uint32_t n = 0;
    walk([&](BlockId) { ++n; });
    return n;
}

void FreeBlockQueue::link_after(std::uint32_t anchor, BlockId id) {
    require(id < links_.size() && !links_[id].in_queue, "block {} cannot be linked", id);
    require(anchor == kNone || (anchor < links_.size() && links_[anchor].in_queue),
            "anchor {} is not in the free queue", anchor);
    Link& link = links_[id];
    link.prev = anchor;
    link.next = anchor == kNone ? head_ : links_[anchor].next;
    if (link.next != kNone) links_[link.next].prev = id;
    else tail_ = id;
    if (anchor != kNone) links_[anchor].next = id;
    else head_ = id;
    link.in_queue = true;
    ++size_;
}

}  // namespace kvsim
