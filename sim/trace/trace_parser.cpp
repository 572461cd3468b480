// Trace text -> Trace. Lexing and line dispatch here; what each key means and accepts
// lives in the tables of trace_schema.cpp, the cross-line rules in validate_trace below.
#include "sim/trace/trace_parser.h"

#include "sim/trace/trace_budget.h"
#include "sim/trace/trace_builder.h"
#include "sim/trace/trace_printer.h"
#include "sim/trace/trace_schema.h"

#include <fmt/format.h>

#include <cerrno>
#include <filesystem>
#include <set>
#include <fstream>
#include <iostream>
#include <span>
#include <system_error>
#include <unordered_map>

namespace kvsim {
namespace {

std::string field_of(std::string_view prefix, const KeySpec& spec) { return fmt::format("{}.{}", prefix, spec.name); }

std::string join_names(const std::vector<std::string_view>& names, std::string_view sep) {
    std::string out;
    for (std::string_view n : names) {
        if (!out.empty()) out += sep;
        out += n;
    }
    return out;
}

std::string limit_message(std::size_t max, std::string_view what) {
    return fmt::format("more than {} {} lines", max, what);
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }

class Parser {
public:
    Parser(std::string_view text, std::string_view file) : text_(text), file_(file) {}

    Trace run() {
        if (text_.size() > kMaxTraceBytes)
            throw InputError(file_, 0, "file", fmt::format("{} bytes, more than the maximum {}", text_.size(),
                                                           kMaxTraceBytes));
        std::size_t pos = 0;
        while (pos < text_.size()) {
            std::size_t end = text_.find('\n', pos);
            if (end == std::string_view::npos) end = text_.size();
            ++line_;
            handle_line(text_.substr(pos, end - pos));
            pos = end + 1;
        }
        if (lines_.header == 0) {
            line_ = line_ > 0 ? line_ : 1;
            fail("header", fmt::format("expected '{} {}', found the end of the file", kTraceMagic,
                                       kTraceFormatVersion));
        }
        if (lines_.engine == 0) {
            line_ = lines_.header;
            fail("engine", "missing engine line (required once)");
        }
        trace_.lines = std::move(lines_);
        validate_trace(trace_, file_);  // within its budget before a single token is derived
        for (Segment& segment : trace_.segments) derive_segment_tokens(segment);
        return std::move(trace_);
    }

private:
    [[noreturn]] void fail(std::string_view field, std::string_view message) const {
        throw InputError(file_, line_, field, message);
    }

    void handle_line(std::string_view raw) {
        if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
        if (raw.size() > kMaxLineBytes)
            fail("line", fmt::format("{} bytes, more than the maximum {}", raw.size(), kMaxLineBytes));
        for (std::size_t i = 0; i < raw.size(); ++i) {
            const auto c = static_cast<unsigned char>(raw[i]);
            if ((c < 0x20 && c != '\t') || c == 0x7f)
                fail("line", fmt::format("control character \\x{:02x} at column {}", c, i + 1));
        }
        std::vector<std::string_view> tokens;
        std::size_t i = 0;
        while (i < raw.size()) {
            if (is_blank(raw[i])) {
                ++i;
                continue;
            }
            if (raw[i] == '#') break;  // at the start of the line or after whitespace: a comment
            const std::size_t start = i;
            while (i < raw.size() && !is_blank(raw[i])) ++i;
            tokens.push_back(raw.substr(start, i - start));
        }
        if (!tokens.empty()) handle_tokens(tokens);
    }

