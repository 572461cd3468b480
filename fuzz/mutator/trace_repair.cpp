// normalize(), repair() (salvage of unparsable text), within_budget(), step_bound().
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "fuzz/mutator/mutator_util.h"
#include "fuzz/mutator/trace_mutator.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_builder.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_schema.h"
#include "sim/variant/variant.h"

namespace kvsim::fuzz {
namespace {

using detail::cdiv;

int clamp_int(int v, int lo, int hi) { return std::clamp(v, lo, hi); }

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
}

// A name the schema accepts: [A-Za-z0-9_.-]{1,64}; bad characters become '_'.
std::string sanitize_name(std::string name, std::string_view fallback) {
    if (name.size() > static_cast<std::size_t>(limits::kMaxIdLen)) name.resize(static_cast<std::size_t>(limits::kMaxIdLen));
    for (char& c : name)
        if (!is_name_char(c)) c = '_';
    return name.empty() ? std::string(fallback) : name;
}

// ---- normalize, part by part ------------------------------------------------------------

void normalize_engine(EngineConfig& e) {
    namespace env = envelope;
    e.block_size = clamp_int(e.block_size, 1, env::kMaxBlockSize);
    e.num_blocks = clamp_int(e.num_blocks, 2, env::kMaxNumBlocks);
    e.max_batched_tokens = clamp_int(e.max_batched_tokens, 1, env::kMaxBatchedTokens);
    e.max_running = clamp_int(e.max_running, 1, env::kMaxRunning);
    e.max_model_len = clamp_int(e.max_model_len, 2, env::kMaxModelLen);
    e.long_prefill_threshold = clamp_int(e.long_prefill_threshold, 0, env::kMaxLongPrefill);
}

// A MultiConnector's own kv_role exactly when there are two connectors (rule kv_role_required).
void normalize_multi(Trace& t) {
    if (t.connectors.size() < 2) t.multi.reset();
    else if (!t.multi) t.multi = MultiConnectorSpec{.role = KvRole::kv_both};
}

bool known_kind(std::string_view kind) {
    return kind == kConnectorStandIn || kind == kConnectorP2p || kind == kConnectorStore;
}

// At most one of each kind; stand_in alone (the first connector decides); keys of another
// kind back at their defaults.
void normalize_connectors(std::vector<ConnectorSpec>& connectors) {
    std::vector<ConnectorSpec> kept;
    for (ConnectorSpec& c : connectors) {
        if (!known_kind(c.kind)) continue;
        if (std::any_of(kept.begin(), kept.end(), [&](const ConnectorSpec& k) { return k.kind == c.kind; })) continue;
        if (!kept.empty() && (c.kind == kConnectorStandIn || kept.front().kind == kConnectorStandIn)) continue;
        if (c.role != KvRole::kv_consumer && c.role != KvRole::kv_producer && c.role != KvRole::kv_both)
            c.role = KvRole::kv_both;
        const ConnectorSpec defaults{};
        if (c.kind != kConnectorStandIn) c.load_delay = defaults.load_delay;
        c.load_delay = clamp_int(c.load_delay, 0, envelope::kMaxDelay);
        if (c.kind == kConnectorStore) c.load_async = true;  // upstream's store worker asserts it (rule store_load_async)
        if (c.kind != kConnectorStore) {
            c.load_async = defaults.load_async;
            c.lookup_async = defaults.lookup_async;
            c.enable_lookup = defaults.enable_lookup;
            c.save_decode_cache = defaults.save_decode_cache;
        }
        kept.push_back(std::move(c));
    }
    connectors = std::move(kept);
}

void normalize_workers(WorkerConfig& w) {
    const int d = envelope::kMaxDelay;
    w.ranks = clamp_int(w.ranks, 1, envelope::kMaxRanks);
    w.store_delay_min = clamp_int(w.store_delay_min, 0, d);
    w.store_delay_max = clamp_int(w.store_delay_max, 0, d);
    w.load_delay_min = clamp_int(w.load_delay_min, 0, d);
    w.load_delay_max = clamp_int(w.load_delay_max, 0, d);
    w.pull_delay = clamp_int(w.pull_delay, 0, d);
    if (w.store_delay_max < w.store_delay_min) std::swap(w.store_delay_min, w.store_delay_max);
    if (w.load_delay_max < w.load_delay_min) std::swap(w.load_delay_min, w.load_delay_max);
}

// Valid unique names, 1..kMaxSegmentLen tokens, generated tokens consistent with the name.
void normalize_segments(Trace& t) {
    std::vector<Segment> kept;
    std::unordered_set<std::string> names;
    for (Segment& s : t.segments) {
        s.name = sanitize_name(std::move(s.name), "s");
        if (names.contains(s.name)) {
            // A clash: the first definition wins for every reference, this one gets a new name.
            s.name = detail::fresh_name(s.name + "_", [&](const std::string& n) { return names.contains(n); });
            if (s.name.size() > static_cast<std::size_t>(limits::kMaxIdLen))
                s.name = detail::fresh_name("s", [&](const std::string& n) { return names.contains(n); });
        }
        const auto length = static_cast<int>(std::clamp<std::size_t>(s.tokens.size(), 1,
                                                                      static_cast<std::size_t>(envelope::kMaxSegmentLen)));
        if (s.generated) {
            s.tokens = generated_segment_tokens(s.name, length);
        } else {
            if (s.tokens.empty()) s.tokens.push_back(1);
            s.tokens.resize(static_cast<std::size_t>(length));
            for (std::int32_t& token : s.tokens) token = std::max<std::int32_t>(token, 0);
        }
        names.insert(s.name);
        kept.push_back(std::move(s));
    }
    t.segments = std::move(kept);
}

// Known segment names only, at most `max_items`, total length at most `max_len` (trailing
// segments dropped; a single segment is at most kMaxSegmentLen < kMaxModelLen - 1).
void fit_sequence(std::vector<std::string>& names, const detail::SegmentLengths& lengths,
                  std::size_t max_items, std::int64_t max_len) {
    std::erase_if(names, [&](const std::string& n) { return !lengths.contains(n); });
    if (names.size() > max_items) names.resize(max_items);
    while (names.size() > 1 && detail::sequence_length(lengths, names) > max_len) names.pop_back();
}

std::string add_default_segment(Trace& t) {
    Segment s;
    s.name = detail::fresh_segment_name(t);
    s.tokens = generated_segment_tokens(s.name, 16);
    t.segments.push_back(s);
    return s.name;
}

void normalize_events(Trace& t) {
    for (Event& e : t.events) {
        e.step = clamp_int(e.step, 0, envelope::kMaxEventStep);
        e.line = 0;
    }
    std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) { return a.step < b.step; });
    auto lengths = detail::segment_lengths(t);
    std::unordered_set<std::string> arrived;
    std::vector<Event> kept;
    for (Event& e : t.events) {
        if (kept.size() >= static_cast<std::size_t>(envelope::kMaxEvents)) break;
        if (auto* a = std::get_if<ArriveEvent>(&e.body)) {
            a->request_id = sanitize_name(std::move(a->request_id), "r");
            if (arrived.contains(a->request_id) || arrived.size() >= static_cast<std::size_t>(envelope::kMaxRequests))
                continue;
            fit_sequence(a->prompt, lengths, envelope::kMaxPromptSegments, envelope::kMaxModelLen - 1);
            if (a->prompt.empty()) {
                if (t.segments.empty()) {
                    add_default_segment(t);
                    lengths = detail::segment_lengths(t);
                }
                a->prompt.push_back(t.segments.front().name);
            }
            a->max_tokens = clamp_int(a->max_tokens, 1, envelope::kMaxMaxTokens);
            // not both on one request: the decode flag goes first
            const RemoteFlags remote = passable_remote_flags(
                t.connectors, {.prefill = a->remote_prefill, .decode = a->remote_decode && !a->remote_prefill});
            a->remote_prefill = remote.prefill;
            a->remote_decode = remote.decode;
            a->external = -1;  // the mock connector is outside the fuzz envelope (known_kind)
            arrived.insert(a->request_id);
        } else if (auto* x = std::get_if<AbortEvent>(&e.body)) {
            if (!arrived.contains(x->request_id)) continue;
        } else if (auto* f = std::get_if<FaultEvent>(&e.body)) {
            if (!connectors_take_fault(t.connectors, f->kind)) continue;
            const int rank = ((f->rank % t.workers.ranks) + t.workers.ranks) % t.workers.ranks;
            const int steps = clamp_int(f->steps, 1, envelope::kMaxFaultSteps);
            switch (f->kind) {
                case FaultKind::store_delay:
                    *f = FaultEvent{.kind = f->kind, .rank = rank, .steps = steps};
                    break;
                case FaultKind::store_fail:
                    *f = FaultEvent{.kind = f->kind, .rank = rank};
                    break;
                case FaultKind::load_fail:
                    if (!arrived.contains(f->request_id)) continue;
                    *f = FaultEvent{.kind = f->kind, .request_id = std::move(f->request_id)};
                    break;
                case FaultKind::lookup_pending:
                    if (!arrived.contains(f->request_id)) continue;
                    *f = FaultEvent{.kind = f->kind, .steps = steps, .request_id = std::move(f->request_id)};
                    break;
                default: continue;
            }
        } else {
            continue;
        }
        kept.push_back(std::move(e));
    }
    t.events = std::move(kept);
}

