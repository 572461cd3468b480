#pragma once
// The traces a fuzzing process has already parsed, by their text. libFuzzer hands the mutator the
// same corpus unit many times and then runs the text the mutator just printed; parsing and
// validating those texts again was about a sixth of the trace target's time. A cached answer is
// the one the uncached call gives (fuzz/tests/test_trace_cache.cpp holds the mutator to it), so
// the cache changes no output, only the time: it is never iterated, and it is emptied, whole,
// when it holds kCapacity texts.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "sim/trace/trace.h"

namespace kvsim::fuzz {

// A view's answer as a trace of its own: what the view parsed or repaired into `storage`, moved out,
// else a copy of the cached trace it returned.
inline Trace owned(const Trace& view, std::optional<Trace>& storage) {
    if (storage) return std::move(*storage);
    return view;
}

class TraceCache {
public:
    static constexpr std::size_t kCapacity = 4096;

    // Whether a text parsed on a miss is kept. Keep::no is the fuzz target's callback: libFuzzer
    // takes memory an input's call keeps for a leak, and a sanitizer build then runs the input a
    // second time (every unit of a corpus replayed at start-up, and each fork-mode job replays one).
    enum class Keep { yes, no };

    // parse_trace(text, "<input>"); throws its InputError (a text that does not parse is not kept).
    Trace parsed(std::string_view text, Keep keep = Keep::yes);
    // parsed(text, Keep::no) without its copy: the cached trace, or the text parsed into `storage`.
    // The reference lasts until the cache's next non-const call.
    const Trace& parsed_view(std::string_view text, std::optional<Trace>& storage);
    // repair(text, seed).
    Trace repaired(std::string_view text, std::uint64_t seed);
    // repaired(text, seed) without its copy: the cached trace when it has a request, else the
    // trace with the seed's request in `storage`. The reference lasts until the next non-const call.
    const Trace& repaired_view(std::string_view text, std::uint64_t seed, std::optional<Trace>& storage);
    // The mutator printed `trace`, which normalize() leaves as it is, as `text` (print_trace): both
    // parse_trace(text) and salvage(text) give `trace` back (Trace::operator==, which leaves out the
    // source line numbers; the cache keeps them 0, as for a trace built in memory).
    void printed(std::string_view text, Trace trace);
    // Whether the fuzz target ran `text` already: true when the cache holds the text marked as run;
    // otherwise marks it, when held, and gives false. The model is deterministic, so a text run
    // again would make the same schedule and the same coverage. Allocates nothing (Keep: an
    // input's call keeps no memory), so a text the cache does not hold is never marked.
    bool ran_before(std::string_view text);

    std::uint64_t hits() const { return hits_; }
    std::uint64_t misses() const { return misses_; }

private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
    };
    struct Entry {
        std::optional<Trace> parsed;    // parse_trace(text)
        std::optional<Trace> salvaged;  // salvage(text), what repair() gives before its seeded request
        bool salvaged_is_parsed = false;
        bool ran = false;  // the fuzz target ran the text (ran_before)
    };
    using Map = std::unordered_map<std::string, Entry, Hash, std::equal_to<>>;

    Entry& slot(std::string_view text);

    Map entries_;
    std::uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace kvsim::fuzz