    void handle_tokens(std::span<const std::string_view> tokens) {
        const std::string_view keyword = tokens[0];
        const auto args = tokens.subspan(1);
        if (lines_.header == 0) return header(tokens);
        if (keyword == kTraceMagic) fail("header", fmt::format("second header line (first on line {})", lines_.header));
        if (keyword == engine_schema().keyword) {
            if (lines_.engine != 0)
                fail("engine", fmt::format("duplicate engine line (first on line {})", lines_.engine));
            lines_.engine = line_;
            trace_.engine = parse_line(engine_schema(), args);
        } else if (keyword == run_schema().keyword) {
            if (lines_.run != 0) fail("run", fmt::format("duplicate run line (first on line {})", lines_.run));
            lines_.run = line_;
            trace_.run = parse_line(run_schema(), args);
        } else if (keyword == multi_schema().keyword) {
            if (lines_.multi != 0) fail("multi", fmt::format("duplicate multi line (first on line {})", lines_.multi));
            lines_.multi = line_;
            trace_.multi = parse_line(multi_schema(), args);
        } else if (keyword == connector_schema().keyword) {
            add(trace_.connectors, lines_.connectors, kMaxConnectors, "connector", connector_schema(), args);
        } else if (keyword == workers_schema().keyword) {
            if (lines_.workers != 0)
                fail("workers", fmt::format("duplicate workers line (first on line {})", lines_.workers));
            lines_.workers = line_;
            trace_.workers = parse_line(workers_schema(), args);
        } else if (keyword == segment_schema().keyword) {
            add(trace_.segments, lines_.segments, static_cast<std::size_t>(limits::kMaxSegments), "segment",
                segment_schema(), args);
        } else if (keyword == store_schema().keyword) {
            add(trace_.store, lines_.store, kMaxStoreEntries, "store", store_schema(), args);
        } else if (keyword == expect_schema().keyword) {
            add(trace_.expectations, lines_.expectations, kMaxExpectations, "expect", expect_schema(), args);
        } else if (keyword.front() == '@') {
            event(tokens);
        } else {
            fail("keyword", fmt::format("unknown keyword {} (expected engine, run, multi, connector, workers, "
                                        "segment, store, expect or @STEP)",
                                        quote(keyword)));
        }
    }

    void header(std::span<const std::string_view> tokens) {
        if (tokens[0] != kTraceMagic)
            fail("header", fmt::format("expected '{} {}' as the first line, got {}", kTraceMagic, kTraceFormatVersion,
                                       quote(tokens[0])));
        if (tokens.size() < 2) fail("header", fmt::format("missing version after '{}'", kTraceMagic));
        static constexpr KeySpec kVersion{.name = "version", .type = ValueType::integer, .min = 0,
                                          .max = ~std::uint64_t{0}};
        std::string error;
        const auto version = parse_value(kVersion, tokens[1], &error);
        if (!version) fail("header", error);
        if (std::get<std::uint64_t>(*version) != static_cast<std::uint64_t>(kTraceFormatVersion))
            fail("header", fmt::format("unsupported version {} (this kvsim reads version {})",
                                       std::get<std::uint64_t>(*version), kTraceFormatVersion));
        if (tokens.size() > 2) fail("header", fmt::format("unexpected argument {}", quote(tokens[2])));
        lines_.header = line_;
    }

    template <class T>
    void add(std::vector<T>& into, std::vector<int>& lines, std::size_t max, std::string_view what,
             const LineSchema<T>& schema, std::span<const std::string_view> args) {
        if (into.size() >= max) fail(what, limit_message(max, what));
        into.push_back(parse_line(schema, args));
        lines.push_back(line_);
    }

