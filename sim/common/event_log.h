#pragma once
// The per-step event log: the observable output of a run. Each entry is a category plus typed
// fields (FoundationDB's TraceEvent("X").detail("k", v) is the model); the text log is rendered
// from the fields through each event's format, and its digest backs the determinism check.
// Byte-identical for the same trace and seed on every build.
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "sim/common/stable_hash.h"

namespace kvsim {

// Every event category, in one name table (event_log.cpp).
enum class EventCategory : std::uint8_t {
    arrive, alloc, preempt, promote, lookup, park, schedule, invalid, finish, recv_done, send_done, hold,
    free, abort, meta, fault, worker, load, store, warn, p2p, crash, internal, violation, liveness, reset,
};
std::string_view to_string(EventCategory category);
std::optional<EventCategory> parse_event_category(std::string_view text);

// A set of event categories: a bit each.
class EventCategories {
public:
    constexpr EventCategories() = default;
    constexpr EventCategories(std::initializer_list<EventCategory> categories) {
        for (EventCategory c : categories) insert(c);
    }
    static constexpr EventCategories all() {
        EventCategories every;
        every.bits_ = (std::uint32_t{1} << (static_cast<int>(EventCategory::reset) + 1)) - 1;
        return every;
    }
    constexpr void insert(EventCategory c) { bits_ |= bit(c); }
    constexpr void insert(EventCategories other) { bits_ |= other.bits_; }
    constexpr bool contains(EventCategory c) const { return (bits_ & bit(c)) != 0; }
    constexpr bool contains(EventCategories other) const { return (bits_ & other.bits_) == other.bits_; }
    constexpr bool empty() const { return bits_ == 0; }
    constexpr bool operator==(const EventCategories&) const = default;

private:
    static constexpr std::uint32_t bit(EventCategory c) { return std::uint32_t{1} << static_cast<int>(c); }
    std::uint32_t bits_ = 0;
};
static_assert(static_cast<int>(EventCategory::reset) < 32, "EventCategories keeps a category per bit of 32");

// What a field's value means; it decides the JSON type and the text rendering.
enum class FieldKind : std::uint8_t {
    integer,         // std::int64_t
    flag,            // std::int64_t 0/1: a JSON bool
    text,            // std::string
    request,         // std::string: a request id
    status,          // std::string: an enum's name (RequestStatus, FaultKind...)
    blocks,          // IdList: "[1,2,3]"
    block_groups,    // GroupList: "()" empty; groups joined by the format's separator ("{k:+}")
    requests,        // NameList: "[r0,r1]"
    request_counts,  // CountList: "r0:4,r1:2" (no brackets)
};
std::string_view to_string(FieldKind kind);

using IdList = std::vector<std::int64_t>;
using GroupList = std::vector<IdList>;
using NameList = std::vector<std::string>;
using CountList = std::vector<std::pair<std::string, std::int64_t>>;
using FieldValue = std::variant<std::int64_t, std::string, IdList, GroupList, NameList, CountList>;

IdList to_id_list(const auto& ids) {
    IdList list;
    for (auto id : ids) list.push_back(static_cast<std::int64_t>(id));
    return list;
}
GroupList to_group_list(const auto& groups) {
    GroupList list;
    for (const auto& g : groups) list.push_back(to_id_list(g));
    return list;
}

struct Field {
    std::string_view key;  // a string literal
    FieldKind kind = FieldKind::text;
    FieldValue value;
};

// One log entry. `format` renders it: literal text with `{key}` (or `{key:SEP}` for block
// groups) placeholders naming fields; fields it does not name are data only (JSON, consumers).
struct LogEvent {
    int step = 0;
    EventCategory category = EventCategory::warn;
    std::string format;
    std::vector<Field> fields;

