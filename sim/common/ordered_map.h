#pragma once
// Insertion-ordered map with string keys: mirrors the iteration order of a Python
// dict, which upstream relies on (e.g. num_scheduled_tokens drives the order in
// which finished requests free their blocks).
#include <cstddef>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kvsim {

template <class V>
class OrderedMap {
public:
    using Entry = std::pair<std::string, V>;

    bool contains(const std::string& key) const { return index_.contains(key); }
    std::size_t size() const { return entries_.size(); }
    bool empty() const { return entries_.empty(); }

    V& operator[](const std::string& key) {
        auto it = index_.find(key);
        if (it != index_.end()) return entries_[it->second].second;
        index_.emplace(key, entries_.size());
        entries_.emplace_back(key, V{});
        return entries_.back().second;
    }
    const V& at(const std::string& key) const {
        auto it = index_.find(key);
        if (it == index_.end()) throw std::out_of_range("OrderedMap: no key " + key);
        return entries_[it->second].second;
    }
    const V* find(const std::string& key) const {
        auto it = index_.find(key);
        return it == index_.end() ? nullptr : &entries_[it->second].second;
    }
    V* find(const std::string& key) {
        auto it = index_.find(key);
        return it == index_.end() ? nullptr : &entries_[it->second].second;
    }
    // O(n) like Python's dict.pop keeping the order of the rest.
    std::optional<V> erase(const std::string& key) {
        auto it = index_.find(key);
        if (it == index_.end()) return std::nullopt;
        const std::size_t pos = it->second;
        V value = std::move(entries_[pos].second);
        entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(pos));
        index_.erase(it);
        for (auto& [k, i] : index_)
            if (i > pos) --i;
        return value;
    }
    void clear() {
        entries_.clear();
        index_.clear();
    }

    auto begin() const { return entries_.begin(); }
    auto end() const { return entries_.end(); }
    auto begin() { return entries_.begin(); }
    auto end() { return entries_.end(); }

private:
    std::vector<Entry> entries_;
    std::map<std::string, std::size_t> index_;
};

}  // namespace kvsim