    void event(std::span<const std::string_view> tokens) {
        const KeySpec& step_spec = event_step_spec();
        if (tokens[0].size() == 1) fail(field_of("event", step_spec), "missing step number after '@'");
        std::string error;
        const auto step = parse_value(step_spec, tokens[0].substr(1), &error);
        if (!step) fail(field_of("event", step_spec), error);
        if (tokens.size() < 2)
            fail("event", fmt::format("missing event kind after {} (kinds: {})", quote(tokens[0]),
                                      join_names(event_kinds(), ", ")));
        if (trace_.events.size() >= static_cast<std::size_t>(limits::kMaxEvents))
            fail("event", fmt::format("more than {} events", limits::kMaxEvents));
        Event e;
        e.step = static_cast<int>(std::get<std::uint64_t>(*step));
        e.line = line_;
        const std::string_view kind = tokens[1];
        const auto args = tokens.subspan(2);
        if (kind == kCheckKeyword) return check(e, args);
        if (kind == arrive_schema().keyword) e.body = parse_line(arrive_schema(), args);
        else if (kind == abort_schema().keyword) e.body = parse_line(abort_schema(), args);
        else if (kind == fault_schema().keyword) e.body = parse_line(fault_schema(), args);
        else if (kind == report_schema().keyword) e.body = parse_line(report_schema(), args);
        else if (kind == stop_schema().keyword) e.body = parse_line(stop_schema(), args);
        else if (kind == reset_prefix_cache_schema().keyword) e.body = parse_line(reset_prefix_cache_schema(), args);
        else
            fail("event", fmt::format("unknown event kind {} (kinds: {}, {})", quote(kind),
                                      join_names(event_kinds(), ", "), kCheckKeyword));
        trace_.events.push_back(std::move(e));
    }

    // "@STEP check ...": a step check, kept apart from the events (step_check.h).
    void check(const Event& at, std::span<const std::string_view> args) {
        if (trace_.checks.size() >= static_cast<std::size_t>(limits::kMaxEvents))
            fail("check", fmt::format("more than {} check lines", limits::kMaxEvents));
        CheckError error;
        auto body = parse_check(args, &error);
        if (!body) fail(error.field, error.message);
        trace_.checks.push_back(StepCheck{.step = at.step, .body = std::move(*body), .line = at.line});
    }

    template <class T>
    void assign(const LineSchema<T>& schema, const Row<T>& row, std::string_view text, T& out) {
        std::string error;
        auto value = parse_value(row.spec, text, &error);
        if (!value) fail(field_of(schema.field_prefix, row.spec), error);
        row.set(out, std::move(*value));
    }

    // Positional arguments in table order, then key=value arguments in any order.
    template <class T>
    T parse_line(const LineSchema<T>& schema, std::span<const std::string_view> args) {
        T out{};
        std::vector<char> given(schema.rows.size(), 0);
        std::size_t a = 0;
        for (std::size_t r = 0; r < schema.rows.size(); ++r) {
            const Row<T>& row = schema.rows[r];
            if (!row.spec.positional) continue;
            if (a >= args.size() || args[a].find('=') != std::string_view::npos)
                fail(field_of(schema.field_prefix, row.spec), "missing required argument");
            assign(schema, row, args[a++], out);
            given[r] = 1;
        }
        for (; a < args.size(); ++a) {
            const std::size_t eq = args[a].find('=');
            if (eq == std::string_view::npos)
                fail(schema.field_prefix, fmt::format("unexpected argument {}", quote(args[a])));
            const std::string_view key = args[a].substr(0, eq);
            std::size_t r = 0;
            while (r < schema.rows.size() && (schema.rows[r].spec.positional || schema.rows[r].spec.name != key)) ++r;
            if (r == schema.rows.size()) fail(schema.field_prefix, unknown_key(schema, key, out));
            const KeySpec& spec = schema.rows[r].spec;
            // The positional arguments (the kind among them) are parsed already.
            if (!row_applies(schema, schema.rows[r], out))
                fail(field_of(schema.field_prefix, spec), kinds_only_message(schema.keyword, spec));
            if (given[r]) fail(field_of(schema.field_prefix, spec), "duplicate key");
            given[r] = 1;
            assign(schema, schema.rows[r], args[a].substr(eq + 1), out);
        }
        check_presence(schema, given, out);
        return out;
    }

    // Lists the keys of the line's kind (the positional arguments are parsed already).
    template <class T>
    static std::string unknown_key(const LineSchema<T>& schema, std::string_view key, const T& object) {
        std::vector<std::string_view> keys;
        for (const Row<T>& row : schema.rows)
            if (!row.spec.positional && row_applies(schema, row, object)) keys.push_back(row.spec.name);
        return fmt::format("unknown key {} (keys: {})", quote(key), join_names(keys, ", "));
    }

