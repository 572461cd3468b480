#pragma once
// The registry of known findings (properties/findings/README.md): one entry per root cause, with the
// variants it applies to, the signatures it carries, a matcher over the run's structured result
// (finding fields, typed events, the trace's connector stack and settings, the variant's flags, named
// request histories), the upstream reference and its state, the witness traces, and the fix (a
// variant edit) that removes it. Every search tool classifies a failing run against it by residue
// (classify.h): a run's causes are removed one fix at a time, and a failure no entry explains is NEW.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/common/event_log.h"

namespace kvsim {

enum class FindingClass { upstream, known_bug, kvsim_bug };
std::string_view to_string(FindingClass c);

// "KEY=VALUE"; VALUE "$request" stands for the request the finding names.
struct FieldMatch {
    std::string key;
    std::string value;
};

// A signature the entry may carry, and conditions on the first finding's own fields.
struct SignatureMatch {
    std::string signature;
    std::vector<FieldMatch> finding_fields;  // "connector", "id"
};

enum class ConditionKind {
    stack,      // the trace's connector kinds in order: value "store,p2p"
    event,      // some event of the run has `category` and `fields`
    no_event,   // no event of the run has them
    flag,       // the run's variant has flag fields[0].key = fields[0].value
    connector,  // the trace's connector `value` has the settings `fields`
    engine,     // the run's engine settings as resolved (trace key, else the variant's default): `fields`
    history,    // a named request history holds (properties/findings/histories.h): value
};

struct Condition {
    ConditionKind kind = ConditionKind::event;
    EventCategory category = EventCategory::warn;  // event, no_event
    std::string value = {};
    std::vector<FieldMatch> fields = {};
    int line = 0;
};

// The event categories a condition reads: its own for event and no_event, all for a history, none else.
EventCategories events_read(const Condition& c);

enum class UpstreamState { open, known, merged, not_reported, fixed };
std::string_view to_string(UpstreamState s);

struct UpstreamReference {
    UpstreamState state = UpstreamState::not_reported;
    std::vector<std::string> references;  // "#50565"
    std::string note;
};

struct Witness {
    std::string trace;  // repository-relative path
    std::string variant;
};

// How the cause is removed: a variant patch ("+pr50565"), flag values (a historical fix an upstream PR
// made, which no patch carries), or neither (the fix is not modelled: `text` describes it).
struct FixEdit {
    std::string patch = {};               // "+NAME"
    std::vector<FieldMatch> flags = {};   // FLAG=VALUE
    std::string text = {};                // `fix describe TEXT`
    bool modelled() const { return !patch.empty() || !flags.empty(); }
    std::string label() const;            // "+NAME", "flags F=V ...", or the text
};

struct KnownEntry {
    std::string id = {};
    int line = 0;
    FindingClass finding_class = FindingClass::upstream;
    std::vector<std::string> variants = {};  // globs ('*' matches any run of characters)
    std::vector<SignatureMatch> signatures = {};
    std::vector<Condition> conditions = {};
    UpstreamReference upstream = {};
    std::vector<Witness> witnesses = {};
    FixEdit fix = {};
    std::string why = {};

    bool applies_to(std::string_view variant) const;
    const SignatureMatch* signature_named(std::string_view signature) const;
};

struct Registry {
    std::string file;
    std::vector<KnownEntry> entries;
    const KnownEntry* find(std::string_view id) const;
    // What the conditions of every entry read (a search keeps these in its muted runs).
    EventCategories events_read() const;
};

// Parses registry text; throws InputError ("FILE:LINE: FIELD: MESSAGE") on the first bad line.
Registry parse_registry(std::string_view text, const std::string& file);
// Reads and parses a registry file (line 0 when it cannot be read).
Registry load_registry(const std::string& path);
// The registry compiled into the binary (properties/findings/known_findings.txt).
const Registry& builtin_registry();

// '*' matches any run of characters, everything else itself.
bool glob_matches(std::string_view pattern, std::string_view text);

}  // namespace kvsim