void normalize_store(Trace& t) {
    if (!detail::has_connector(t, kConnectorStore)) {
        t.store.clear();
        return;
    }
    const auto lengths = detail::segment_lengths(t);
    for (StoreEntry& entry : t.store)
        fit_sequence(entry.prefix, lengths, envelope::kMaxPromptSegments, envelope::kMaxModelLen);
    std::erase_if(t.store, [](const StoreEntry& entry) { return entry.prefix.empty(); });
    if (t.store.size() > static_cast<std::size_t>(envelope::kMaxStoreEntries))
        t.store.resize(static_cast<std::size_t>(envelope::kMaxStoreEntries));
}

void prune_segments(Trace& t) {
    std::set<std::string> used;
    for (const StoreEntry& entry : t.store) used.insert(entry.prefix.begin(), entry.prefix.end());
    for (const Event& e : t.events)
        if (const auto* a = std::get_if<ArriveEvent>(&e.body)) used.insert(a->prompt.begin(), a->prompt.end());
    std::erase_if(t.segments, [&](const Segment& s) { return !used.contains(s.name); });
    if (t.segments.size() > static_cast<std::size_t>(envelope::kMaxSegments)) {
        // Too many in use: keep the first ones and let the sequences drop the rest.
        t.segments.resize(static_cast<std::size_t>(envelope::kMaxSegments));
        const auto lengths = detail::segment_lengths(t);
        for (StoreEntry& entry : t.store)
            fit_sequence(entry.prefix, lengths, envelope::kMaxPromptSegments, envelope::kMaxModelLen);
        std::erase_if(t.store, [](const StoreEntry& entry) { return entry.prefix.empty(); });
        for (Event& e : t.events)
            if (auto* a = std::get_if<ArriveEvent>(&e.body)) {
                fit_sequence(a->prompt, lengths, envelope::kMaxPromptSegments, envelope::kMaxModelLen - 1);
                if (a->prompt.empty()) a->prompt.push_back(t.segments.front().name);
            }
    }
}

