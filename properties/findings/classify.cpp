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
// the timeline or the text log; muted but for the categories the registry reads, and fingerprinted.
RunOptions rerun_options(RunOptions options, EventCategories keep) {
    options.check_determinism = false;
    options.record_timeline = false;
    options.text_log = false;
    options.events = false;
    options.muted_keeps = keep;
    options.fingerprint = true;
    return options;
}

// One failing run the classification looks at: the run itself, or a fix's run (a residue).
struct Stage {
    Variant variant;
    const RunResult* result = nullptr;
    // The events of the run, replayed with every category when a condition reads one it did not keep
    // (the model is deterministic: the same run), and the fold of every event when a fix's run is
    // compared with it.
    std::optional<std::vector<LogEvent>> replayed = {};
    std::optional<std::uint64_t> fingerprint = {};
};

class Runs {
public:
    Runs(const Trace& trace, const RunOptions& options, EventCategories keep) : trace_(trace), options_(options), keep_(keep) {}

    // The trace's run under `variant`: one already made that read no flag the variants differ in, or a new one.
    const RunResult& under(const Variant& variant) {
        for (const Made& run : made_) {
            if ((differing_flag_bits(variant, run.variant) & run.result->flags_read) != 0) continue;
            ++count_.shared;
            return *run.result;
        }
        const RunResult& again = reruns_.emplace_back(run_trace(trace_, variant, rerun_options(options_, keep_)));
        made_.push_back(Made{.variant = variant, .result = &again});
        ++count_.made;
        count_.steps += again.steps;
        return again;
    }
    void add(const Variant& variant, const RunResult& result) { made_.push_back(Made{.variant = variant, .result = &result}); }

    const std::vector<LogEvent>& events(Stage& s, EventCategories read) {
        if (s.result->events_kept.contains(read)) return s.result->events;
        if (!s.replayed) s.replayed = full_run(s).events;
        return *s.replayed;
    }
    std::uint64_t fingerprint(Stage& s) {
        if (!s.fingerprint) {
            const RunResult& r = *s.result;
            if (r.events_kept == EventCategories::all()) s.fingerprint = events_fingerprint(r.events);
            else if (r.events_fingerprint != 0 && options_fingerprinted(r)) s.fingerprint = r.events_fingerprint;
            else s.fingerprint = fingerprinted_run(s).events_fingerprint;
        }
        return *s.fingerprint;
    }
    const VariantReruns& count() const { return count_; }

private:
    struct Made {
        Variant variant;
        const RunResult* result = nullptr;
    };
    // A re-run of this classification folds its events (rerun_options); a caller's run may not have.
    bool options_fingerprinted(const RunResult& r) const {
        return std::any_of(reruns_.begin(), reruns_.end(), [&](const RunResult& x) { return &x == &r; });
    }
    RunResult full_run(const Stage& s) {
        RunOptions o = rerun_options(options_, keep_);
        o.events = true;
        RunResult again = run_trace(trace_, s.variant, o);
        model_check(again.signature == s.result->signature, "a run replayed for its events changed its signature");
        return again;
    }
    RunResult fingerprinted_run(const Stage& s) {
        RunResult again = run_trace(trace_, s.variant, rerun_options(options_, keep_));
        model_check(again.signature == s.result->signature, "a run replayed for its fingerprint changed its signature");
        return again;
    }
    const Trace& trace_;
    const RunOptions& options_;
    EventCategories keep_;
    std::deque<RunResult> reruns_;  // a deque: Made keeps pointers into it
    std::vector<Made> made_;
    VariantReruns count_;
};

struct Subject {
    const Trace& trace;
    const std::string& base_variant;  // the name the entries' variant globs match
    Stage& stage;
    std::string request;  // what "$request" stands for
    Runs& runs;
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
    const std::vector<LogEvent>& events = s.runs.events(s.stage, events_read(c));
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
    const Variant& v = s.stage.variant;
    return std::all_of(c.fields.begin(), c.fields.end(), [&](const FieldMatch& m) {
        if (m.key == "async_scheduling") return m.value == kvsim::on_off(resolved_async_scheduling(s.trace.engine, v));
        const LoadFailurePolicy policy = s.trace.engine.kv_load_failure_policy.value_or(v.load_failure_policy_default);
        return m.key == "kv_load_failure_policy" && m.value == to_string(policy);
    });
}

