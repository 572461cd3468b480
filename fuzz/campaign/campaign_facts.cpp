// The tables of what `kvsim report` reads (campaign_facts.h) and their readers.
#include "fuzz/campaign/campaign_facts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "fuzz/campaign/triage.h"
#include "sim/common/enum_names.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_schema.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr std::string_view kBuildStates[] = {"ok", "failed"};
constexpr std::string_view kFlag[] = {"0", "1"};
constexpr std::string_view kCanaryStates[] = {"passed", "failed", "interrupted"};

// campaign.txt as scripts/nightly writes it, in the order it writes it.
constexpr FactSpec kFacts[] = {
    {FactLine::scalar, "run_id", FactType::text, FactPresence::always, {}, "the run's id: its directory under runs/"},
    {FactLine::scalar, "started", FactType::text, FactPresence::always, {}, "when the run started (UTC)"},
    {FactLine::scalar, "commit", FactType::text, FactPresence::always, {}, "the commit fuzzed, or unknown"},
    {FactLine::scalar, "minutes", FactType::decimal, FactPresence::always, {}, "the budget (--minutes)"},
    {FactLine::scalar, "jobs", FactType::count, FactPresence::always, {}, "processes per variant (--jobs)"},
    {FactLine::scalar, "sanitizer_share", FactType::percent, FactPresence::always, {},
     "the share of the jobs' time in the sanitizer build (--sanitizer-share)"},
    {FactLine::scalar, "build", FactType::choice, FactPresence::always, kBuildStates, "whether the builds succeeded"},
    {FactLine::scalar, "broken", FactType::text_or_empty, FactPresence::when_built, {},
     "the variants expected broken, comma-separated (--broken)"},
    {FactLine::scalar, "interrupted", FactType::choice, FactPresence::always, kFlag,
     "1 when INT or TERM stopped the fuzzing"},
    {FactLine::scalar, "wall_seconds", FactType::decimal, FactPresence::when_built, {}, "the run's wall time"},
    {FactLine::canary, "variant", FactType::text, FactPresence::always, {}, "the variant fuzzed"},
    {FactLine::canary, "signature", FactType::text, FactPresence::always, {}, "the finding it must find"},
    {FactLine::canary, "status", FactType::choice, FactPresence::always, kCanaryStates, "whether it found it"},
    {FactLine::canary, "seconds", FactType::decimal, FactPresence::always, {}, "its wall time"},
    {FactLine::canary, "runs", FactType::count, FactPresence::always, {}, "fuzz target processes started"},
    {FactLine::canary, "artifact", FactType::text_or_empty, FactPresence::always, {},
     "the crash artifact that found it; empty when none did"},
    {FactLine::variant, "name", FactType::text, FactPresence::always, {}, "the variant"},
    {FactLine::variant, "budget", FactType::count, FactPresence::always, {}, "its share of the budget, seconds"},
    {FactLine::variant, "seconds", FactType::decimal, FactPresence::always, {}, "the throughput build's jobs' wall time"},
    {FactLine::variant, "sanitizer_seconds", FactType::decimal, FactPresence::always, {},
     "the sanitizer build's jobs' wall time"},
    {FactLine::variant, "jobs", FactType::count, FactPresence::always, {}, "its processes"},
    {FactLine::variant, "single_seconds", FactType::decimal, FactPresence::always, {},
     "the single process's wall time"},
    {FactLine::variant, "corpus", FactType::text, FactPresence::always, {}, "its corpus directory"},
    {FactLine::variant, "seeds", FactType::text, FactPresence::always, {}, "its seeds directory"},
    {FactLine::variant, "corpus_before", FactType::count, FactPresence::always, {}, "corpus units before the run"},
    {FactLine::variant, "corpus_after", FactType::count, FactPresence::always, {}, "corpus units after it"},
    {FactLine::variant, "seed_count", FactType::count, FactPresence::always, {}, "seeds that pass under it"},
    {FactLine::variant, "seeds_left_out", FactType::count, FactPresence::always, {}, "seeds that fail under it"},
    {FactLine::variant, "crash_artifacts", FactType::count, FactPresence::always, {}, "crash artifacts written"},
};

const std::string_view kTriageStates[] = {to_string(TriageStatus::new_finding), to_string(TriageStatus::known),
                                          to_string(TriageStatus::unreproduced)};
