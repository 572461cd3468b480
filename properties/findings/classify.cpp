#include "properties/findings/classify.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "properties/findings/histories.h"
#include "sim/common/model_check.h"
#include "sim/common/on_off.h"
#include "sim/trace/scheduling_mode.h"

namespace kvsim {
namespace {

constexpr ModelCheck model_check{.component = "classifier"};

// The options of the classifier's own runs: the run's (its budgets), without the determinism replay,
// the timeline or the text log; with or without the typed events.
RunOptions rerun_options(RunOptions options, bool events) {
    options.check_determinism = false;
    options.record_timeline = false;
    options.text_log = false;
    options.events = events;
    return options;
}

// The run's typed events. A muted run (RunOptions::events off) keeps only some categories
// (RunResult::events_kept): the first condition that reads others runs the trace again with every
// event, once per classification (the same run: the model is deterministic), so a failing search
// input pays for its events only when an entry asks for ones it did not keep.
class RunEvents {
public:
    RunEvents(const Trace& trace, const Variant& variant, const RunResult& result, const RunOptions& options)
        : trace_(trace), variant_(variant), result_(result), options_(options) {}
    const std::vector<LogEvent>& get(EventCategories read) {
        if (result_.events_kept.contains(read)) return result_.events;
        if (!replayed_) {
            RunResult again = run_trace(trace_, variant_, rerun_options(options_, true));
            model_check(again.signature == result_.signature, "a run replayed for its events changed its signature");
            replayed_ = std::move(again.events);
        }
        return *replayed_;
    }

private:
    const Trace& trace_;
    const Variant& variant_;
    const RunResult& result_;
    const RunOptions& options_;
    std::optional<std::vector<LogEvent>> replayed_;
};

// A re-run no longer gives the original run's signature (a kvsim internal error never counts as gone).
bool lost_signature(const RunResult& again, const RunResult& original) {
    return !again.internal_error && again.signature != original.signature;
}

// The trace's runs under other variants, as counterfactuals ask for them: each run's result (gone_with
// reads whether it still gives the run's signature, a kvsim internal error never counting as gone;
// known_with classifies it). The model is deterministic and
// a run notes every variant flag its decisions read (RunResult::flags_read): a variant that agrees
// with a run already made on each flag that run read makes the same run. The run itself is the
// first one known, each re-run joins it; one per classification, so entries asking for variants
// that differ only in flags their runs never read (a fix patch and the same patch with another on
// top, or one the variant already carries) share one re-run.
class VariantRuns {
public:
    VariantRuns(const Trace& trace, const Variant& variant, const RunResult& result, const RunOptions& options)
        : trace_(trace), result_(result), options_(options) {
        made_.push_back(Made{.variant = variant, .result = &result});
    }
    // The trace's run under `variant`: one already made, or a new one kept for the next asker.
    const RunResult& run_under(const Variant& variant) {
        for (const Made& run : made_) {
            if ((differing_flag_bits(variant, run.variant) & run.result->flags_read) != 0) continue;
            ++count_.shared;
            return *run.result;
        }
        const RunResult& again = reruns_.emplace_back(run_trace(trace_, variant, rerun_options(options_, false)));
        made_.push_back(Made{.variant = variant, .result = &again});
        ++count_.made;
        count_.steps += again.steps;
        return again;
    }
    bool signature_gone(const Variant& variant) { return lost_signature(run_under(variant), result_); }
    const VariantReruns& count() const { return count_; }

private:
    struct Made {
        Variant variant;
        const RunResult* result = nullptr;  // the run itself, or one of reruns_
    };
    const Trace& trace_;
    const RunResult& result_;
    const RunOptions& options_;
    std::deque<RunResult> reruns_;  // a deque: Made keeps pointers into it
    std::vector<Made> made_;
    VariantReruns count_;
};

// What a classification computes once and its entries share: the run's events, its variant runs.
struct Memo {
    Memo(const Trace& trace, const Variant& variant, const RunResult& result, const RunOptions& options)
        : events(trace, variant, result, options), variant_runs(trace, variant, result, options) {}
    RunEvents events;
    VariantRuns variant_runs;
};

struct Subject {
    const Registry* registry;  // known_with classifies its run against it; null: known_with never holds
    const KnownEntry& entry;   // the entry being matched
    int depth;                 // 1 inside a known_with's classification, which follows no further known_with
    const Trace& trace;
    const Variant& variant;
    const RunResult& result;
    std::string request;  // what "$request" stands for
    const RunOptions& options;  // the run's: the counterfactuals' too
    RunEvents& events;
    VariantRuns& variant_runs;
};

std::string wanted(const FieldMatch& f, const Subject& s) { return f.value == "$request" ? s.request : f.value; }

// A field's value as the registry writes it: integers in decimal, flags true/false, names as they are.
std::string field_text(const Field& f) {
    switch (f.kind) {
        case FieldKind::integer: return std::to_string(std::get<std::int64_t>(f.value));
        case FieldKind::flag: return std::get<std::int64_t>(f.value) != 0 ? "true" : "false";
        case FieldKind::text: case FieldKind::request: case FieldKind::status: return std::get<std::string>(f.value);
        default: return {};  // lists are not matched by value
    }
}

bool event_has(const LogEvent& e, const Condition& c, const Subject& s) {
    if (e.category != c.category) return false;
    return std::all_of(c.fields.begin(), c.fields.end(), [&](const FieldMatch& m) {
        const Field* f = e.field(m.key);
        return f != nullptr && field_text(*f) == wanted(m, s);
    });
}

bool some_event(const Condition& c, const Subject& s) {
    const std::vector<LogEvent>& events = s.events.get(events_read(c));
    return std::any_of(events.begin(), events.end(), [&](const LogEvent& e) { return event_has(e, c, s); });
}

std::string stack_of(const Trace& t) {
    std::string out;
    for (const ConnectorSpec& c : t.connectors) out += (out.empty() ? "" : ",") + c.kind;
    return out;
}

std::string setting(const ConnectorSpec& c, std::string_view key) {
    const auto on_off = [](bool b) { return std::string(kvsim::on_off(b)); };
    if (key == "role") return std::string(to_string(c.role));
    if (key == "load_async") return on_off(c.load_async);
    if (key == "lookup_async") return on_off(c.lookup_async);
    if (key == "enable_lookup") return on_off(c.enable_lookup);
    if (key == "save_decode_cache") return on_off(c.save_decode_cache);
    return {};
}

bool connector_has(const Condition& c, const Subject& s) {
    return std::any_of(s.trace.connectors.begin(), s.trace.connectors.end(), [&](const ConnectorSpec& spec) {
        return spec.kind == c.value && std::all_of(c.fields.begin(), c.fields.end(), [&](const FieldMatch& m) {
                   return setting(spec, m.key) == m.value;
               });
    });
}

// async_scheduling as the engine resolves it; kv_load_failure_policy as the scheduler does.
bool engine_has(const Condition& c, const Subject& s) {
    return std::all_of(c.fields.begin(), c.fields.end(), [&](const FieldMatch& m) {
        if (m.key == "async_scheduling")
            return m.value == kvsim::on_off(resolved_async_scheduling(s.trace.engine, s.variant));
        const LoadFailurePolicy policy = s.trace.engine.kv_load_failure_policy.value_or(s.variant.load_failure_policy_default);
        return m.key == "kv_load_failure_policy" && m.value == to_string(policy);
    });
}

bool variant_has(const std::vector<FieldMatch>& flags, const Variant& v) {
    return std::all_of(flags.begin(), flags.end(), [&](const FieldMatch& f) {
        Variant probe = v;
        return set_variant_flag(probe, f.key, f.value) && variant_flag_values(probe) == variant_flag_values(v);
    });
}

bool fault_matches(const FaultEvent& f, const Condition& c, const Subject& s) {
    if (to_string(f.kind) != c.value) return false;
    return std::all_of(c.fields.begin(), c.fields.end(), [&](const FieldMatch& m) {
        if (m.key == "request") return f.request_id == wanted(m, s);
        if (m.key == "rank") return std::to_string(f.rank) == m.value;
        if (m.key == "steps") return std::to_string(f.steps) == m.value;
        return false;
    });
}

// The edited trace no longer gives the run's signature (a kvsim internal error never counts).
bool edited_signature_gone(const Trace& edited, const Subject& s) {
    return lost_signature(run_trace(edited, s.variant, rerun_options(s.options, false)), s.result);
}

// The run's variant with the patch `c.value` ("+name") appended; none when it does not resolve.
std::optional<Variant> with_patch(const Condition& c, const Subject& s) {
    return resolve_variant(s.variant.name + c.value, nullptr);
}

// The same trace, edited as `c` says, no longer gives the run's signature.
bool gone_with(const Condition& c, const Subject& s) {
    if (c.counterfactual == CounterfactualKind::no_fault) {
        Trace trace = s.trace;
        const auto erased = std::erase_if(trace.events, [&](const Event& e) {
            const auto* f = std::get_if<FaultEvent>(&e.body);
            return f != nullptr && fault_matches(*f, c, s);
        });
        if (erased == 0) return false;  // the same trace: the same run
        return edited_signature_gone(trace, s);
    }
    Variant variant = s.variant;
    if (c.counterfactual == CounterfactualKind::flags) {
        for (const FieldMatch& f : c.fields) set_variant_flag(variant, f.key, f.value);
        variant.name += " (counterfactual)";
    } else {
        const auto patched = with_patch(c, s);
        if (!patched) return false;
        variant = *patched;
    }
    return s.variant_runs.signature_gone(variant);
}

const KnownEntry* classify_at(const Registry& registry, const Trace& trace, const Variant& variant,
                              const RunResult& result, const RunOptions& options, int depth, VariantReruns* reruns);

// Under the variant with patch `c.value`, the same trace still fails, and as a known entry other than this
// one: the patch's cause hid a known finding (a cause that stops the run before the other shows, or that the
// other's fix alone does not drain). The patched run is classified once, without further known_with.
bool known_with(const Condition& c, const Subject& s) {
    if (s.registry == nullptr || s.depth > 0) return false;
    const auto patched = with_patch(c, s);
    if (!patched) return false;
    const RunResult& again = s.variant_runs.run_under(*patched);
    if (again.internal_error || again.verdict == Verdict::pass) return false;
    const KnownEntry* other = classify_at(*s.registry, s.trace, *patched, again, s.options, 1, nullptr);
    return other != nullptr && other != &s.entry;
}

bool holds(const Condition& c, const Subject& s) {
    switch (c.kind) {
        case ConditionKind::stack: return stack_of(s.trace) == c.value;
        case ConditionKind::event: return some_event(c, s);
        case ConditionKind::no_event: return !some_event(c, s);
        case ConditionKind::flag: return variant_has(c.fields, s.variant);
        case ConditionKind::connector: return connector_has(c, s);
        case ConditionKind::engine: return engine_has(c, s);
        case ConditionKind::history: return history_holds(c.value, s.trace, s.events.get(events_read(c)));
        case ConditionKind::gone_with: return gone_with(c, s);
        case ConditionKind::known_with: return known_with(c, s);
    }
    return false;
}

bool finding_has(const SignatureMatch& m, const Subject& s) {
    const Finding& f = s.result.findings.front();
    return std::all_of(m.finding_fields.begin(), m.finding_fields.end(), [&](const FieldMatch& field) {
        if (field.key == "connector") return f.connector == field.value;
        if (field.key == "id") return f.id == field.value;
        return s.request == wanted(field, s);
    });
}

}  // namespace

std::string internal_error_signature(const std::string& message) {
    std::string text = message;
    if (const auto at = text.find("internal error: "); at != std::string::npos) text = text.substr(at + 16);
    std::string out = "internal-error:";
    bool underscore = false;
    for (const char c : text) {
        if (out.size() >= 72) break;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            out.push_back(c);
            underscore = false;
        } else if (c == ' ' && !underscore) {
            out.push_back('_');
            underscore = true;
        }
    }
    while (!out.empty() && out.back() == '_') out.pop_back();
    return out;
}