// The most prompt tokens a request gets in one step. long_prefill_threshold caps them with or
// without chunked_prefill, as the scheduler does (sim/core/sched/scheduler.cpp).
int prefill_chunk(const EngineConfig& e) {
    int chunk = std::max(1, e.max_batched_tokens);
    if (e.long_prefill_threshold > 0) chunk = std::min(chunk, e.long_prefill_threshold);
    return chunk;
}

// Steps a lone run of every request needs: prefill chunks plus output tokens.
std::int64_t work_estimate(const Trace& t) {
    const int chunk = prefill_chunk(t.engine);
    const auto lengths = detail::segment_lengths(t);
    std::int64_t work = 0;
    for (const Event& ev : t.events)
        if (const auto* a = std::get_if<ArriveEvent>(&ev.body))
            work += cdiv(std::max<std::int64_t>(1, detail::sequence_length(lengths, a->prompt)), chunk) +
                    std::max(1, a->max_tokens);
    return work;
}

// max_model_len holds every prompt and store prefix; the pool holds each request on its own;
// chunked_prefill=off has the budget for a whole sequence.
void fit_engine(Trace& t) {
    EngineConfig& e = t.engine;
    const auto lengths = detail::segment_lengths(t);
    std::int64_t longest_store = 0;
    for (const StoreEntry& entry : t.store)
        longest_store = std::max(longest_store, detail::sequence_length(lengths, entry.prefix));
    std::int64_t longest_prompt = 0;
    for (const Event& ev : t.events)
        if (const auto* a = std::get_if<ArriveEvent>(&ev.body))
            longest_prompt = std::max(longest_prompt, detail::sequence_length(lengths, a->prompt));
    e.max_model_len = std::max(e.max_model_len, min_model_len(longest_prompt, longest_store));
    e.max_batched_tokens = batch_budget(e.chunked_prefill, e.max_batched_tokens, e.max_model_len);
    e.num_blocks = std::max(e.num_blocks, min_num_blocks(t));
    fit_upstream_limits(e, min_model_len(longest_prompt, longest_store));
    // bounded work: a larger prefill chunk until the prefill steps and output tokens fit kMaxWork
    while (work_estimate(t) > envelope::kMaxWork) {
        if (e.chunked_prefill && e.long_prefill_threshold > 0 && e.long_prefill_threshold < e.max_batched_tokens)
            e.long_prefill_threshold = e.long_prefill_threshold * 2 > envelope::kMaxLongPrefill ? 0 : e.long_prefill_threshold * 2;
        else if (e.max_batched_tokens < envelope::kMaxBatchedTokens)
            e.max_batched_tokens = std::min(envelope::kMaxBatchedTokens, e.max_batched_tokens * 2);
        else
            break;  // one chunk per prompt already: the output tokens alone are below kMaxWork
    }
}