    const Field* field(std::string_view key) const;
    bool has(std::string_view key) const { return field(key) != nullptr; }
    // The value of a string-valued field (text, request, status); empty when absent.
    std::string_view text(std::string_view key) const;
    std::string_view request() const { return text("request"); }
    std::optional<std::int64_t> integer(std::string_view key) const;
    bool flag(std::string_view key) const { return integer(key).value_or(0) != 0; }
    // A field's value of type T (IdList, NameList, CountList...); nullptr when absent or of another type.
    template <class T>
    const T* value(std::string_view key) const {
        const Field* f = field(key);
        return f != nullptr ? std::get_if<T>(&f->value) : nullptr;
    }
};

// The text after step and category, and the whole log line ("<step> <category> <text>\n").
std::string render_text(const LogEvent& event);
std::string render_line(const LogEvent& event);

class EventLog;

// The fold of one event into a muted log's fingerprint (EventLog::mute): its category, format and
// field values in order. What a fingerprinting builder folds field by field, without building them.
struct EventFold {
    std::uint64_t hash = kFnvOffset;
    void integer(std::int64_t v) { hash = hash_combine(hash, static_cast<std::uint64_t>(v)); }
    void text(std::string_view v) { hash = hash_combine(hash, fnv1a(v)); }
    void ids(const auto& ids) {
        integer(static_cast<std::int64_t>(std::size(ids)));
        for (auto id : ids) integer(static_cast<std::int64_t>(id));
    }
    void names(const auto& names) {
        integer(static_cast<std::int64_t>(std::size(names)));
        for (const auto& name : names) text(name);
    }
    void groups(const auto& groups) {
        integer(static_cast<std::int64_t>(std::size(groups)));
        for (const auto& group : groups) ids(group);
    }
    void counts(const CountList& counts) {
        integer(static_cast<std::int64_t>(counts.size()));
        for (const auto& [name, count] : counts) {
            text(name);
            integer(count);
        }
    }
    void start(EventCategory category, std::string_view format) {
        integer(static_cast<std::int64_t>(category));
        text(format);
    }
    void value(const FieldValue& value);
};
std::uint64_t fold_event(const LogEvent& event);
// The fingerprint a muted, fingerprinting log (EventLog::mute) folds from `events` as a run appended them.
std::uint64_t events_fingerprint(const std::vector<LogEvent>& events);

// Builds one event and appends it to the log when it goes out of scope (end of the statement).
class EventBuilder {
public:
    EventBuilder(EventLog* log, EventCategory category, std::string_view format);
    EventBuilder(EventBuilder&& other) noexcept
        : log_(std::exchange(other.log_, nullptr)),
          mode_(other.mode_),
          fold_(other.fold_),
          event_(std::move(other.event_)) {}
    EventBuilder(const EventBuilder&) = delete;
    EventBuilder& operator=(const EventBuilder&) = delete;
    ~EventBuilder();

    // Each adds a field; on an event the muted log does not keep, none builds its value (a
    // fingerprinting log folds the value instead, as EventFold::value folds the field it would be).
    EventBuilder& request(std::string id) {
        if (mode_ == Mode::fold) fold_.text(id);
        return mode_ != Mode::build ? *this : add("request", FieldKind::request, std::move(id));
    }
    EventBuilder& integer(std::string_view key, std::int64_t v) {
        if (mode_ == Mode::fold) fold_.integer(v);
        return mode_ != Mode::build ? *this : add(key, FieldKind::integer, v);
    }
    EventBuilder& flag(std::string_view key, bool v) {
        return mode_ == Mode::build ? add(key, FieldKind::flag, std::int64_t{v}) : integer(key, v);
    }
    EventBuilder& text(std::string_view key, std::string v) {
        if (mode_ == Mode::fold) fold_.text(v);
        return mode_ != Mode::build ? *this : add(key, FieldKind::text, std::move(v));
    }
    EventBuilder& status(std::string_view key, std::string_view v) {
        if (mode_ == Mode::fold) fold_.text(v);
        return mode_ != Mode::build ? *this : add(key, FieldKind::status, std::string(v));
    }
    EventBuilder& blocks(std::string_view key, const auto& ids) {
        if (mode_ == Mode::fold) fold_.ids(ids);
        return mode_ != Mode::build ? *this : add(key, FieldKind::blocks, to_id_list(ids));
    }
    EventBuilder& block_groups(std::string_view key, const auto& groups) {
        if (mode_ == Mode::fold) fold_.groups(groups);
        return mode_ != Mode::build ? *this : add(key, FieldKind::block_groups, to_group_list(groups));
    }
    EventBuilder& requests(std::string_view key, const auto& ids) {
        if (mode_ == Mode::fold) fold_.names(ids);
        return mode_ != Mode::build ? *this : add(key, FieldKind::requests, NameList(ids.begin(), ids.end()));
    }
    EventBuilder& request_counts(std::string_view key, CountList counts) {
        if (mode_ == Mode::fold) fold_.counts(counts);
        return mode_ != Mode::build ? *this : add(key, FieldKind::request_counts, std::move(counts));
    }