bool variant_has(const std::vector<FieldMatch>& flags, const Variant& v) {
    return std::all_of(flags.begin(), flags.end(), [&](const FieldMatch& f) {
        Variant probe = v;
        return set_variant_flag(probe, f.key, f.value) && variant_flag_values(probe) == variant_flag_values(v);
    });
}

bool holds(const Condition& c, const Subject& s) {
    switch (c.kind) {
        case ConditionKind::stack: return stack_of(s.trace) == c.value;
        case ConditionKind::event: return some_event(c, s);
        case ConditionKind::no_event: return !some_event(c, s);
        case ConditionKind::flag: return variant_has(c.fields, s.stage.variant);
        case ConditionKind::connector: return connector_has(c, s);
        case ConditionKind::engine: return engine_has(c, s);
        case ConditionKind::history:
            return history_holds(c.value, s.trace, s.runs.events(s.stage, events_read(c)));
    }
    return false;
}

bool finding_has(const SignatureMatch& m, const Subject& s) {
    const Finding& f = s.stage.result->findings.front();
    return std::all_of(m.finding_fields.begin(), m.finding_fields.end(), [&](const FieldMatch& field) {
        if (field.key == "connector") return f.connector == field.value;
        if (field.key == "id") return f.id == field.value;
        return s.request == wanted(field, s);
    });
}

// The entry's variants, a signature and every condition, on the stage's run.
bool describes(const KnownEntry& entry, const Subject& s) {
    const SignatureMatch* signature = entry.signature_named(s.stage.result->signature);
    if (!entry.applies_to(s.base_variant) || signature == nullptr || !finding_has(*signature, s)) return false;
    return std::all_of(entry.conditions.begin(), entry.conditions.end(), [&](const Condition& c) { return holds(c, s); });
}

bool failing(const RunResult& r) {
    return !r.internal_error && !r.findings.empty() && r.verdict != Verdict::pass && r.verdict != Verdict::mismatch &&
           r.verdict != Verdict::rejected;
}

// How a fix's run compares with the run it fixes: it passes or fails otherwise (removed), it fails alike
// but runs otherwise (changed: the fix's branch was taken, so its cause was at work), or it is the same run.
enum class FixEffect { same, changed, removed };

FixEffect effect_of(const RunResult& fixed, Stage& before, Runs& runs, Stage& fixed_stage) {
    if (fixed.internal_error) return FixEffect::same;
    if (!failing(fixed) || fixed.signature != before.result->signature) return FixEffect::removed;
    return runs.fingerprint(fixed_stage) != runs.fingerprint(before) ? FixEffect::changed : FixEffect::same;
}

struct Step {
    const KnownEntry* entry = nullptr;
    std::optional<Stage> residue;  // the fix's run; none when the fix is not modelled
    bool changed_only = false;     // its fix changed the run but left the failure
};

// The entry that explains the stage's failure: the first whose fix removes it, else the first that
// matches without a modelled fix (its conditions are all the evidence there is), else the first whose fix
// changes the run (its branch was taken, the failure stays: another cause is behind it); `skip` are the
// causes removed already.
std::optional<Step> explain(const Registry& registry, const Trace& trace, const std::string& base, Stage& stage,
                            Runs& runs, const std::vector<const KnownEntry*>& skip) {
    Subject s{trace, base, stage, finding_request(*stage.result), runs};
    std::optional<Step> changed, unmodelled;
    for (const KnownEntry& e : registry.entries) {
        if (std::find(skip.begin(), skip.end(), &e) != skip.end() || !describes(e, s)) continue;
        const std::optional<Variant> fixed = with_fix(stage.variant, e.fix);
        if (!fixed) {
            if (!unmodelled && !e.fix.modelled())
                unmodelled = Step{.entry = &e, .residue = std::nullopt, .changed_only = false};
            continue;
        }
        Stage next{.variant = *fixed, .result = &runs.under(*fixed)};
        const FixEffect effect = effect_of(*next.result, stage, runs, next);
        if (effect == FixEffect::removed) return Step{.entry = &e, .residue = std::move(next)};
        if (effect == FixEffect::changed && !changed)
            changed = Step{.entry = &e, .residue = std::move(next), .changed_only = true};
    }
    return unmodelled ? unmodelled : changed;
}