Trace minimal_trace() {
    Trace t;
    t.engine.max_model_len = envelope::kMaxModelLen;
    fit_upstream_limits(t.engine, t.engine.max_model_len);
    add_default_segment(t);
    t.events.push_back(Event{.step = 0, .body = ArriveEvent{.request_id = "r0", .prompt = {"s0"}, .max_tokens = 4}});
    t.run.max_steps = step_bound(t);
    return t;
}

bool valid(const Trace& t) {
    try {
        validate_trace(t, "<normalized>");
        return true;
    } catch (const InputError&) {
        return false;
    }
}

// ---- salvage ------------------------------------------------------------------------------

// A lenient integer: the leading digits, clamped to the spec's range; nullopt without digits.
std::optional<Value> lenient_integer(const KeySpec& spec, std::string_view text) {
    std::uint64_t v = 0;
    std::size_t i = 0;
    bool any = false;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        const auto digit = static_cast<std::uint64_t>(text[i] - '0');
        v = v > (std::numeric_limits<std::uint64_t>::max() - digit) / 10 ? std::numeric_limits<std::uint64_t>::max()
                                                                          : v * 10 + digit;
        any = true;
        ++i;
    }
    if (!any) return std::nullopt;
    return Value{std::clamp(v, spec.min, spec.max)};
}

std::optional<Value> lenient_value(const KeySpec& spec, std::string_view text) {
    std::string error;
    if (auto value = parse_value(spec, text, &error)) return value;
    if (spec.type == ValueType::integer) return lenient_integer(spec, text);
    return std::nullopt;
}

// Positional arguments must parse (they name the line's kind or object); key=value arguments
// that do not are skipped, and so are unknown keys and keys of another kind.
template <class T>
std::optional<T> salvage_line(const LineSchema<T>& schema, std::span<const std::string_view> args, T out = T{}) {
    std::size_t a = 0;
    for (const Row<T>& row : schema.rows) {
        if (!row.spec.positional) continue;
        while (a < args.size() && args[a].find('=') != std::string_view::npos) ++a;
        if (a >= args.size()) return std::nullopt;
        auto value = lenient_value(row.spec, args[a++]);
        if (!value) return std::nullopt;
        row.set(out, std::move(*value));
    }
    for (const std::string_view arg : args) {
        const std::size_t eq = arg.find('=');
        if (eq == std::string_view::npos) continue;
        const std::string_view key = arg.substr(0, eq);
        for (const Row<T>& row : schema.rows) {
            if (row.spec.positional || row.spec.name != key || !row_applies(schema, row, out)) continue;
            if (auto value = lenient_value(row.spec, arg.substr(eq + 1))) row.set(out, std::move(*value));
            break;
        }
    }
    return out;
}

