#pragma once
// Insertion-ordered map with string keys: mirrors the iteration order of a Python
// dict, which upstream relies on (e.g. num_scheduled_tokens drives the order in
// which finished requests free their blocks).
//
// Lookup goes through a hash index; iteration walks the insertion-ordered slots only,
// so the index's own order never reaches a caller. Erase leaves a hole that iteration
// skips (O(1), like dict.pop), and the slots are compacted once holes outnumber entries.
// The index is one flat array probed linearly (no node per key): each cell holds the key's
// 32-bit hash and its slot, so a probe touches the key's bytes only when the hashes agree.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kvsim {

template <class V>
class OrderedMap {
public:
    using Entry = std::pair<std::string, V>;

private:
    using Slots = std::vector<std::optional<Entry>>;

    // Walks the slots in insertion order, skipping erased ones.
    template <class SlotIt, class Ref>
    class Iter {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = Entry;
        using difference_type = std::ptrdiff_t;
        using pointer = std::remove_reference_t<Ref>*;
        using reference = Ref;

        Iter() = default;
        Iter(SlotIt at, SlotIt end) : at_(at), end_(end) { skip_holes(); }
        reference operator*() const { return **at_; }
        pointer operator->() const { return &**at_; }
        Iter& operator++() {
            ++at_;
            skip_holes();
            return *this;
        }
        Iter operator++(int) {
            Iter before = *this;
            ++*this;
            return before;
        }
        bool operator==(const Iter& other) const { return at_ == other.at_; }

    private:
        void skip_holes() {
            while (at_ != end_ && !at_->has_value()) ++at_;
        }
        SlotIt at_{};
        SlotIt end_{};
    };

public:
    using iterator = Iter<typename Slots::iterator, Entry&>;
    using const_iterator = Iter<typename Slots::const_iterator, const Entry&>;

    bool contains(const std::string& key) const { return find_cell(key, hash_of(key)) != kNone; }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

    V& operator[](const std::string& key) {
        const std::uint32_t hash = hash_of(key);
        if (const std::size_t cell = find_cell(key, hash); cell != kNone) return slots_[slot_of(cells_[cell])]->second;
        if ((size_ + 1) * 2 > cells_.size()) rehash(std::max<std::size_t>(16, cells_.size() * 2));
        place(hash, slots_.size());
        slots_.emplace_back(std::in_place, key, V{});
        ++size_;
        return slots_.back()->second;
    }
    const V& at(const std::string& key) const {
        const V* value = find(key);
        if (value == nullptr) throw std::out_of_range("OrderedMap: no key " + key);
        return *value;
    }
    const V* find(const std::string& key) const {
        const std::size_t cell = find_cell(key, hash_of(key));
        return cell == kNone ? nullptr : &slots_[slot_of(cells_[cell])]->second;
    }
    V* find(const std::string& key) {
        const std::size_t cell = find_cell(key, hash_of(key));
        return cell == kNone ? nullptr : &slots_[slot_of(cells_[cell])]->second;
    }
    // Like Python's dict.pop: the rest keep their order. Invalidates pointers into the map.
    std::optional<V> erase(const std::string& key) {
        const std::size_t cell = find_cell(key, hash_of(key));
        if (cell == kNone) return std::nullopt;
        std::optional<Entry>& slot = slots_[slot_of(cells_[cell])];
        V value = std::move(slot->second);
        slot.reset();
        remove_cell(cell);
        --size_;
        ++holes_;
        if (holes_ > 16 && holes_ > size_) compact();
        return value;
    }
    // Room for n entries without a rehash; a map filled to a size it will reach every step grows once.
    void reserve(std::size_t n) {
        slots_.reserve(n);
        std::size_t cells = std::max<std::size_t>(16, cells_.size());
        while (n * 2 > cells) cells *= 2;
        if (cells != cells_.size()) rehash(cells);
    }
    // Keeps the index's capacity. A map refilled every step, once grown to its peak, holds few entries in a
    // large index: then only the entries' own cells are emptied, not the whole index.
    void clear() {
        if (size_ * 16 < cells_.size()) {
            for (std::size_t slot = 0; slot < slots_.size(); ++slot)
                if (slots_[slot].has_value()) cells_[cell_of_slot(slot)] = 0;
        } else {
            cells_.assign(cells_.size(), 0);
        }
        slots_.clear();
        size_ = 0;
        holes_ = 0;
    }

    const_iterator begin() const { return {slots_.begin(), slots_.end()}; }
    const_iterator end() const { return {slots_.end(), slots_.end()}; }
    iterator begin() { return {slots_.begin(), slots_.end()}; }
    iterator end() { return {slots_.end(), slots_.end()}; }

private:
    // A cell: 0 when empty, else the key's 32-bit hash in the high half and its slot + 1 in the low half.
    using Cell = std::uint64_t;
    static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

