#pragma once
// The registry of known findings (properties/findings/README.md): one entry per understood cause,
// with the variants it applies to, the signatures it carries, a matcher over the run's structured
// result (finding fields, typed events, the trace's connector stack and settings, the variant's
// flags, named request histories, and counterfactual re-runs), the upstream reference and its
// state, the witness traces, and the fix patch that removes it. Every search tool classifies a
// failing run against it; a run that no entry matches is NEW.
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
    gone_with,  // the same trace, edited, no longer gives the signature (see CounterfactualKind)
    known_with,  // under the variant with patch `value` ("+name"), the same trace fails as another known entry
};

enum class CounterfactualKind {
    flags,     // the variant with `fields` flags set
    patch,     // the variant with `value` ("+name") appended; resolved when matched, not parsed
    no_fault,  // the trace without the faults of kind `value` whose fields match
};

struct Condition {
    ConditionKind kind = ConditionKind::event;
    EventCategory category = EventCategory::warn;  // event, no_event
    CounterfactualKind counterfactual = CounterfactualKind::flags;
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

struct KnownEntry {
    std::string id = {};
    int line = 0;
    FindingClass finding_class = FindingClass::upstream;
    std::vector<std::string> variants = {};  // globs ('*' matches any run of characters)
    std::vector<SignatureMatch> signatures = {};
    std::vector<Condition> conditions = {};
    UpstreamReference upstream = {};
    std::vector<FieldMatch> needs = {};  // upstream settings the finding needs (child_order, load_policy, load_mode...)
    std::vector<Witness> witnesses = {};
    std::string fix_patch = {};  // "+pr50565"; empty when `fix_text` describes the fix instead
    std::string fix_text = {};
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