class Salvager {
public:
    Trace run(std::string_view text) {
        if (text.size() > budget::kMaxInputBytes) text = text.substr(0, budget::kMaxInputBytes);
        std::size_t pos = 0;
        int lines = 0;
        while (pos < text.size() && lines < kMaxLines) {
            std::size_t end = text.find('\n', pos);
            if (end == std::string_view::npos) end = text.size();
            line(text.substr(pos, std::min<std::size_t>(end - pos, kMaxLineBytes)));
            pos = end + 1;
            ++lines;
        }
        return std::move(t_);
    }

private:
    static constexpr int kMaxLines = 4096;
    // More than normalize() keeps of each kind of line (it keeps the first ones).
    static constexpr std::size_t kMaxItems = 256;

    static bool separator(char c) {
        const auto u = static_cast<unsigned char>(c);
        return u <= 0x20 || u >= 0x7f;  // blanks, control characters and non-ASCII split tokens
    }

    void line(std::string_view raw) {
        std::vector<std::string_view> tokens;
        std::size_t i = 0;
        while (i < raw.size()) {
            if (separator(raw[i])) {
                ++i;
                continue;
            }
            if (raw[i] == '#') break;
            const std::size_t start = i;
            while (i < raw.size() && !separator(raw[i])) ++i;
            tokens.push_back(raw.substr(start, i - start));
        }
        if (tokens.empty()) return;
        const std::string_view keyword = tokens[0];
        const auto args = std::span<const std::string_view>(tokens).subspan(1);
        if (keyword == engine_schema().keyword) {
            t_.engine = *salvage_line(engine_schema(), args, t_.engine);
        } else if (keyword == run_schema().keyword) {
            t_.run = *salvage_line(run_schema(), args, t_.run);
        } else if (keyword == workers_schema().keyword) {
            t_.workers = *salvage_line(workers_schema(), args, t_.workers);
        } else if (keyword == connector_schema().keyword) {
            if (t_.connectors.size() >= kMaxItems) return;
            if (auto c = salvage_line(connector_schema(), args)) t_.connectors.push_back(std::move(*c));
        } else if (keyword == segment_schema().keyword) {
            if (t_.segments.size() >= kMaxItems) return;
            if (auto s = salvage_line(segment_schema(), args)) {
                // `len=65536` is 14 bytes of text for 256 KiB of tokens: cut before they are derived
                s->pending_len = std::min(s->pending_len, static_cast<std::int32_t>(envelope::kMaxSegmentLen));
                derive_segment_tokens(*s);
                if (s->tokens.size() > static_cast<std::size_t>(envelope::kMaxSegmentLen))
                    s->tokens.resize(static_cast<std::size_t>(envelope::kMaxSegmentLen));
                if (s->tokens.empty()) s->tokens = generated_segment_tokens(s->name, 16);
                t_.segments.push_back(std::move(*s));
            }
        } else if (keyword == store_schema().keyword) {
            if (t_.store.size() >= kMaxItems) return;
            if (auto s = salvage_line(store_schema(), args)) t_.store.push_back(std::move(*s));
        } else if (keyword.front() == '@') {
            if (t_.events.size() >= kMaxItems) return;
            event(keyword.substr(1), args);
        }
        // the header, expect lines and unknown keywords carry nothing a fuzzed run needs
    }

    void event(std::string_view step_text, std::span<const std::string_view> tokens) {
        if (tokens.empty()) return;
        const auto step = lenient_value(event_step_spec(), step_text);
        Event e;
        e.step = step ? static_cast<int>(std::min<std::uint64_t>(std::get<std::uint64_t>(*step),
                                                                 static_cast<std::uint64_t>(limits::kMaxSteps - 1)))
                      : (t_.events.empty() ? 0 : t_.events.back().step);
        const std::string_view kind = tokens[0];
        const auto args = tokens.subspan(1);
        if (kind == arrive_schema().keyword) {
            auto a = salvage_line(arrive_schema(), args);
            if (!a) return;
            e.body = std::move(*a);
        } else if (kind == abort_schema().keyword) {
            auto x = salvage_line(abort_schema(), args);
            if (!x) return;
            e.body = std::move(*x);
        } else if (kind == fault_schema().keyword) {
            auto f = salvage_line(fault_schema(), args);
            if (!f) return;
            e.body = std::move(*f);
        } else {
            return;
        }
        t_.events.push_back(std::move(e));
    }

