#include "fuzz/mutator/trace_cache.h"

#include <utility>

#include "fuzz/mutator/trace_mutator.h"
#include "sim/trace/trace_parser.h"

namespace kvsim::fuzz {

TraceCache::Entry& TraceCache::slot(std::string_view text) {
    if (const auto it = entries_.find(text); it != entries_.end()) return it->second;
    if (entries_.size() >= kCapacity) entries_.clear();
    return entries_.emplace(std::string(text), Entry{}).first->second;
}

Trace TraceCache::parsed(std::string_view text, Keep keep) {
    std::optional<Trace> storage;
    const Trace& trace = parsed_view(text, storage);
    if (storage && keep == Keep::yes) slot(text).parsed = *storage;
    return owned(trace, storage);
}

const Trace& TraceCache::parsed_view(std::string_view text, std::optional<Trace>& storage) {
    if (const auto it = entries_.find(text); it != entries_.end() && it->second.parsed) {
        ++hits_;
        return *it->second.parsed;
    }
    ++misses_;
    return storage.emplace(parse_trace(text, "<input>"));
}

Trace TraceCache::repaired(std::string_view text, std::uint64_t seed) {
    std::optional<Trace> storage;
    return owned(repaired_view(text, seed, storage), storage);
}

const Trace& TraceCache::repaired_view(std::string_view text, std::uint64_t seed, std::optional<Trace>& storage) {
    if (const auto it = entries_.find(text); it != entries_.end() && (it->second.salvaged || it->second.salvaged_is_parsed)) {
        ++hits_;
        const Trace& cached = it->second.salvaged ? *it->second.salvaged : *it->second.parsed;
        if (has_request(cached)) return cached;  // give_request would leave it as it is
        storage = cached;
    } else {
        ++misses_;
        storage = salvage(text);
        slot(text).salvaged = *storage;
    }
    give_request(*storage, seed);
    return *storage;
}

void TraceCache::printed(std::string_view text, Trace trace) {
    Entry& entry = slot(text);
    entry.parsed = std::move(trace);
    // as a trace built in memory: the parent's source lines do not say where the printed lines are
    for (Event& e : entry.parsed->events) e.line = 0;
    for (StepCheck& c : entry.parsed->checks) c.line = 0;
    entry.salvaged.reset();
    entry.salvaged_is_parsed = true;
}

bool TraceCache::ran_before(std::string_view text) {
    const auto it = entries_.find(text);
    if (it == entries_.end()) return false;
    return std::exchange(it->second.ran, true);
}

}  // namespace kvsim::fuzz