    template <class T>
    void check_presence(const LineSchema<T>& schema, const std::vector<char>& given, const T& object) const {
        const std::string kind = line_kind(schema, object);
        for (std::size_t r = 0; r < schema.rows.size(); ++r) {
            const KeySpec& spec = schema.rows[r].spec;
            if (spec.required && !given[r] && key_applies(spec, kind))
                fail(field_of(schema.field_prefix, spec), "missing required key");
            if (spec.one_of.empty()) continue;
            std::vector<std::string_view> group;
            std::vector<std::size_t> group_given;
            for (std::size_t o = 0; o < schema.rows.size(); ++o) {
                if (schema.rows[o].spec.one_of != spec.one_of) continue;
                group.push_back(schema.rows[o].spec.name);
                if (given[o]) group_given.push_back(o);
            }
            if (group.front() != spec.name) continue;  // each group is checked once, at its first key
            if (group_given.empty())
                fail(field_of(schema.field_prefix, spec),
                     fmt::format("one of {} is required", join_names(group, ", ")));
            if (group_given.size() > 1)
                fail(field_of(schema.field_prefix, schema.rows[group_given[1]].spec),
                     fmt::format("only one of {} may be given", join_names(group, ", ")));
        }
    }

    std::string_view text_;
    std::string_view file_;
    int line_ = 0;
    Trace trace_;
    TraceLines lines_;
};

// ---- validation ---------------------------------------------------------------------------

class Validator {
public:
    Validator(const Trace& t, std::string_view file, const TraceLines* lines)
        : t_(t), file_(file), lines_(lines != nullptr ? lines : &t.lines) {}

    void run() {
        if (t_.version != kTraceFormatVersion)
            fail(lines_ ? lines_->header : 0, "header",
                 fmt::format("unsupported version {} (this kvsim reads version {})", t_.version, kTraceFormatVersion));
        counts();
        rows(engine_schema(), t_.engine, lines_ ? lines_->engine : 0);
        rows(run_schema(), t_.run, lines_ ? lines_->run : 0);
        rows(workers_schema(), t_.workers, lines_ ? lines_->workers : 0);
        connectors();
        multi();
        segments();
        store();
        expectations();
        events();
        checks();
        budget();
    }

private:
    [[noreturn]] void fail(int line, std::string_view field, std::string_view message) const {
        throw InputError(file_, line, field, message);
    }

    int line_at(std::vector<int> TraceLines::*member, std::size_t i) const {
        if (!lines_) return 0;
        const auto& v = lines_->*member;
        return i < v.size() ? v[i] : 0;
    }

    void counts() const {
        if (t_.connectors.size() > kMaxConnectors)
            fail(line_at(&TraceLines::connectors, kMaxConnectors), "connector",
                 limit_message(kMaxConnectors, "connector"));
        const auto max_segments = static_cast<std::size_t>(limits::kMaxSegments);
        if (t_.segments.size() > max_segments)
            fail(line_at(&TraceLines::segments, max_segments), "segment", limit_message(max_segments, "segment"));
        if (t_.store.size() > kMaxStoreEntries)
            fail(line_at(&TraceLines::store, kMaxStoreEntries), "store", limit_message(kMaxStoreEntries, "store"));
        if (t_.expectations.size() > kMaxExpectations)
            fail(line_at(&TraceLines::expectations, kMaxExpectations), "expect",
                 limit_message(kMaxExpectations, "expect"));
        const auto max_events = static_cast<std::size_t>(limits::kMaxEvents);
        if (t_.events.size() > max_events)
            fail(t_.events[max_events].line, "event", fmt::format("more than {} events", limits::kMaxEvents));
    }

