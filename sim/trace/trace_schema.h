#pragma once
// The trace format's key tables (one per line kind), in the style of libFuzzer's
// FuzzerFlags.def: every key of every line is declared once, in trace_schema.cpp, with
// its type, range, default and help. The parser, the printer (key order) and
// format_help() (`kvsim format`) all read these tables; no key exists anywhere else.
#include "sim/trace/trace.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kvsim {

inline constexpr std::string_view kTraceMagic = "kvsim-trace";
inline constexpr std::size_t kMaxLineBytes = 4096;            // longer lines are an input error
inline constexpr std::size_t kMaxTraceBytes = 64u << 20;      // whole file
inline constexpr std::size_t kMaxConnectors = 16;             // connector lines per trace
inline constexpr std::size_t kMaxExpectations = 256;          // expect lines per trace
inline constexpr std::size_t kMaxStoreEntries = 4096;         // store lines per trace
inline constexpr int kMaxRanks = 64;                          // workers.ranks

// Connector kinds (ConnectorSpec::kind).
inline constexpr std::string_view kConnectorStandIn = "stand_in";
inline constexpr std::string_view kConnectorP2p = "p2p";      // MooncakeConnector
inline constexpr std::string_view kConnectorStore = "store";  // MooncakeStoreConnector
inline constexpr std::string_view kConnectorMock = "mock";    // upstream's test MockKVConnector
inline constexpr std::size_t kMaxSignatureLen = 256;
inline constexpr std::size_t kMaxVariantNameLen = 128;

enum class ValueType {
    integer,     // plain decimal digits, range [min, max]
    boolean,     // on | off
    choice,      // one of `choices`
    identifier,  // [A-Za-z0-9_.-]{1,max}
    variant,     // a name resolve_variant() accepts, at most `max` characters
    text,        // printable ASCII without spaces, 1..max characters
    token_list,  // a,b,c: 1..max_items integers in [min, max]
    name_list,   // a+b+c: 1..max_items identifiers of at most `max` characters
};

// What a key is to upstream (sim/trace/upstream_settings.h): a setting its users choose, the sizing of a
// deployment (the model and the GPU decide it), the environment kvsim draws (ranks' timing), or none (the
// trace's own bookkeeping: run, segments, events, expect lines).
enum class SettingGroup { none, setting, sizing, environment, test_double };

struct KeySpec {
    std::string_view name = {};
    ValueType type = ValueType::integer;
    std::uint64_t min = 0;
    std::uint64_t max = 0;  // integers and list elements: value; identifier/text/variant: length
    std::size_t max_items = 0;  // lists only
    bool required = false;
    bool positional = false;    // given bare, in table order, before the key=value arguments
    std::string_view one_of = {};  // keys sharing a group name: exactly one of them must be given
    std::string_view help = {};
    std::span<const std::string_view> choices = {};
    // Lines with a kind (LineSchema::kind_key): the kinds this key applies to; empty = every
    // kind. Elsewhere the key is an input error, `required` holds only where it applies, the
    // printer omits it, and an in-memory value must keep its default.
    std::span<const std::string_view> kinds = {};
    // An integer key whose value must be >= the key named here, in the same line (min/max pairs).
    std::string_view not_below = {};
    // No default of its own: unstated, the variant's flag decides (`kvsim format` says "optional").
    bool optional = false;
    SettingGroup group = SettingGroup::none;
    // Upstream's default, as this key's value text ("on", "16"); empty when upstream has none (sizing a
    // deployment decides it) or, for an optional key, when the variant's default is upstream's.
    std::string_view upstream = {};
    std::string_view upstream_source = {};  // where upstream sets that default: `path @ full commit`, or a PR
    // Keys whose upstream default is the release's (a variant flag): that default's text.
    std::string_view (*upstream_for)(const Variant&) = nullptr;
};

// A parsed value. Integers from text are uint64; int fields read back from memory are
// int64 (they may be negative in a hand-built Trace, and validation must say so).
using Value = std::variant<std::uint64_t, std::int64_t, bool, std::string, std::vector<std::int32_t>,
                           std::vector<std::string>>;
