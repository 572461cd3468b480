#include "sim/core/free_block_queue.h"

#include "sim/common/model_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace kvsim {
namespace {

constexpr ModelCheck require{.component = "FreeBlockQueue"};

}  // namespace

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.__init__ @ bbf906a88ba1a39104884c88c9811a4f968e4659
// (0 <-> 1 <-> ... <-> num_blocks-1, here as the untouched run).
FreeBlockQueue::FreeBlockQueue(std::uint32_t num_blocks) : num_blocks_(num_blocks) {
    require(num_blocks < kRun, "num_blocks {} collides with the list's markers", num_blocks);
    links_.reserve(num_blocks);  // address space only: a page is touched when a block first leaves
    if (num_blocks > 0) {
        run_ = Link{.prev = kNone, .next = kNone, .in_queue = true};
        head_ = kRun;
        tail_ = kRun;
    }
    size_ = num_blocks;
}

void FreeBlockQueue::outside_the_pool(BlockId id) const {
    require.fail("block {} is outside the pool of {} blocks", id, num_blocks_);
}

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.popleft @ bbf906a88ba1a39104884c88c9811a4f968e4659
BlockId FreeBlockQueue::popleft() {
    require(size_ > 0 && head_ != kNone, "No free blocks available");
    if (head_ != kRun) {
        const BlockId id = head_;
        remove(id);
        return id;
    }
    const BlockId id = take_untouched();
    --size_;
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
// A block of the untouched run splits it: the run's blocks before it get links of their own, in place.
void FreeBlockQueue::remove(BlockId id) {
    require(contains(id), "cannot remove block {}: it is not in the free queue", id);
    require(size_ > 0, "block {} is marked queued but the queue is empty", id);
    if (id < untouched_) {
        unlink(id);
    } else {
        while (untouched_ < id) link_after(run_.prev, take_untouched());  // before the run, in order
        take_untouched();
    }
    --size_;
}

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.append @ bbf906a88ba1a39104884c88c9811a4f968e4659
void FreeBlockQueue::append(BlockId id) {
    require(!contains(id), "cannot append block {}: it is already in the free queue", id);
    link_after(tail_, id);
    ++size_;
}

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.append_n (absent from bbf906a88ba1a39104884c88c9811a4f968e4659; contract per
// tests/v1/core/test_kv_cache_utils.py @ 002f10e0cfa1373a19a0d2756598a34b700d20e5): to the tail, in the given order.
void FreeBlockQueue::append_n(const std::vector<BlockId>& ids) {
    check_distinct_outside(ids, "append");
    for (BlockId id : ids) {
        link_after(tail_, id);
        ++size_;
    }
}

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.prepend_n (absent from bbf906a88ba1a39104884c88c9811a4f968e4659, came with #42656;
// contract per tests/v1/core/test_kv_cache_utils.py @ 002f10e0cfa1373a19a0d2756598a34b700d20e5): to the head, ids[0] first.
void FreeBlockQueue::prepend_n(const std::vector<BlockId>& ids) {
    check_distinct_outside(ids, "prepend");
    std::uint32_t anchor = kNone;
    for (BlockId id : ids) {
        link_after(anchor, id);
        ++size_;
        anchor = id;
    }
}

// Every id outside the queue and none twice.
void FreeBlockQueue::check_distinct_outside(const std::vector<BlockId>& ids, const char* verb) const {
    for (BlockId id : ids) require(!contains(id), "cannot {} block {}: it is already in the free queue", verb, id);
    const std::optional<BlockId> twice = repeat_check_.first_repeat(ids);
    require(!twice, "cannot {} block {} twice in one call", verb, twice.value_or(0));
}

template <class Visit>
void FreeBlockQueue::walk(Visit&& visit) const {
    std::uint32_t walked = 0;
    for (std::uint32_t node = head_; node != kNone; node = link(node).next) {
        const std::uint32_t blocks = node == kRun ? num_blocks_ - untouched_ : 1;
        require(walked + blocks <= size_, "the linked list is longer than size()");
        visit(node, blocks);
        walked += blocks;
    }
    require(walked == size_, "the linked list holds {} blocks but size() is {}", walked, size_);
}

// vllm/v1/core/kv_cache_utils.py FreeKVCacheBlockQueue.get_all_free_blocks @ bbf906a88ba1a39104884c88c9811a4f968e4659
std::vector<BlockId> FreeBlockQueue::to_vector() const {
    std::vector<BlockId> out;
    out.reserve(size_);
    walk([&](std::uint32_t node, std::uint32_t) {
        if (node != kRun) out.push_back(node);
        else
            for (BlockId id = untouched_; id < num_blocks_; ++id) out.push_back(id);
    });
    return out;
}

std::uint32_t FreeBlockQueue::walk_length() const {
    std::uint32_t n = 0;
    walk([&](std::uint32_t, std::uint32_t blocks) { n += blocks; });
    return n;
}

BlockId FreeBlockQueue::take_untouched() {
    require(untouched_ < num_blocks_, "the untouched run is empty");
    const BlockId id = untouched_++;
    links_.push_back(Link{});
    if (untouched_ == num_blocks_) unlink(kRun);
    return id;
}

void FreeBlockQueue::unlink(std::uint32_t node) {
    Link& l = link(node);
    if (l.prev != kNone) link(l.prev).next = l.next;
    else head_ = l.next;
    if (l.next != kNone) link(l.next).prev = l.prev;
    else tail_ = l.prev;
    l = Link{};
}

void FreeBlockQueue::link_after(std::uint32_t anchor, std::uint32_t node) {
    require(node == kRun || (node < untouched_ && !links_[node].in_queue), "block {} cannot be linked", node);
    require(anchor == kNone || ((anchor == kRun || anchor < untouched_) && link(anchor).in_queue),
            "anchor {} is not in the free queue", anchor);
    Link& l = link(node);
    l.prev = anchor;
    l.next = anchor == kNone ? head_ : link(anchor).next;
    if (l.next != kNone) link(l.next).prev = node;
    else tail_ = node;
    if (anchor != kNone) link(anchor).next = node;
    else head_ = node;
    l.in_queue = true;
}

}  // namespace kvsim