    // The event, for callers that collect events instead of logging them (connector metadata).
    LogEvent take() { return std::move(event_); }

private:
    // build: the event is built and appended; fold: a fingerprinting muted log does not keep it, its
    // values are folded into the log's fingerprint; discard: a muted log does not keep it.
    enum class Mode : std::uint8_t { build, fold, discard };
    EventBuilder& add(std::string_view key, FieldKind kind, FieldValue value);
    EventLog* log_;
    Mode mode_ = Mode::build;
    EventFold fold_;
    LogEvent event_;
};

// An event not bound to a log: build it, then take() it.
inline EventBuilder make_event(EventCategory category, std::string_view format) {
    return EventBuilder(nullptr, category, format);
}

class EventLog {
public:
    // A muted log keeps only the events of `kept` (none by default: a run nobody reads the events
    // of, RunOptions::events off); the model never reads its own log, so muting changes nothing else.
    // With `fingerprint`, every event, kept or not, is also folded into fingerprint(): two runs with
    // the same events have the same fingerprint, and nothing is built for an event not kept.
    void mute(EventCategories kept = {}, bool fingerprint = false) {
        kept_ = kept;
        fingerprinting_ = fingerprint;
    }
    bool keeps(EventCategory category) const { return kept_.contains(category); }
    bool fingerprinting() const { return fingerprinting_; }
    // Whether an event of `category` is read, kept or folded: work that only builds events skips otherwise.
    bool wants(EventCategory category) const { return fingerprinting_ || keeps(category); }
    // The fold of every event since the log was muted with `fingerprint` (EventFold), step by step.
    std::uint64_t fingerprint() const { return fingerprint_; }
    void fold(std::uint64_t event) {
        fingerprint_ = hash_combine(hash_combine(fingerprint_, event), static_cast<std::uint64_t>(step_));
    }
    void set_step(int step) { step_ = step; }
    int step() const { return step_; }

    // log.event(EventCategory::alloc, "{request} +{blocks}").request(id).blocks("blocks", ids);
    EventBuilder event(EventCategory category, std::string_view format) {
        return EventBuilder(this, category, format);
    }
    // Appends a finished event at the current step.
    void append(LogEvent event);

    const std::vector<LogEvent>& events() const { return events_; }
    // The events, moved out; the log is empty afterwards (text and digest included).
    std::vector<LogEvent> take_events();
    // The text and its digest (FNV-1a over the text's bytes) are rendered when first read, from the
    // events appended since: a run nobody reads the text of never formats it.
    const std::string& text() const;
    std::uint64_t digest() const;
    std::uint64_t lines() const { return static_cast<std::uint64_t>(events_.size()); }

private:
    void render_pending() const;

    static constexpr std::uint64_t kDigestSeed = 0xcbf29ce484222325ULL;
    std::vector<LogEvent> events_;
    mutable std::string text_;
    mutable std::uint64_t digest_ = kDigestSeed;
    mutable std::size_t rendered_ = 0;  // events_[0, rendered_) are in text_ and digest_
    int step_ = 0;
    EventCategories kept_ = EventCategories::all();  // every category until muted
    bool fingerprinting_ = false;
    std::uint64_t fingerprint_ = kFnvOffset;
};

// "[1,2,3]" — the one way block lists appear in the log.
std::string format_blocks(const auto& ids) {
    std::string out = "[";
    bool first = true;
    for (auto id : ids) {
        if (!first) out += ',';
        out += fmt::format("{}", id);
        first = false;
    }
    out += ']';
    return out;
}

}  // namespace kvsim