    // Every row's value, as parse_line and the printer see it.
    template <class T>
    void rows(const LineSchema<T>& schema, const T& object, int line) const {
        const T defaults{};
        const std::string kind = line_kind(schema, object);
        for (const Row<T>& row : schema.rows) {
            const KeySpec& spec = row.spec;
            if (!key_applies(spec, kind)) {
                // The printer omits the key, so only its default survives a round trip.
                if (!same_value(row.get(object), row.get(defaults)))
                    fail(line, field_of(schema.field_prefix, spec), kinds_only_message(schema.keyword, spec));
                continue;
            }
            if (row.present && !row.present(object)) continue;
            const ValueView value = row.get(object);
            if (auto bad = check_value(spec, value)) fail(line, field_of(schema.field_prefix, spec), *bad);
            if (spec.not_below.empty()) continue;
            for (const Row<T>& other : schema.rows) {
                if (other.spec.name != spec.not_below) continue;
                const ValueView bound = other.get(object);
                if (as_signed(value) < as_signed(bound))
                    fail(line, field_of(schema.field_prefix, spec),
                         fmt::format("value {} below {} {}", format_value(spec, value), other.spec.name,
                                     format_value(other.spec, bound)));
            }
        }
    }

    static std::int64_t as_signed(const ValueView& v) {
        if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
        if (const auto* u = std::get_if<std::uint64_t>(&v)) return static_cast<std::int64_t>(*u);
        return 0;
    }

    const ConnectorSpec* connector_of(std::string_view kind) const {
        for (const ConnectorSpec& c : t_.connectors)
            if (c.kind == kind) return &c;
        return nullptr;
    }

    // At most one connector of each kind; stand_in alone (MultiConnector children are p2p, store, mock).
    void connectors() const {
        std::size_t lone = t_.connectors.size();  // a stand_in line: no MultiConnector child
        for (std::size_t i = 0; i < t_.connectors.size(); ++i) {
            const ConnectorSpec& c = t_.connectors[i];
            const int line = line_at(&TraceLines::connectors, i);
            rows(connector_schema(), c, line);
            for (std::size_t j = 0; j < i; ++j)
                if (t_.connectors[j].kind == c.kind)
                    fail(line, "connector.kind", fmt::format("second connector of kind {} (first on line {})", c.kind,
                                                             line_at(&TraceLines::connectors, j)));
            if (c.kind == kConnectorStandIn) lone = i;
            if (i > 0 && lone < t_.connectors.size())
                fail(line, "connector.kind",
                     fmt::format("{} cannot be combined with other connectors (lines {} and {}); "
                                 "MultiConnector children are p2p, store or mock",
                                 t_.connectors[lone].kind, line_at(&TraceLines::connectors, i == lone ? 0 : lone),
                                 line));
        }
    }

    // A MultiConnector has children, and only the kinds a MultiConnector takes.
    void multi() const {
        if (!t_.multi) return;
        const int line = lines_ ? lines_->multi : 0;
        rows(multi_schema(), *t_.multi, line);
        if (t_.connectors.empty()) fail(line, "multi", "a multi line needs at least one connector line");
        for (const ConnectorSpec& c : t_.connectors)
            if (c.kind == kConnectorStandIn)
                fail(line, "multi", "stand_in cannot be a MultiConnector child (children are p2p, store or mock)");
    }

    // A line the printer would write must parse again (formatted only when it may be too long).
    template <class Line>
    void printable(int line, std::string_view field, const Line& object) const {
        if (printed_size_bound(object) > kMaxLineBytes) printable_text(line, field, format_line(object));
    }

    // Expect and check lines are few and short-lived in a search: formatted every time.
    void printable_text(int line, std::string_view field, const std::string& text) const {
        if (text.size() > kMaxLineBytes)
            fail(line, field, fmt::format("printed line is {} bytes, more than the maximum {}", text.size(),
                                          kMaxLineBytes));
    }

    void segments() {
        for (std::size_t i = 0; i < t_.segments.size(); ++i) {
            const Segment& s = t_.segments[i];
            const int line = line_at(&TraceLines::segments, i);
            rows(segment_schema(), s, line);
            if (s.generated && s.pending_len == 0 &&
                s.tokens != generated_segment_tokens(s.name, static_cast<int>(s.tokens.size())))
                fail(line, "segment.len", fmt::format("tokens of generated segment '{}' are not the ones its name "
                                                      "derives (explicit tokens need generated=false)",
                                                      s.name));
            const auto [it, fresh] = segment_index_.emplace(s.name, i);
            if (!fresh)
                fail(line, "segment.name", fmt::format("duplicate segment '{}' (first on line {})", s.name,
                                                       line_at(&TraceLines::segments, it->second)));
            printable(line, "segment", s);
        }
    }

