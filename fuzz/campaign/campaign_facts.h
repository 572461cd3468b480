#pragma once
// What `kvsim report` (fuzz/campaign/report.h) reads from a run directory, as tables, in the style of
// sim/trace/trace_schema.h: each key of campaign.txt, of a triage-<V>.jsonl line and of a stats file is
// declared once, in campaign_facts.cpp, with its line kind, type and whether it is required. The
// readers below and campaign_facts_help() (`kvsim report --help`) read the tables; no key exists
// anywhere else. Every malformed input is an InputError naming the file, the line (0: the whole file)
// and the key, and nothing is given a default: a key the table calls optional reads as null.
//
// campaign.txt (scripts/nightly writes it): one fact a line; blank lines and '#' lines are skipped.
//   scalar lines   `KEY VALUE` (the rest of the line is the value), each key at most once
//   canary line    `canary k=v...`, at most once (none with scripts/nightly --no-canary)
//   variant lines  `variant k=v...`, one per variant fuzzed (none when the build failed)
// Every key of a canary or variant line must be on it, each at most once.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvsim {

enum class FactLine { scalar, canary, variant };

enum class FactType {
    count,          // a non-negative integer: decimal digits
    decimal,        // a non-negative decimal number: digits, optionally '.' and digits (seconds, minutes)
    percent,        // an integer 0..100
    choice,         // one of `choices`
    text,           // free text (a name, a time, a path), not empty
    text_or_empty,  // free text that may be empty (a list of none, a path of nothing found)
};

enum class FactPresence {
    always,      // on every campaign.txt (a canary or variant key: on every line of its kind)
    when_built,  // on every campaign.txt whose build is ok: after a failed build scripts/nightly stops
};

struct FactSpec {
    FactLine line = FactLine::scalar;
    std::string_view key = {};
    FactType type = FactType::text;
    FactPresence presence = FactPresence::always;
    std::span<const std::string_view> choices = {};
    std::string_view help = {};
};

std::span<const FactSpec> campaign_fact_specs();

// One campaign.txt line kind's facts (the scalar lines together, or one canary or variant line), each
// value checked against its row.
struct FactSet {
    FactLine line = FactLine::scalar;
    std::map<std::string, std::string, std::less<>> values;

    bool has(std::string_view key) const;
    // The value of a key the file must hold (a required key, or one `has` found); a key it may lack,
    // asked for when absent, is a bug of the caller: std::logic_error.
    const std::string& text(std::string_view key) const;
    double number(std::string_view key) const;  // count, decimal or percent
    // Its value as JSON (a number for count, decimal and percent; a string else, null when empty and
    // text_or_empty), or null when the table lets it be absent and it is.
    nlohmann::ordered_json json(std::string_view key) const;
};

struct CampaignFacts {
    FactSet scalar;
    std::optional<FactSet> canary;  // the canary ran
    std::vector<FactSet> variants;  // in file order
    bool built() const { return scalar.text("build") == "ok"; }
};

// Throws InputError: the file unreadable (line 0), a line or word malformed, a key unknown, given twice
// or missing (a scalar line: line 0), a value not of its type.
CampaignFacts read_campaign_facts(const std::filesystem::path& path);

// The JSON inputs: a triage summary line (`kvsim triage --summary`, fuzz/campaign/triage.h) and a
// fuzz target's stats file (KVSIM_FUZZ_STATS, fuzz/fuzz_trace.cpp).
enum class JsonFieldType {
    string,       // any string
    choice,       // a string among `choices`
    boolean,      // true | false
    count,        // a non-negative integer
    string_list,  // an array of strings
    file_names,   // an object of `choices` keys, each a file name (string) or null
    count_map,    // an object of counts, by any key (`choices` empty) or by keys among `choices`
};

struct JsonFieldSpec {
    std::string_view key = {};
    JsonFieldType type = JsonFieldType::string;
    bool required = true;  // else checked when present; absent, it reads as null
    std::span<const std::string_view> choices = {};
    std::string_view help = {};
};

// Every key `kvsim triage --summary` writes: those the report reads are required, the others checked
// when present; any other key is an input error.
std::span<const JsonFieldSpec> triage_line_specs();
// The stats keys the report reads, all required; the fuzz target's other counts are not read.
std::span<const JsonFieldSpec> fuzz_stats_specs();

// Each line of a triage summary file, checked (line = the line's number, field = the JSON key); an
// absent file has no line.
std::vector<nlohmann::ordered_json> read_triage_summary(const std::filesystem::path& path);
// A stats file, checked (line 0, field = the JSON key).
nlohmann::ordered_json read_fuzz_stats(const std::filesystem::path& path);

// The three tables as text, for `kvsim report --help`.
std::string campaign_facts_help();

}  // namespace kvsim
