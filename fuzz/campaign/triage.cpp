#include "fuzz/campaign/triage.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "fuzz/minimize/minimize_finding.h"
#include "properties/findings/classification_view.h"
#include "properties/findings/classify.h"
#include "properties/harness/causal_slice.h"
#include "properties/harness/run_views.h"
#include "properties/harness/settings_view.h"
#include "properties/harness/verdict_line.h"
#include "sim/common/stable_hash.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(fmt::format("triage: cannot read {}", path.string()));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) throw std::runtime_error(fmt::format("triage: cannot write {}", path.string()));
}

// A cause as a directory name.
std::string directory_name(const std::string& cause) {
    std::string out = cause;
    for (char& c : out)
        if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("_.:+=~-").find(c) == std::string_view::npos)
            c = '_';
    return out;
}

// "crash" for libFuzzer's crash-<sha1>, "input" for any other name.
std::string artifact_kind(const fs::path& path) {
    const std::string name = path.filename().string();
    const auto dash = name.find('-');
    return dash == std::string::npos ? std::string("input") : name.substr(0, dash);
}

// The reader's files `dir` holds.
FindingFiles files_in(const fs::path& dir) {
    const auto present = [&](const char* name) { return fs::is_regular_file(dir / name) ? std::string(name) : ""; };
    return FindingFiles{.trace = present(kFindingTraceFile), .page = present(kFindingPageFile),
                        .explain = present(kFindingExplainFile)};
}

Json files_json(const FindingFiles& f) {
    const auto path = [](const std::string& p) { return p.empty() ? Json(nullptr) : Json(p); };
    return {{"trace", path(f.trace)}, {"page", path(f.page)}, {"explain", path(f.explain)}};
}

struct Replay {
    std::optional<Trace> trace;
    RunResult result;
};

// Replays the artifact and fills status, verdict, signature, causes and residue.
Replay replay(const std::string& text, TriagedArtifact& t, const TriageConfig& config) {
    Replay r;
    const std::string kind = artifact_kind(t.artifact);
    try {
        r.trace = parse_trace(text, t.artifact);
    } catch (const InputError& bad) {
        t.status = TriageStatus::unreproduced;
        t.verdict = "input-error";
        t.signature = fmt::format("unreproduced:{}_not_a_trace", kind);
        t.message = bad.what();
        return r;
    }
    r.result = run_trace(*r.trace, config.variant, RunOptions{.check_determinism = true});
    t.message = r.result.message;
    if (r.result.internal_error) {
        t.verdict = "internal-error";
        t.signature = internal_error_signature(r.result.message);
    } else if (r.result.verdict == Verdict::pass) {
        t.status = TriageStatus::unreproduced;
        t.verdict = "pass";
        t.signature = fmt::format("unreproduced:{}_replays_pass", kind);
    } else {
        t.verdict = std::string(to_string(r.result.verdict));
        t.signature = r.result.signature;
        const Classification c = classify(*config.registry, *r.trace, config.variant, r.result);
        if (c.known()) t.status = TriageStatus::known;
        for (const KnownEntry* e : c.causes) t.causes.push_back(e->id);
        if (c.is_new() && !c.causes.empty()) t.residue = c.residue_signature;
    }
    t.events_before = t.events_after = r.trace->events.size();
    return r;
}

// The minimal trace's text (or the artifact itself when it cannot be minimised).
std::string minimal_text(const std::string& text, const Replay& r, TriagedArtifact& t, const TriageConfig& config) {
    if (!r.trace || r.result.internal_error || r.result.verdict == Verdict::pass) return text;
    const FindingToMinimize finding{.trace = *r.trace, .source = fs::path(t.artifact).filename().string(),
                                    .variant = config.variant, .signature = t.signature,
                                    .max_runs = config.max_runs, .registry = config.registry};
    const MinimizedFinding minimized = minimize_finding(finding);
    if (minimized.outcome != MinimizeOutcome::kept || minimized.classification.cause_set() != t.cause_set()) return text;
    t.minimised = true;
    t.events_after = minimized.minimal.events.size();
    return minimized_trace_text(minimized, finding);
}

// The replay of the minimal trace: log, result.json, page.html and explain.txt (a log only, naming
// the parse error, when the text is not a trace). Returns its settings against upstream's defaults
// (settings_view.h), or an empty array when it is not a trace.
Json write_run_files(const fs::path& tmp, const std::string& text, const TriagedArtifact& t, const TriageConfig& config) {
    const fs::path trace_path = t.dir / kFindingTraceFile;
    const std::string path_text = trace_path.string();
    std::string log = "kvsim could not parse the trace: " + t.message + "\n";
    Json result_json = Json::object();
    Json settings = Json::array();
    try {
        const Trace trace = parse_trace(text, trace_path.string());
        const RunResult r =
            run_trace(trace, config.variant, RunOptions{.check_determinism = true, .record_timeline = true});
        const ExpectationCheck expectation = check_expectation(trace, r, config.variant.name);
        const Classification classification = classify(*config.registry, trace, config.variant, r);
        settings = settings_json(settings_diff(trace, config.variant));
        log = r.log + verdict_line(r, trace_path.string(), config.variant.name, expectation) + "\n";
        result_json = run_json(trace, r, trace_path.string(), config.variant.name, expectation);
        result_json["settings"] = settings;
        result_json["registry"] = classification_json(classification);
        const RunViewInput view{.trace = trace, .result = r, .trace_path = path_text, .trace_text = text,
                                .variant = config.variant.name, .settings = settings,
                                .registry = result_json["registry"]};
        write_file(tmp / kFindingPageFile, run_page_html(view));
        write_file(tmp / kFindingExplainFile, explain_run(trace, r, trace_path.string(), config.variant));
    } catch (const InputError&) {
    }
    write_file(tmp / "log", log);
    write_file(tmp / "result.json", result_json.dump(2) + "\n");
    return settings;
}