    void store() const {
        for (std::size_t i = 0; i < t_.store.size(); ++i) {
            const StoreEntry& entry = t_.store[i];
            const int line = line_at(&TraceLines::store, i);
            rows(store_schema(), entry, line);
            if (!connector_of(kConnectorStore)) fail(line, "store", "store lines need a connector of kind store");
            const std::int64_t length = tokens_of(entry.prefix, line, "store.prefix");
            if (length < 1 || length > t_.engine.max_model_len)
                fail(line, "store.prefix", fmt::format("prefix of {} tokens, outside 1..max_model_len = 1..{}", length,
                                                       t_.engine.max_model_len));
            printable(line, "store", entry);
        }
    }

    // An expected signature is what a run with the line's verdict reports: VERDICT:ID.
    void signature_form(int line, const Expectation& x) const {
        if (x.verdict == Verdict::pass) fail(line, "expect.signature", "a pass has no signature");
        const std::string_view s = x.signature;
        const std::string_view verdict = to_string(x.verdict);
        if (s.size() <= verdict.size() + 1 || !s.starts_with(verdict) || s[verdict.size()] != ':')
            fail(line, "expect.signature",
                 fmt::format("expected {}:ID (the line's verdict, then a finding id), got {}", verdict, quote(s)));
    }

    void expectations() const {
        std::unordered_map<std::string_view, std::size_t> seen;
        for (std::size_t i = 0; i < t_.expectations.size(); ++i) {
            const Expectation& x = t_.expectations[i];
            const int line = line_at(&TraceLines::expectations, i);
            rows(expect_schema(), x, line);
            if (!x.signature.empty()) signature_form(line, x);
            const auto [it, fresh] = seen.emplace(x.variant, i);
            if (!fresh)
                fail(line, "expect.variant", fmt::format("duplicate expect for variant '{}' (first on line {})",
                                                         x.variant, line_at(&TraceLines::expectations, it->second)));
            printable_text(line, "expect", format_line(x));
        }
    }

    // The step of an event or check line: in range, not before the previous line of its kind, below max_steps.
    template <typename Line>
    void step_rules(const Line& l, const Line* previous, std::string_view kind) const {
        const std::string field = fmt::format("{}.step", kind);
        if (auto bad = check_value(event_step_spec(), ValueView{std::int64_t{l.step}})) fail(l.line, field, *bad);
        if (previous && l.step < previous->step)
            fail(l.line, field, fmt::format("step {} is before step {} of the previous {} (line {})", l.step,
                                            previous->step, kind, previous->line));
        if (l.step >= t_.run.max_steps)
            fail(l.line, field, fmt::format("step {} is not below run.max_steps {}", l.step, t_.run.max_steps));
    }

    void events() {
        Arrivals arrived;
        const Event* previous = nullptr;
        for (const Event& e : t_.events) {
            step_rules(e, previous, "event");
            std::visit([&](const auto& body) { event_rules(body, e.line, arrived); }, e.body);
            printable(e.line, "event", e);
            previous = &e;
        }
    }

    // Check lines: steps as for events (non-decreasing among check lines), and every rule of validate_check.
    void checks() const {
        const StepCheck* previous = nullptr;
        for (const StepCheck& c : t_.checks) {
            step_rules(c, previous, "check");
            if (auto bad = validate_check(c.body)) fail(c.line, bad->field, bad->message);
            if (auto bad = check_block_ids(c.body, t_.engine.num_blocks)) fail(c.line, bad->field, bad->message);
            printable_text(c.line, "check", format_line(c));
            previous = &c;
        }
    }

