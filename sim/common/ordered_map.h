#pragma once
// Insertion-ordered map with string keys: mirrors the iteration order of a Python
// dict, which upstream relies on (e.g. num_scheduled_tokens drives the order in
// which finished requests free their blocks).
//
// Lookup goes through a hash index; iteration walks the insertion-ordered slots only,
// so the index's own order never reaches a caller. Erase leaves a hole that iteration
// skips (O(1), like dict.pop), and the slots are compacted once holes outnumber entries.
#include <cstddef>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
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

    bool contains(const std::string& key) const { return index_.contains(key); }
    std::size_t size() const { return index_.size(); }
    bool empty() const { return index_.empty(); }

    V& operator[](const std::string& key) {
        auto [it, inserted] = index_.try_emplace(key, slots_.size());
        if (inserted) slots_.emplace_back(std::in_place, key, V{});
        return slots_[it->second]->second;
    }
    const V& at(const std::string& key) const {
        const V* value = find(key);
        if (value == nullptr) throw std::out_of_range("OrderedMap: no key " + key);
        return *value;
    }
    const V* find(const std::string& key) const {
        auto it = index_.find(key);
        return it == index_.end() ? nullptr : &slots_[it->second]->second;
    }
    V* find(const std::string& key) {
        auto it = index_.find(key);
        return it == index_.end() ? nullptr : &slots_[it->second]->second;
    }
    // Like Python's dict.pop: the rest keep their order. Invalidates pointers into the map.
    std::optional<V> erase(const std::string& key) {
        auto it = index_.find(key);
        if (it == index_.end()) return std::nullopt;
        std::optional<Entry>& slot = slots_[it->second];
        V value = std::move(slot->second);
        slot.reset();
        index_.erase(it);
        ++holes_;
        if (holes_ > 16 && holes_ > index_.size()) compact();
        return value;
    }
    void clear() {
        slots_.clear();
        index_.clear();
        holes_ = 0;
    }

    const_iterator begin() const { return {slots_.begin(), slots_.end()}; }
    const_iterator end() const { return {slots_.end(), slots_.end()}; }
    iterator begin() { return {slots_.begin(), slots_.end()}; }
    iterator end() { return {slots_.end(), slots_.end()}; }

private:
    void compact() {
        Slots kept;
        kept.reserve(index_.size());
        for (auto& slot : slots_)
            if (slot.has_value()) {
                index_[slot->first] = kept.size();
                kept.push_back(std::move(slot));
            }
        slots_ = std::move(kept);
        holes_ = 0;
    }

    Slots slots_;
    std::unordered_map<std::string, std::size_t> index_;  // lookup only, never iterated
    std::size_t holes_ = 0;
};

}  // namespace kvsim