constexpr std::string_view kFindingFiles[] = {"trace", "page", "explain"};
constexpr std::string_view kSchedulingModes[] = {"off", "on"};

// triage_summary_line() (triage.cpp), in its order.
const JsonFieldSpec kTriageLine[] = {
    {"artifact", JsonFieldType::string, false, {}, "the artifact triaged"},
    {"variant", JsonFieldType::string, false, {}, "the variant it ran under"},
    {"first", JsonFieldType::boolean, true, {}, "this artifact wrote the finding directory"},
    {"status", JsonFieldType::choice, true, kTriageStates, "the classification"},
    {"verdict", JsonFieldType::string, true, {}, "the run's verdict"},
    {"signature", JsonFieldType::string, true, {}, "the run's signature"},
    {"causes", JsonFieldType::string_list, true, {}, "the registry's causes"},
    {"residue", JsonFieldType::string, true, {}, "the failure no cause explains"},
    {"cause", JsonFieldType::string, true, {}, "the finding directory's name"},
    {"dir", JsonFieldType::string, true, {}, "the finding directory"},
    {"minimised", JsonFieldType::boolean, false, {}, "the trace was minimised"},
    {"events_before", JsonFieldType::count, false, {}, "events before minimising"},
    {"events_after", JsonFieldType::count, false, {}, "events after"},
    {"files", JsonFieldType::file_names, true, kFindingFiles, "the finding's files in dir, a name or null each"},
    {"repro", JsonFieldType::string, true, {}, "the command that replays it"},
    {"message", JsonFieldType::string, true, {}, "the run's message"},
};

constexpr JsonFieldSpec kFuzzStats[] = {
    {"executions", JsonFieldType::count, true, {}, "inputs executed"},
    {"repeats", JsonFieldType::count, true, {}, "of those, inputs already run and not run again"},
    {"known", JsonFieldType::count_map, true, {}, "runs classified as known, by registry id"},
    {"async_scheduling", JsonFieldType::count_map, true, kSchedulingModes, "inputs run under each scheduling mode"},
};

constexpr double kMaxNumber = 1e15;  // beyond any count or time of a campaign; doubles are exact below it

// The keyword that starts a canary or variant line, and prefixes its keys' field names.
constexpr EnumNames<FactLine, 3> kFactLineNames = {
    {{FactLine::scalar, "scalar"}, {FactLine::canary, "canary"}, {FactLine::variant, "variant"}}};

std::string field_name(FactLine line, std::string_view key) {
    return line == FactLine::scalar ? std::string(key) : fmt::format("{}.{}", enum_name(kFactLineNames, line), key);
}

const FactSpec* find_fact(FactLine line, std::string_view key) {
    for (const FactSpec& spec : kFacts)
        if (spec.line == line && spec.key == key) return &spec;
    return nullptr;
}

std::string choice_list(std::span<const std::string_view> choices) {
    std::string out;
    for (const std::string_view c : choices) out += fmt::format("{}{}", out.empty() ? "" : "|", c);
    return out;
}