// The variant with the fixes of `causes` but the one at `skip`, in order.
std::optional<Variant> with_fixes_but(const Variant& base, const std::vector<const KnownEntry*>& causes, std::size_t skip) {
    std::optional<Variant> v = base;
    for (std::size_t i = 0; i < causes.size() && v; ++i)
        if (i != skip) v = with_fix(*v, causes[i]->fix);
    return v;
}

// A cause credited only because its fix changed the run stays when the others' fixes alone do not drain
// the run: the set keeps no cause the run passes without (one re-run for each such cause).
void drop_unneeded(Classification& c, const Variant& base, std::vector<bool> changed_only, Runs& runs) {
    for (std::size_t i = c.causes.size(); i-- > 0;) {
        if (!changed_only[i]) continue;
        const std::optional<Variant> without = with_fixes_but(base, c.causes, i);
        if (!without || failing(runs.under(*without))) continue;
        c.causes.erase(c.causes.begin() + static_cast<std::ptrdiff_t>(i));
        changed_only.erase(changed_only.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

void new_residue(Classification& c, const Stage& stage) {
    c.outcome = Outcome::new_finding;
    c.residue_signature = stage.result->signature;
    c.residue_message = stage.result->message;
    c.residue_variant = stage.variant.name;
}

}  // namespace

std::string_view to_string(Outcome outcome) { return enum_name(kOutcomeNames, outcome); }

std::string Classification::cause_set() const {
    std::string out;
    for (const KnownEntry* e : causes) out += (out.empty() ? "" : "+") + e->id;
    return out;
}

std::string Classification::key() const {
    if (outcome == Outcome::known) return "known:" + cause_set();
    if (outcome == Outcome::none) return {};
    return "new:" + residue_signature + (causes.empty() ? "" : " after " + cause_set());
}

std::vector<std::string> expectation_causes(const Classification& c) {
    std::vector<std::string> out;
    for (const KnownEntry* e : c.causes) out.push_back(e->id);
    if (c.is_new()) out.emplace_back("new");
    return out;
}

std::optional<Variant> with_fix(const Variant& variant, const FixEdit& fix) {
    if (!fix.modelled()) return std::nullopt;
    Variant out = variant;
    out.reads = nullptr;
    if (!fix.patch.empty()) {
        if (!apply_variant_patch(out, std::string_view(fix.patch).substr(1))) return std::nullopt;
        out.name += fix.patch;
        return out;
    }
    for (const FieldMatch& f : fix.flags)
        if (!set_variant_flag(out, f.key, f.value)) return std::nullopt;
    out.name += " (fix: " + fix.label() + ")";
    return out;
}

Classification classify(const Registry& registry, const Trace& trace, const Variant& variant,
                        const RunResult& result, const RunOptions& options) {
    Classification c;
    if (!failing(result)) return c;
    Runs runs(trace, options, registry.events_read());
    runs.add(variant, result);
    Variant base = variant;
    base.reads = nullptr;
    Stage stage{.variant = base, .result = &result};
    std::vector<bool> changed_only;
    while (true) {
        std::optional<Step> step = explain(registry, trace, variant.name, stage, runs, c.causes);
        if (!step) {
            new_residue(c, stage);
            break;
        }
        c.causes.push_back(step->entry);
        changed_only.push_back(step->changed_only);
        if (!step->residue) {
            c.outcome = Outcome::known;
            c.unexplored = true;
            break;
        }
        stage = std::move(*step->residue);
        if (!failing(*stage.result)) {
            c.outcome = Outcome::known;
            drop_unneeded(c, base, changed_only, runs);
            break;
        }
    }
    c.reruns = runs.count();
    return c;
}

bool entry_matches(const KnownEntry& entry, const Trace& trace, const Variant& variant, const RunResult& result,
                   const RunOptions& options) {
    if (!failing(result)) return false;
    Registry one{.file = "", .entries = {entry}};
    const Classification c = classify(one, trace, variant, result, options);
    return !c.causes.empty() && c.causes.front() == &one.entries.front();
}

std::string internal_error_signature(const std::string& message) {
    std::string text = message;
    if (const auto at = text.find("internal error: "); at != std::string::npos) text = text.substr(at + 16);
    std::string out = "internal-error:";
    bool underscore = false;
    for (const char ch : text) {
        if (out.size() >= 72) break;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_') {
            out.push_back(ch);
            underscore = false;
        } else if (ch == ' ' && !underscore) {
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

}  // namespace kvsim