    // Request ids seen on arrive lines so far, and those stopped or aborted since their last arrive.
    struct Arrivals {
        std::unordered_map<std::string_view, int> line;  // request id -> line of its last arrive
        std::set<std::string_view> ended;
    };

    void event_rules(const ArriveEvent& arrive, int line, Arrivals& arrived) const {
        rows(arrive_schema(), arrive, line);
        const auto [it, fresh] = arrived.line.emplace(arrive.request_id, line);
        if (!fresh && !arrived.ended.contains(arrive.request_id))
            fail(line, "event.id", fmt::format("duplicate request id '{}' (first arrives on line {})",
                                               arrive.request_id, it->second));
        it->second = line;
        arrived.ended.erase(arrive.request_id);
        prompt(arrive, line);
        transfer(arrive, line);
        if (arrive.external >= 0 && !has_connector(kConnectorMock))
            fail(line, "event.external", "external needs a connector of kind mock");
    }
    void event_rules(const AbortEvent& abort, int line, Arrivals& arrived) const {
        rows(abort_schema(), abort, line);
        named_request("abort of", abort.request_id, "event.id", line, arrived);
        arrived.ended.insert(abort.request_id);
    }
    void event_rules(const FaultEvent& fault, int line, const Arrivals& arrived) const {
        rows(fault_schema(), fault, line);
        fault_rules(fault, line);
        // request is empty exactly when the kind has no request key (rows() checked both)
        if (!fault.request_id.empty()) named_request("fault on", fault.request_id, "event.request", line, arrived);
    }
    void event_rules(const ReportEvent& report, int line, const Arrivals& arrived) const {
        rows(report_schema(), report, line);
        if (t_.connectors.empty()) fail(line, "event.kind", "report needs a connector");
        if (report.kind == ReportKind::store_done && !has_connector(kConnectorStore))
            fail(line, "event.kind", "report store_done needs a connector of kind store");
        if (report.rank >= t_.workers.ranks)
            fail(line, "event.rank", fmt::format("rank {} is not below workers.ranks {}", report.rank, t_.workers.ranks));
        named_request("report on", report.request_id, "event.id", line, arrived);
    }
    void event_rules(const StopEvent& stop, int line, Arrivals& arrived) const {
        rows(stop_schema(), stop, line);
        named_request("stop of", stop.request_id, "event.id", line, arrived);
        arrived.ended.insert(stop.request_id);
    }
    void event_rules(const ResetPrefixCacheEvent&, int, const Arrivals&) const {}

    void named_request(std::string_view what, const std::string& id, std::string_view field, int line,
                       const Arrivals& arrived) const {
        if (!arrived.line.contains(id))
            fail(line, field, fmt::format("{} request '{}', which does not arrive on an earlier line", what, id));
    }

    bool has_connector(std::string_view kind) const {
        for (const ConnectorSpec& c : t_.connectors)
            if (c.kind == kind) return true;
        return false;
    }

    // Total tokens of the named segments; each must be defined.
    std::int64_t tokens_of(const std::vector<std::string>& names, int line, std::string_view field) const {
        std::int64_t length = 0;
        for (const std::string& name : names) {
            const auto it = segment_index_.find(name);
            if (it == segment_index_.end()) fail(line, field, fmt::format("unknown segment '{}'", name));
            length += static_cast<std::int64_t>(t_.segments[it->second].length());
        }
        return length;
    }

    void prompt(const ArriveEvent& a, int line) const {
        const std::int64_t length = tokens_of(a.prompt, line, "event.prompt");
        if (length < 1 || length > t_.engine.max_model_len - 1)
            fail(line, "event.prompt", fmt::format("prompt of {} tokens, outside 1..max_model_len-1 = 1..{}", length,
                                                   t_.engine.max_model_len - 1));
    }

