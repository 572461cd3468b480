#pragma once
// Helpers shared by trace_repair.cpp and trace_mutator.cpp (not part of the mutator's API).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/common/prng.h"
#include "sim/trace/trace.h"

namespace kvsim::fuzz::detail {

inline int between(Prng& rng, int lo, int hi) { return static_cast<int>(rng.between(lo, hi)); }

template <class C>
auto& pick(Prng& rng, C& container) {
    return container[static_cast<std::size_t>(rng.below(container.size()))];
}

inline int cdiv(std::int64_t a, std::int64_t b) { return static_cast<int>((a + b - 1) / b); }

// Segment name -> token count, the first segment of a name deciding. One sorted list of views into
// the trace's segments (valid until they are added to, removed or renamed), not a node and a copied
// name per segment: the mutator builds it several times for every trace it makes.
class SegmentLengths {
public:
    explicit SegmentLengths(const Trace& t) {
        entries_.reserve(t.segments.size());
        for (const Segment& s : t.segments) entries_.emplace_back(s.name, static_cast<std::int64_t>(s.tokens.size()));
        std::stable_sort(entries_.begin(), entries_.end(),
                         [](const Entry& a, const Entry& b) { return a.first < b.first; });
    }
    const std::int64_t* find(std::string_view name) const {
        const auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                                         [](const Entry& e, std::string_view n) { return e.first < n; });
        return it != entries_.end() && it->first == name ? &it->second : nullptr;
    }
    bool contains(std::string_view name) const { return find(name) != nullptr; }

private:
    using Entry = std::pair<std::string_view, std::int64_t>;
    std::vector<Entry> entries_;
};

inline SegmentLengths segment_lengths(const Trace& t) { return SegmentLengths(t); }

inline std::int64_t sequence_length(const SegmentLengths& lengths, const std::vector<std::string>& names) {
    std::int64_t n = 0;
    for (const std::string& name : names)
        if (const std::int64_t* length = lengths.find(name)) n += *length;
    return n;
}

inline bool has_connector(const Trace& t, std::string_view kind) {
    return std::any_of(t.connectors.begin(), t.connectors.end(),
                       [&](const ConnectorSpec& c) { return c.kind == kind; });
}

inline const ConnectorSpec* connector_of(const Trace& t, std::string_view kind) {
    for (const ConnectorSpec& c : t.connectors)
        if (c.kind == kind) return &c;
    return nullptr;
}

// The first name PREFIX<k> (k = 0, 1, ...) that `taken` rejects not.
template <class Taken>
std::string fresh_name(std::string_view prefix, Taken taken) {
    for (int k = 0;; ++k) {
        std::string name = std::string(prefix) + std::to_string(k);
        if (!taken(name)) return name;
    }
}

inline std::string fresh_segment_name(const Trace& t) {
    return fresh_name("s", [&](const std::string& n) { return t.find_segment(n) != nullptr; });
}

inline bool request_exists(const Trace& t, std::string_view id) {
    for (const Event& e : t.events)
        if (const auto* a = std::get_if<ArriveEvent>(&e.body); a && a->request_id == id) return true;
    return false;
}

inline std::string fresh_request_id(const Trace& t) {
    return fresh_name("r", [&](const std::string& n) { return request_exists(t, n); });
}

}  // namespace kvsim::fuzz::detail