// A field's value read in place (Row::get): Value's alternatives, with views for the text and the
// lists, so that printing or validating a trace copies none of them. It lasts as long as the object.
using ValueView = std::variant<std::uint64_t, std::int64_t, bool, std::string_view, std::span<const std::int32_t>,
                               std::span<const std::string>>;
// The same alternative holding the same value (elementwise for lists).
bool same_value(const ValueView& a, const ValueView& b);

// One table row: the key and how it reaches the field of T.
template <class T>
struct Row {
    KeySpec spec;
    ValueView (*get)(const T&);
    void (*set)(T&, Value&&);                 // value already checked against spec
    bool (*present)(const T&) = nullptr;      // printer omits the key when false; nullptr = always
};

template <class T>
struct LineSchema {
    std::string_view keyword;       // first token ("engine"); for events the kind after @STEP
    std::string_view field_prefix;  // error field prefix: "engine" -> "engine.block_size"
    std::string_view help;          // one line
    std::span<const Row<T>> rows;
    std::string_view kind_key = {};  // the positional choice row that selects the line's kind; empty = none
};

const LineSchema<EngineConfig>& engine_schema();
const LineSchema<RunConfig>& run_schema();
const LineSchema<ConnectorSpec>& connector_schema();
const LineSchema<MultiConnectorSpec>& multi_schema();
const LineSchema<Segment>& segment_schema();
const LineSchema<Expectation>& expect_schema();
const LineSchema<ArriveEvent>& arrive_schema();
const LineSchema<AbortEvent>& abort_schema();
const LineSchema<FaultEvent>& fault_schema();
const LineSchema<ReportEvent>& report_schema();
const LineSchema<StopEvent>& stop_schema();
const LineSchema<ResetPrefixCacheEvent>& reset_prefix_cache_schema();
const LineSchema<WorkerConfig>& workers_schema();
const LineSchema<StoreEntry>& store_schema();

// The STEP of "@STEP KIND ...".
const KeySpec& event_step_spec();

// Event kinds after "@STEP", in table order (arrive, abort, fault, report, stop, reset_prefix_cache).
std::vector<std::string_view> event_kinds();

// Text -> value, with every check of the spec applied. nullopt + *error (one line, no field).
std::optional<Value> parse_value(const KeySpec& spec, std::string_view text, std::string* error);
// Range / charset / resolvability of a value; nullopt when fine.
std::optional<std::string> check_value(const KeySpec& spec, const ValueView& value);
// Canonical text of a value, as the printer writes it.
std::string format_value(const KeySpec& spec, const ValueView& value);
void append_value(std::string& out, const KeySpec& spec, const ValueView& value);  // format_value's text, appended

// A quoted, escaped, truncated copy of untrusted text for an error message: 'ab\x00c...'.
std::string quote(std::string_view text);

// The kind of `object` as its line writes it ("store", "load_fail"); empty when the line has no kind.
template <class T>
std::string line_kind(const LineSchema<T>& schema, const T& object) {
    if (schema.kind_key.empty()) return {};
    for (const Row<T>& row : schema.rows)
        if (row.spec.name == schema.kind_key) return format_value(row.spec, row.get(object));
    return {};
}

// Whether a key belongs to a line of kind `kind` (line_kind): a loop over a line's rows finds the kind
// once and asks this, not row_applies, once per row.
bool key_applies(const KeySpec& spec, std::string_view kind);

// Whether `row` belongs to the line of `object`'s kind (always, for lines without kinds).
template <class T>
bool row_applies(const LineSchema<T>& schema, const Row<T>& row, const T& object) {
    return row.spec.kinds.empty() || key_applies(row.spec, line_kind(schema, object));
}

// "applies to connector kind store only": a key given on a line of another kind.
std::string kinds_only_message(std::string_view keyword, const KeySpec& spec);

// The format reference printed by `kvsim format`.
std::string format_help();

}  // namespace kvsim