    // The sums of sim/trace/trace_budget.h, each failing on the line where it passes its limit (every
    // segment a prompt names is defined: events() checked).
    void budget() const {
        BudgetTally tally;
        const auto over = [&](BudgetMeasure measure, std::uint64_t amount, int line) {
            if (auto bad = tally.add(measure, amount)) fail(line, budget_row(measure).field, *bad);
        };
        for (std::size_t i = 0; i < t_.segments.size(); ++i)
            over(BudgetMeasure::segment_tokens, t_.segments[i].length(), line_at(&TraceLines::segments, i));
        for (const Event& e : t_.events) {
            const auto* arrive = std::get_if<ArriveEvent>(&e.body);
            if (arrive == nullptr) continue;
            const auto prompt = static_cast<std::uint64_t>(tokens_of(arrive->prompt, e.line, "event.prompt"));
            over(BudgetMeasure::prompt_tokens, prompt, e.line);
            over(BudgetMeasure::output_tokens, static_cast<std::uint64_t>(arrive->max_tokens), e.line);
        }
        // both are at least 1 (rows() checked)
        if (auto bad = block_steps_over(static_cast<std::uint64_t>(t_.engine.num_blocks),
                                        static_cast<std::uint64_t>(t_.run.max_steps)))
            fail(lines_ ? lines_->run : 0, budget_row(BudgetMeasure::block_steps).field, *bad);
    }

    // kv_transfer_params: the connector that serves them.
    void transfer(const ArriveEvent& a, int line) const {
        if (a.remote_prefill && a.remote_decode)
            fail(line, "event.remote_decode", "remote_prefill and remote_decode cannot both be on");
        if (a.remote_prefill && !accepts_remote_prefill(t_.connectors))
            fail(line, "event.remote_prefill", "remote_prefill=on needs a connector of kind p2p or stand_in");
        if (a.remote_decode && !accepts_remote_decode(t_.connectors))
            fail(line, "event.remote_decode", "remote_decode=on needs a p2p connector with role kv_producer or "
                                              "kv_both");
    }

    void fault_rules(const FaultEvent& f, int line) const {
        if (f.kind == FaultKind::load_fail && has_connector(kConnectorMock))
            fail(line, "event.kind", "fault load_fail does not apply to the mock connector; script it with "
                                     "report failed_recving or invalid_blocks");
        if (!connectors_take_fault(t_.connectors, f.kind))
            fail(line, "event.kind",
                 fault_needs_store(f.kind)
                     ? fmt::format("fault {} needs a connector of kind store", to_string(f.kind))
                     : fmt::format("fault {} needs a connector of kind p2p, store or stand_in", to_string(f.kind)));
        // rank is 0 where the kind has none (rows() checked), and workers.ranks is at least 1
        if (f.rank >= t_.workers.ranks)
            fail(line, "event.rank", fmt::format("rank {} is not below workers.ranks {}", f.rank, t_.workers.ranks));
    }

    const Trace& t_;
    std::string_view file_;
    const TraceLines* lines_;
    std::unordered_map<std::string_view, std::size_t> segment_index_;  // lookups only, never iterated
};

}  // namespace

void validate_trace(const Trace& trace, std::string_view filename, const TraceLines* lines) {
    Validator(trace, filename, lines).run();
}

Trace parse_trace(std::string_view text, std::string_view filename) { return Parser(text, filename).run(); }

std::string read_trace_file(const std::string& path) {
    std::error_code ec;
    if (path != "-" && std::filesystem::is_directory(path, ec))
        throw InputError(path, 0, "file", "is a directory, not a trace");
    std::ifstream file;
    if (path != "-") file.open(path, std::ios::binary);
    std::istream& in = path == "-" ? std::cin : file;
    if (!in) throw InputError(path, 0, "file", fmt::format("cannot open: {}", std::generic_category().message(errno)));
    std::string text;
    char buffer[1 << 16];
    while (text.size() <= kMaxTraceBytes) {
        in.read(buffer, sizeof buffer);
        const std::streamsize got = in.gcount();
        if (got <= 0) break;
        text.append(buffer, static_cast<std::size_t>(got));
    }
    if (in.bad()) throw InputError(path, 0, "file", "read error");
    return text;
}

Trace parse_trace_file(const std::string& path) { return parse_trace(read_trace_file(path), path); }

}  // namespace kvsim