std::string finding_request(const RunResult& result) {
    if (!result.findings.empty() && !result.findings.front().request.empty()) return result.findings.front().request;
    return result.crash ? result.crash->request : std::string();
}

namespace {

bool is_rerun(const Condition& c) { return c.kind == ConditionKind::gone_with || c.kind == ConditionKind::known_with; }

struct Classification {
    const Registry* registry;
    int depth;
};

bool matches(const KnownEntry& entry, const Trace& trace, const Variant& variant, const RunResult& result,
             const RunOptions& options, Memo& memo, Classification at) {
    if (result.internal_error || result.findings.empty() || !entry.applies_to(variant.name)) return false;
    const SignatureMatch* signature = entry.signature_named(result.signature);
    if (signature == nullptr) return false;
    const Subject s{at.registry, entry, at.depth, trace, variant, result, finding_request(result), options,
                    memo.events, memo.variant_runs};
    if (!finding_has(*signature, s)) return false;
    // the re-runs last: they cost a run each
    for (const Condition& c : entry.conditions)
        if (!is_rerun(c) && !holds(c, s)) return false;
    for (const Condition& c : entry.conditions)
        if (is_rerun(c) && !holds(c, s)) return false;
    return true;
}

const KnownEntry* classify_at(const Registry& registry, const Trace& trace, const Variant& variant,
                              const RunResult& result, const RunOptions& options, int depth, VariantReruns* reruns) {
    // A check mismatch is the trace's own statement failing, never a known cause.
    if (result.internal_error || result.verdict == Verdict::pass || result.verdict == Verdict::mismatch) return nullptr;
    Memo memo(trace, variant, result, options);
    const auto known = std::find_if(registry.entries.begin(), registry.entries.end(), [&](const KnownEntry& e) {
        return matches(e, trace, variant, result, options, memo, {&registry, depth});
    });
    if (reruns != nullptr) {
        reruns->made += memo.variant_runs.count().made;
        reruns->shared += memo.variant_runs.count().shared;
        reruns->steps += memo.variant_runs.count().steps;
    }
    return known == registry.entries.end() ? nullptr : &*known;
}

}  // namespace

bool entry_matches(const KnownEntry& entry, const Trace& trace, const Variant& variant, const RunResult& result,
                   const RunOptions& options, const Registry* registry) {
    Memo memo(trace, variant, result, options);
    return matches(entry, trace, variant, result, options, memo, {registry, 0});
}

const KnownEntry* classify(const Registry& registry, const Trace& trace, const Variant& variant,
                           const RunResult& result, const RunOptions& options, VariantReruns* reruns) {
    return classify_at(registry, trace, variant, result, options, 0, reruns);
}

}  // namespace kvsim