    Trace t_;
};

}  // namespace

bool has_request(const Trace& t) {
    return std::any_of(t.events.begin(), t.events.end(),
                       [](const Event& e) { return std::holds_alternative<ArriveEvent>(e.body); });
}

bool normalize(Trace& t) {
    t.version = kTraceFormatVersion;
    // what the original trace states about its own outcome and state, which a mutation changes
    t.expectations.clear();
    t.checks.clear();
    if (!t.run.variant.empty()) {
        std::string error;
        if (t.run.variant.size() > kMaxVariantNameLen || !resolve_variant(t.run.variant, &error)) t.run.variant.clear();
    }
    normalize_engine(t.engine);
    normalize_connectors(t.connectors);
    normalize_multi(t);
    normalize_workers(t.workers);
    normalize_segments(t);
    normalize_events(t);
    normalize_store(t);
    prune_segments(t);
    fit_engine(t);
    t.run.max_steps = step_bound(t);
    if (valid(t)) return true;
    const std::uint64_t seed = t.run.seed;
    t = minimal_trace();
    t.run.seed = seed;
    return false;
}

Trace salvage(std::string_view text) {
    Trace t;
    try {
        t = parse_trace(text, "<input>");
    } catch (const InputError&) {
        t = Salvager().run(text);
    }
    normalize(t);
    return t;
}

void give_request(Trace& t, std::uint64_t seed) {
    if (has_request(t)) return;
    // Nothing to run: one request over one new segment, drawn from the seed.
    Prng rng(seed);
    Segment s;
    s.name = detail::fresh_segment_name(t);
    s.tokens = generated_segment_tokens(s.name, detail::between(rng, 1, 64));
    t.segments.push_back(s);
    t.events.push_back(Event{.step = 0,
                             .body = ArriveEvent{.request_id = detail::fresh_request_id(t),
                                                 .prompt = {s.name},
                                                 .max_tokens = detail::between(rng, 1, 24)}});
    normalize(t);
}

Trace repair(std::string_view text, std::uint64_t seed) {
    Trace t = salvage(text);
    give_request(t, seed);
    return t;
}

// What step_bound, stall_budget and idle_budget count: prefill steps, output tokens and delays.
struct Work {
    std::int64_t prefill_steps = 0;  // a step per prefill chunk, and 2 more, per request
    std::int64_t output_tokens = 0;
    int requests = 0;
    std::int64_t delays = 2;  // fault steps, the slowest worker delays and stand_in load delays, summed
    // the slowest worker delays, stand_in load delays and store_delay fault steps, summed (what a
    // worker can make the core wait for once every fault has fired: a store_delay lasts)
    std::int64_t worker_delays = 0;
    // the longest recomputation: one request's prompt and every output token, one chunk a step, and 2
    // more (after a preemption, a request computes nothing new until it has recomputed all of them)
    std::int64_t longest_recompute = 0;
};

Work work_of(const Trace& t) {
    const int chunk = prefill_chunk(t.engine);
    const auto lengths = detail::segment_lengths(t);
    Work work;
    for (const Event& ev : t.events) {
        if (const auto* a = std::get_if<ArriveEvent>(&ev.body)) {
            const std::int64_t prompt = std::max<std::int64_t>(1, detail::sequence_length(lengths, a->prompt));
            const std::int64_t output = std::max(1, a->max_tokens);
            work.prefill_steps += cdiv(prompt, chunk) + 2;
            work.output_tokens += output;
            work.longest_recompute = std::max<std::int64_t>(work.longest_recompute, cdiv(prompt + output, chunk) + 2);
            ++work.requests;
        } else if (const auto* f = std::get_if<FaultEvent>(&ev.body)) {
            work.delays += std::max(0, f->steps);
            if (f->kind == FaultKind::store_delay) work.worker_delays += std::max(0, f->steps);
        }
    }
    const WorkerConfig& w = t.workers;
    std::int64_t slowest = std::max(0, w.store_delay_max) + std::max(0, w.load_delay_max) + std::max(0, w.pull_delay);
    for (const ConnectorSpec& c : t.connectors)
        if (c.kind == kConnectorStandIn) slowest += std::max(0, c.load_delay);
    work.delays += slowest;
    work.worker_delays += slowest;
    return work;
}