    // Keys are short ids: eight bytes at a time, the last one to eight packed by overlapping
    // loads (no loop, no call), then murmur3's 64-bit finaliser. Inline, where std::hash's
    // out-of-line _Hash_bytes and operator=='s memcmp call were 5 % and 8 % of a step at N = 4,096.
    static std::uint64_t load(const char* at, std::size_t bytes) {  // bytes: 1, 4 or 8, a constant at each call
        std::uint64_t word = 0;
        std::memcpy(&word, at, bytes);
        return word;
    }
    // The last 1 to 8 bytes as one word, distinct for distinct bytes of the same length.
    static std::uint64_t pack_tail(const char* at, std::size_t n) {
        if (n >= 4) return (load(at, 4) << 32) | load(at + n - 4, 4);
        if (n == 0) return 0;
        return (load(at, 1) << 16) | (load(at + n / 2, 1) << 8) | load(at + n - 1, 1);
    }
    static std::uint32_t hash_of(const std::string& key) {
        const char* at = key.data();
        std::size_t left = key.size();
        std::uint64_t h = 0x9e3779b97f4a7c15ull ^ left;
        for (; left > 8; at += 8, left -= 8) h = (h ^ load(at, 8)) * 0xff51afd7ed558ccdull;
        h ^= pack_tail(at, left);
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 33;
        return static_cast<std::uint32_t>(h);
    }
    static bool same_key(const std::string& a, const std::string& b) {
        if (a.size() != b.size()) return false;
        const char* x = a.data();
        const char* y = b.data();
        std::size_t left = a.size();
        for (; left > 8; x += 8, y += 8, left -= 8)
            if (load(x, 8) != load(y, 8)) return false;
        return pack_tail(x, left) == pack_tail(y, left);
    }
    static std::uint32_t hash_in(Cell cell) { return static_cast<std::uint32_t>(cell >> 32); }
    static std::size_t slot_of(Cell cell) { return static_cast<std::size_t>((cell & 0xffffffffu) - 1); }
    std::size_t mask() const { return cells_.size() - 1; }

    std::size_t find_cell(const std::string& key, std::uint32_t hash) const {
        if (cells_.empty()) return kNone;
        for (std::size_t at = hash & mask();; at = (at + 1) & mask()) {
            const Cell cell = cells_[at];
            if (cell == 0) return kNone;
            if (hash_in(cell) == hash && same_key(slots_[slot_of(cell)]->first, key)) return at;
        }
    }
    // The cell of a live slot. Walks on past empty cells, so it stays right while clear() empties the
    // cells of the entries before it.
    std::size_t cell_of_slot(std::size_t slot) const {
        std::size_t at = hash_of(slots_[slot]->first) & mask();
        while (cells_[at] == 0 || slot_of(cells_[at]) != slot) at = (at + 1) & mask();
        return at;
    }
    void place(std::uint32_t hash, std::size_t slot) {
        std::size_t at = hash & mask();
        while (cells_[at] != 0) at = (at + 1) & mask();
        cells_[at] = (static_cast<Cell>(hash) << 32) | static_cast<Cell>(slot + 1);
    }
    // Backward-shift deletion: later cells of the same probe run move up, so no tombstones remain.
    void remove_cell(std::size_t hole) {
        for (std::size_t at = (hole + 1) & mask(); cells_[at] != 0; at = (at + 1) & mask()) {
            const std::size_t home = hash_in(cells_[at]) & mask();
            const bool stays = hole <= at ? (hole < home && home <= at) : (hole < home || home <= at);
            if (stays) continue;
            cells_[hole] = cells_[at];
            hole = at;
        }
        cells_[hole] = 0;
    }
    void rehash(std::size_t capacity) {
        cells_.assign(capacity, 0);
        for (std::size_t slot = 0; slot < slots_.size(); ++slot)
            if (slots_[slot].has_value()) place(hash_of(slots_[slot]->first), slot);
    }
    void compact() {
        Slots kept;
        kept.reserve(size_);
        for (auto& slot : slots_)
            if (slot.has_value()) kept.push_back(std::move(slot));
        slots_ = std::move(kept);
        holes_ = 0;
        rehash(cells_.size());
    }

    Slots slots_;
    std::vector<Cell> cells_;  // lookup only, never iterated; a power of two, at most half full
    std::size_t size_ = 0;
    std::size_t holes_ = 0;
};

}  // namespace kvsim