bool among(std::span<const std::string_view> choices, std::string_view key) {
    return std::find(choices.begin(), choices.end(), key) != choices.end();
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_decimal(std::string_view s) {
    const auto dot = s.find('.');
    return dot == std::string_view::npos ? all_digits(s) : all_digits(s.substr(0, dot)) && all_digits(s.substr(dot + 1));
}

// Why `value` is not of its row's type; nullopt when it is.
std::optional<std::string> fact_error(const FactSpec& spec, std::string_view value) {
    const auto numeric = [&](bool ok, std::string_view what) -> std::optional<std::string> {
        if (!ok) return fmt::format("expected {}, got {}", what, quote(value));
        if (std::strtod(std::string(value).c_str(), nullptr) > kMaxNumber)
            return fmt::format("value {} above the maximum {:.0f}", quote(value), kMaxNumber);
        return std::nullopt;
    };
    switch (spec.type) {
        case FactType::count: return numeric(all_digits(value), "a non-negative integer");
        case FactType::decimal: return numeric(is_decimal(value), "a non-negative number");
        case FactType::percent:
            if (all_digits(value) && value.size() <= 3 && std::stoi(std::string(value)) <= 100) return std::nullopt;
            return fmt::format("expected a percentage, an integer 0..100, got {}", quote(value));
        case FactType::choice:
            if (among(spec.choices, value)) return std::nullopt;
            return fmt::format("expected one of {}, got {}", choice_list(spec.choices), quote(value));
        case FactType::text:
            if (value.empty()) return "empty value";
            return std::nullopt;
        case FactType::text_or_empty: return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace

std::span<const FactSpec> campaign_fact_specs() { return kFacts; }
std::span<const JsonFieldSpec> triage_line_specs() { return kTriageLine; }
std::span<const JsonFieldSpec> fuzz_stats_specs() { return kFuzzStats; }

bool FactSet::has(std::string_view key) const { return values.find(key) != values.end(); }

const std::string& FactSet::text(std::string_view key) const {
    const auto it = values.find(key);
    if (it == values.end())
        throw std::logic_error(fmt::format("campaign fact {} read but not given", field_name(line, key)));
    return it->second;
}

double FactSet::number(std::string_view key) const { return std::stod(text(key)); }

Json FactSet::json(std::string_view key) const {
    const FactSpec* spec = find_fact(line, key);
    if (spec == nullptr) throw std::logic_error(fmt::format("campaign fact {} not in the table", field_name(line, key)));
    if (!has(key) && spec->presence == FactPresence::when_built) return nullptr;
    switch (spec->type) {
        case FactType::count:
        case FactType::decimal:
        case FactType::percent: return number(key);
        case FactType::text_or_empty: return text(key).empty() ? Json(nullptr) : Json(text(key));
        case FactType::choice:
        case FactType::text: return text(key);
    }
    return nullptr;
}

}  // namespace kvsim

// ---- campaign.txt -----------------------------------------------------------------------------

namespace kvsim {
namespace {

class FactsReader {
public:
    explicit FactsReader(std::string file) : file_(std::move(file)) { facts_.scalar.line = FactLine::scalar; }

    void read_line(const std::string& text, int number) {
        std::istringstream words(text);
        std::string head;
        if (!(words >> head) || head.front() == '#') return;
        const std::optional<FactLine> kind = parse_enum(kFactLineNames, head);  // `scalar` is no line keyword
        if (kind == FactLine::canary) {
            first_line(canary_at_, "canary", number);
            facts_.canary = key_values(FactLine::canary, words, number);
        } else if (kind == FactLine::variant) {
            facts_.variants.push_back(key_values(FactLine::variant, words, number));
            if (const auto [at, fresh] = variant_at_.emplace(facts_.variants.back().text("name"), number); !fresh)
                throw InputError(file_, number, "variant.name",
                                 fmt::format("{} fuzzed twice (first on line {})", quote(at->first), at->second));
        } else {
            std::string value;
            std::getline(words >> std::ws, value);
            value.erase(value.find_last_not_of(" \t") + 1);
            scalar(head, value, number);
        }
    }

    CampaignFacts finish() && {
        for (const FactPresence presence : {FactPresence::always, FactPresence::when_built})
            for (const FactSpec& spec : kFacts)
                if (spec.line == FactLine::scalar && spec.presence == presence && !facts_.scalar.has(spec.key) &&
                    (presence == FactPresence::always || facts_.built()))
                    throw InputError(file_, 0, spec.key,
                                     presence == FactPresence::always
                                         ? "missing required key"
                                         : "missing required key (every campaign whose build is ok has it)");
        return std::move(facts_);
    }

private:
    // A line that may come once: `at` is where it came first.
    void first_line(int& at, std::string_view field, int number) const {
        if (at != 0) throw InputError(file_, number, field, fmt::format("duplicate line (first on line {})", at));
        at = number;
    }

    void check(FactLine line, std::string_view key, std::string_view value, int number) const {
        const FactSpec* spec = find_fact(line, key);
        if (spec == nullptr) throw InputError(file_, number, field_name(line, key), "unknown key");
        if (const auto error = fact_error(*spec, value)) throw InputError(file_, number, field_name(line, key), *error);
    }

    void scalar(const std::string& key, const std::string& value, int number) {
        check(FactLine::scalar, key, value, number);
        first_line(scalar_at_[key], key, number);
        facts_.scalar.values[key] = value;
    }

    FactSet key_values(FactLine line, std::istringstream& words, int number) const {
        FactSet set{line, {}};
        for (std::string w; words >> w;) {
            const auto eq = w.find('=');
            if (eq == std::string::npos || eq == 0)
                throw InputError(file_, number, "campaign", fmt::format("expected KEY=VALUE, got {}", quote(w)));
            const std::string key = w.substr(0, eq), value = w.substr(eq + 1);
            check(line, key, value, number);
            if (!set.values.emplace(key, value).second)
                throw InputError(file_, number, field_name(line, key), "duplicate key");
        }
        for (const FactSpec& spec : kFacts)
            if (spec.line == line && !set.has(spec.key))
                throw InputError(file_, number, field_name(line, spec.key), "missing required key");
        return set;
    }

    std::string file_;
    CampaignFacts facts_;
    std::map<std::string, int> scalar_at_;   // key -> its line
    std::map<std::string, int> variant_at_;  // variant name -> its line
    int canary_at_ = 0;
};

}  // namespace

CampaignFacts read_campaign_facts(const fs::path& path) {
    std::ifstream in(path);
    if (!in) throw InputError(path.string(), 0, "campaign", "cannot read the file");
    FactsReader reader(path.string());
    int number = 0;
    for (std::string text; std::getline(in, text);) {
        if (!text.empty() && text.back() == '\r') text.pop_back();  // one trailing CR is tolerated
        reader.read_line(text, ++number);
    }
    return std::move(reader).finish();
}

}  // namespace kvsim

// ---- triage summary lines and stats files -------------------------------------------------------

namespace kvsim {
namespace {

struct Where {
    std::string file;
    int line = 0;
};

[[noreturn]] void refuse(const Where& at, std::string_view field, std::string_view message) {
    throw InputError(at.file, at.line, field, message);
}

std::string got(const Json& value) { return quote(value.dump()); }

// An object (`what`) of members (`member`): each key among the row's choices (any, when it has none),
// each value passing `ok`.
template <class Ok>
void check_members(const JsonFieldSpec& spec, const Json& value, const Where& at, std::string_view what,
                   std::string_view member, Ok ok) {
    if (!value.is_object()) refuse(at, spec.key, fmt::format("expected {}, got {}", what, got(value)));
    for (const auto& [key, m] : value.items()) {
        const std::string field = fmt::format("{}.{}", spec.key, key);
        if (!spec.choices.empty() && !among(spec.choices, key)) refuse(at, field, "unknown key");
        if (!ok(m)) refuse(at, field, fmt::format("expected {}, got {}", member, got(m)));
    }
}

void check_field(const JsonFieldSpec& spec, const Json& value, const Where& at) {
    const auto expect = [&](bool ok, std::string_view what) {
        if (!ok) refuse(at, spec.key, fmt::format("expected {}, got {}", what, got(value)));
    };
    switch (spec.type) {
        case JsonFieldType::string: return expect(value.is_string(), "a string");
        case JsonFieldType::choice:
            if (!value.is_string() || !among(spec.choices, value.get<std::string>()))
                refuse(at, spec.key, fmt::format("expected one of {}, got {}", choice_list(spec.choices),
                                                 value.is_string() ? quote(value.get<std::string>()) : got(value)));
            return;
        case JsonFieldType::boolean: return expect(value.is_boolean(), "true or false");
        case JsonFieldType::count: return expect(value.is_number_unsigned(), "a non-negative integer");
        case JsonFieldType::string_list:
            return expect(value.is_array() && std::all_of(value.begin(), value.end(),
                                                          [](const Json& e) { return e.is_string(); }),
                          "an array of strings");
        case JsonFieldType::file_names:
            check_members(spec, value, at, "an object of file names", "a file name or null",
                          [](const Json& m) { return m.is_string() || m.is_null(); });
            for (const std::string_view which : spec.choices)
                if (!value.contains(which)) refuse(at, fmt::format("{}.{}", spec.key, which), "missing required key");
            return;
        case JsonFieldType::count_map:
            return check_members(spec, value, at, "an object of non-negative integers", "a non-negative integer",
                                 [](const Json& m) { return m.is_number_unsigned(); });
    }
}

// `text` as a JSON object whose keys pass `specs` (an unknown key refused when `closed`).
Json checked_object(const std::string& text, std::span<const JsonFieldSpec> specs, bool closed, const Where& at) {
    Json j;
    try {
        j = Json::parse(text);
    } catch (const Json::parse_error& e) {
        refuse(at, "json", fmt::format("not JSON (syntax error at byte {})", e.byte));
    }
    if (!j.is_object()) refuse(at, "json", fmt::format("expected a JSON object, got {}", got(j)));
    for (const auto& item : j.items()) {
        const std::string& key = item.key();  // a name, not a binding: clang 14 cannot capture bindings
        const auto spec = std::find_if(specs.begin(), specs.end(), [&](const JsonFieldSpec& s) { return s.key == key; });
        if (spec != specs.end()) check_field(*spec, item.value(), at);
        else if (closed) refuse(at, key, "unknown key");
    }
    for (const JsonFieldSpec& spec : specs)
        if (spec.required && !j.contains(spec.key)) refuse(at, spec.key, "missing required key");
    return j;
}

}  // namespace

std::vector<Json> read_triage_summary(const fs::path& path) {
    std::vector<Json> out;
    if (!fs::exists(path)) return out;
    std::ifstream in(path);
    if (!in) throw InputError(path.string(), 0, "triage", "cannot read the file");
    int number = 0;
    for (std::string line; std::getline(in, line);)
        out.push_back(checked_object(line, kTriageLine, true, Where{path.string(), ++number}));
    return out;
}

Json read_fuzz_stats(const fs::path& path) {
    std::ifstream in(path);
    if (!in) throw InputError(path.string(), 0, "stats", "cannot read the file");
    std::stringstream text;
    text << in.rdbuf();
    return checked_object(text.str(), kFuzzStats, false, Where{path.string(), 0});
}

}  // namespace kvsim

// ---- help ---------------------------------------------------------------------------------------

namespace kvsim {
namespace {

std::string type_label(const FactSpec& spec) {
    switch (spec.type) {
        case FactType::count: return "integer >= 0";
        case FactType::decimal: return "number >= 0";
        case FactType::percent: return "integer 0..100";
        case FactType::choice: return choice_list(spec.choices);
        case FactType::text: return "text";
        case FactType::text_or_empty: return "text, may be empty";
    }
    return "text";
}

std::string type_label(const JsonFieldSpec& spec) {
    switch (spec.type) {
        case JsonFieldType::string: return "string";
        case JsonFieldType::choice: return choice_list(spec.choices);
        case JsonFieldType::boolean: return "true|false";
        case JsonFieldType::count: return "integer >= 0";
        case JsonFieldType::string_list: return "[string...]";
        case JsonFieldType::file_names: return "{" + choice_list(spec.choices) + "}";
        case JsonFieldType::count_map:
            return spec.choices.empty() ? "{KEY: integer >= 0}" : "{" + choice_list(spec.choices) + ": integer >= 0}";
    }
    return "string";
}

void describe_facts(FactLine line, std::string& out) {
    for (const FactSpec& spec : kFacts)
        if (spec.line == line)
            out += fmt::format("  {:<18} {:<26} {}{}\n", spec.key, type_label(spec), spec.help,
                               spec.presence == FactPresence::when_built ? " (only once the build is ok)" : "");
}

void describe_fields(std::span<const JsonFieldSpec> specs, std::string& out) {
    for (const JsonFieldSpec& spec : specs)
        out += fmt::format("  {:<18} {:<26} {}{}\n", spec.key, type_label(spec), spec.help,
                           spec.required ? "" : " (optional)");
}

}  // namespace

std::string campaign_facts_help() {
    std::string out =
        "What the report reads, each key required unless marked; a malformed input is one line\n"
        "FILE:LINE: KEY: what is wrong (LINE 0: the whole file), exit 65.\n\n"
        "campaign.txt, one fact a line (scripts/nightly writes it): `KEY VALUE` lines, each key once:\n";
    describe_facts(FactLine::scalar, out);
    out += "at most one `canary k=v...` line (none with --no-canary), every key on it once:\n";
    describe_facts(FactLine::canary, out);
    out += "a `variant k=v...` line per variant fuzzed, every key on it once:\n";
    describe_facts(FactLine::variant, out);
    out += "\ntriage-<V>.jsonl, one JSON object a line (kvsim triage --summary); no other key:\n";
    describe_fields(kTriageLine, out);
    out += "\nstats/<V>/{jobs,single,sanitizer}.*.json, a JSON object (the fuzz target's counts; other keys not read):\n";
    describe_fields(kFuzzStats, out);
    return out;
}

}  // namespace kvsim