int drain_bound(const Trace& t, const Work& work) {
    return drain_step_bound(DrainEstimate{.last_event_step = last_event_step(t.events),
                                          .work = work.prefill_steps + work.output_tokens,
                                          .delays = work.delays,
                                          .delay_rounds = 1 + work.requests,
                                          .slack = 1 + 64});
}

int step_bound(const Trace& t) { return drain_bound(t, work_of(t)); }

SearchBudgets search_budgets(const Trace& t) {
    const Work work = work_of(t);
    SearchBudgets b;
    b.steps = std::min(t.run.max_steps, 2 * drain_bound(t, work));
    b.stall = static_cast<int>(std::min<std::int64_t>(64 + 2 * (work.prefill_steps + work.delays), b.steps));
    b.idle = static_cast<int>(std::min<std::int64_t>(32 + 2 * work.worker_delays + work.longest_recompute, b.stall));
    return b;
}

int step_budget(const Trace& t) { return search_budgets(t).steps; }
int stall_budget(const Trace& t) { return search_budgets(t).stall; }
int idle_budget(const Trace& t) { return search_budgets(t).idle; }

bool within_budget(const Trace& t, std::string* why) {
    auto fail = [&](std::string reason) {
        if (why) *why = std::move(reason);
        return false;
    };
    if (t.run.max_steps > budget::kMaxSteps) return fail("run.max_steps above the fuzz budget");
    if (t.events.size() > budget::kMaxEvents) return fail("too many events");
    if (t.segments.size() > budget::kMaxSegments) return fail("too many segments");
    if (t.store.size() > budget::kMaxStoreEntries) return fail("too many store lines");
    if (t.engine.num_blocks > budget::kMaxNumBlocks) return fail("engine.num_blocks above the fuzz budget");
    if (t.engine.max_model_len > budget::kMaxModelLen) return fail("engine.max_model_len above the fuzz budget");
    std::int64_t segment_tokens = 0;
    for (const Segment& s : t.segments) segment_tokens += static_cast<std::int64_t>(s.tokens.size());
    if (segment_tokens > budget::kMaxSegmentTokens) return fail("segments hold too many tokens");
    const WorkerConfig& w = t.workers;
    if (w.ranks > budget::kMaxRanks) return fail("workers.ranks above the fuzz budget");
    for (const int d : {w.store_delay_max, w.load_delay_max, w.pull_delay})
        if (d > budget::kMaxDelay) return fail("a workers delay above the fuzz budget");
    for (const ConnectorSpec& c : t.connectors)
        if (c.load_delay > budget::kMaxDelay) return fail("connector.load_delay above the fuzz budget");
    const auto lengths = detail::segment_lengths(t);
    std::int64_t request_tokens = 0;
    for (const Event& ev : t.events) {
        if (const auto* f = std::get_if<FaultEvent>(&ev.body); f && f->steps > budget::kMaxDelay)
            return fail("fault steps above the fuzz budget");
        const auto* a = std::get_if<ArriveEvent>(&ev.body);
        if (a == nullptr) continue;
        const std::int64_t prompt = detail::sequence_length(lengths, a->prompt);
        request_tokens += prompt + a->max_tokens;
        if (request_blocks(prompt, a->max_tokens, t.engine.max_model_len, t.engine.block_size) >
            t.engine.num_blocks - kNullBlocks)
            return fail("request " + a->request_id + " does not fit the block pool on its own");
    }
    if (request_tokens > budget::kMaxRequestTokens) return fail("requests hold too many tokens");
    return true;
}

}  // namespace kvsim::fuzz