void write_finding(const fs::path& tmp, const std::string& text, const std::string& original,
                   const TriagedArtifact& t, const TriageConfig& config) {
    write_file(tmp / kFindingTraceFile, text);
    write_file(tmp / ("original-" + fs::path(t.artifact).filename().string()), original);
    write_file(tmp / "repro.txt", t.repro + "\n");
    const Json settings = write_run_files(tmp, text, t, config);
    Json meta = Json::parse(triage_summary_line(t, config.variant.name));
    meta["files"] = files_json(files_in(tmp));
    Json causes = Json::array();
    for (const std::string& id : t.causes)
        if (const KnownEntry* e = config.registry->find(id))
            causes.push_back({{"id", e->id},
                              {"upstream", {{"state", to_string(e->upstream.state)}, {"references", e->upstream.references}}},
                              {"fix", e->fix.label()}});
    meta["cause_entries"] = causes;
    meta["settings"] = settings;
    write_file(tmp / "triage.json", meta.dump(2) + "\n");
}

void record_duplicate(const TriagedArtifact& t, const std::string& text) {
    const fs::path original = t.dir / ("original-" + fs::path(t.artifact).filename().string());
    if (fs::exists(original) && read_file(original) == text) return;  // the finding's own artifact
    const std::string line = fmt::format("{:016x} {}", fnv1a(text), fs::absolute(t.artifact).string());
    const fs::path list = t.dir / "duplicates.txt";
    std::string known;
    if (fs::exists(list)) known = read_file(list);
    if (known.find(line.substr(0, 16)) != std::string::npos) return;
    std::ofstream(list, std::ios::app) << line << "\n";
}

}  // namespace

std::string_view to_string(TriageStatus status) {
    switch (status) {
        case TriageStatus::new_finding: return "new";
        case TriageStatus::known: return "known";
        case TriageStatus::unreproduced: return "unreproduced";
    }
    return "new";
}

std::string TriagedArtifact::cause_set() const {
    std::string out;
    for (const std::string& id : causes) out += (out.empty() ? "" : "+") + id;
    return out;
}

TriagedArtifact triage_artifact(const std::string& artifact, const TriageConfig& config) {
    TriagedArtifact t;
    t.artifact = artifact;
    const std::string text = read_file(artifact);
    const Replay r = replay(text, t, config);
    t.cause = t.status == TriageStatus::known ? t.cause_set() : t.signature;
    t.dir = config.out_dir / config.variant.name / directory_name(t.cause);
    t.repro = fmt::format("{} run {} --variant {}", config.kvsim, (t.dir / kFindingTraceFile).string(),
                          config.variant.name);
    if (fs::exists(t.dir)) {
        record_duplicate(t, text);
        t.files = files_in(t.dir);
        return t;
    }
    fs::create_directories(t.dir.parent_path());
    const fs::path tmp = t.dir.parent_path() / fmt::format(".triage.{:016x}", fnv1a(text + t.cause));
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    write_finding(tmp, minimal_text(text, r, t, config), text, t, config);
    std::error_code ec;
    fs::rename(tmp, t.dir, ec);
    if (ec) {  // another triage wrote the same cause meanwhile: this one is a duplicate
        fs::remove_all(tmp);
        if (!fs::exists(t.dir)) throw std::runtime_error(fmt::format("triage: cannot create {}", t.dir.string()));
        record_duplicate(t, text);
        t.files = files_in(t.dir);
        return t;
    }
    t.first = true;
    t.files = files_in(t.dir);
    return t;
}

std::string triage_summary_line(const TriagedArtifact& t, const std::string& variant) {
    const Json line = {{"artifact", fs::absolute(t.artifact).string()}, {"variant", variant},
                       {"first", t.first}, {"status", to_string(t.status)}, {"verdict", t.verdict},
                       {"signature", t.signature}, {"causes", t.causes}, {"residue", t.residue}, {"cause", t.cause},
                       {"dir", fs::absolute(t.dir).string()}, {"minimised", t.minimised},
                       {"events_before", t.events_before}, {"events_after", t.events_after},
                       {"files", files_json(t.files)}, {"repro", t.repro}, {"message", t.message}};
    return line.dump();
}

std::string triage_report_line(const TriagedArtifact& t, const std::string& variant) {
    const std::string name = fs::path(t.artifact).filename().string();
    const std::string label = t.status == TriageStatus::known ? "known " + t.cause_set()
                              : t.status == TriageStatus::new_finding && !t.causes.empty() ? "NEW after " + t.cause_set()
                              : t.status == TriageStatus::unreproduced ? std::string("unreproduced")
                                                                       : std::string("NEW");
    if (!t.first)
        return fmt::format("triage: duplicate {} {} {} <- {} (finding {})", label, variant, t.signature, name,
                           t.dir.string());
    return fmt::format("triage: {} {} {} <- {} ({} -> {} events)\ntriage:   repro: {}", label, variant, t.signature,
                       name, t.events_before, t.events_after, t.repro);
}

}  // namespace kvsim
