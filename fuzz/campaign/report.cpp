#include "fuzz/campaign/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>

#include "properties/harness/lifecycle_coverage.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_schema.h"
#include "sim/variant/variant.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// campaign.txt: `KEY VALUE...` lines; `canary` and `variant` lines carry k=v words.
struct Facts {
    std::map<std::string, std::string> scalar;
    std::map<std::string, std::string> canary;
    std::vector<std::map<std::string, std::string>> variants;
};

std::map<std::string, std::string> key_values(std::istringstream& words, const std::string& file, int line) {
    std::map<std::string, std::string> out;
    for (std::string w; words >> w;) {
        const auto eq = w.find('=');
        if (eq == std::string::npos || eq == 0)
            throw InputError(file, line, "campaign", fmt::format("expected KEY=VALUE, got {}", quote(w)));
        out[w.substr(0, eq)] = w.substr(eq + 1);
    }
    return out;
}

Facts read_facts(const fs::path& path) {
    std::ifstream in(path);
    if (!in) throw InputError(path.string(), 0, "campaign", "cannot read the file");
    Facts facts;
    int number = 0;
    for (std::string text; std::getline(in, text);) {
        ++number;
        std::istringstream words(text);
        std::string key;
        if (!(words >> key) || key.front() == '#') continue;
        if (key == "canary") facts.canary = key_values(words, path.string(), number);
        else if (key == "variant") facts.variants.push_back(key_values(words, path.string(), number));
        else std::getline(words >> std::ws, facts.scalar[key]);
    }
    return facts;
}

double number(const std::map<std::string, std::string>& m, const std::string& key) {
    const auto it = m.find(key);
    if (it == m.end() || it->second.empty()) return 0;
    try {
        return std::stod(it->second);
    } catch (const std::exception&) {
        return 0;
    }
}

std::string text(const std::map<std::string, std::string>& m, const std::string& key) {
    const auto it = m.find(key);
    return it == m.end() ? std::string() : it->second;
}

struct Counts {
    double executions = 0;
    double repeats = 0;  // of the executions, inputs a process had already run and did not run again
    int processes = 0;
    std::map<std::string, double> known;
    std::map<std::string, double> modes;  // async_scheduling off|on -> inputs run under it
};

// Sums the fuzz target's stats files PREFIX.*.json in `dir`.
Counts sum_stats(const fs::path& dir, const std::string& prefix) {
    Counts c;
    if (!fs::is_directory(dir)) return c;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (name.starts_with(prefix + ".") && name.ends_with(".json")) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
        std::ifstream in(f);
        const Json j = Json::parse(in, nullptr, false);
        if (j.is_discarded() || !j.is_object()) continue;
        ++c.processes;
        c.executions += j.value("executions", 0.0);
        c.repeats += j.value("repeats", 0.0);
        const Json known = j.value("known", Json::object());
        for (const auto& [id, n] : known.items()) c.known[id] += n.get<double>();
        const Json modes = j.value("async_scheduling", Json::object());
        for (const auto& [mode, n] : modes.items()) c.modes[mode] += n.get<double>();
    }
    return c;
}

std::vector<std::string> split_list(const std::string& csv) {
    std::vector<std::string> out;
    for (std::size_t at = 0; at < csv.size();) {
        const auto comma = std::min(csv.find(',', at), csv.size());
        if (comma > at) out.push_back(csv.substr(at, comma - at));
        at = comma + 1;
    }
    return out;
}

double rate(double executions, double seconds) { return seconds > 0 ? executions / seconds : 0; }
double rounded(double x) { return static_cast<double>(static_cast<long long>(x * 100 + 0.5)) / 100; }

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

// A triage line's files (relative to its dir), each kept only when it is there.
Json files_of(const Json& line) {
    const fs::path dir = line.value("dir", "");
    const Json files = line.value("files", Json::object());
    Json out = Json::object();
    for (const char* which : {"trace", "page", "explain"}) {
        const Json name = files.value(which, Json(nullptr));
        out[which] = name.is_string() && fs::is_regular_file(dir / name.get<std::string>()) ? name : Json(nullptr);
    }
    return out;
}

// The lifecycle graph of a variant's corpus that scripts/nightly left in the run directory.
Json lifecycle_graph_of(const fs::path& run_dir, const std::string& variant) {
    Json out = Json::object();
    for (const char* ext : {"dot", "svg"}) {
        const fs::path file = fs::absolute(run_dir / fmt::format("lifecycle-{}.{}", variant, ext));
        out[ext] = fs::is_regular_file(file) ? Json(file.string()) : Json(nullptr);
    }
    return out;
}

}  // namespace

std::string causes_label(const Json& finding) {
    std::string set;
    for (const Json& id : finding.value("causes", Json::array())) set += (set.empty() ? "" : "+") + id.get<std::string>();
    const std::string residue = finding.value("residue", "");
    if (set.empty() || residue.empty()) return set;
    return fmt::format("after {}: {}", set, residue);
}

namespace {

// The findings of one triage summary file, one per cause directory, in order of first appearance.
Json findings_of(const fs::path& summary) {
    Json out = Json::array();
    std::ifstream in(summary);
    std::map<std::string, std::size_t> at;  // dir -> index in out
    for (std::string line; std::getline(in, line);) {
        const Json t = Json::parse(line, nullptr, false);
        if (t.is_discarded() || !t.is_object()) continue;
        const std::string dir = t.value("dir", "");
        if (!at.contains(dir)) {
            at[dir] = out.size();
            out.push_back({{"status", t.value("status", "new")}, {"signature", t.value("signature", "")},
                           {"causes", t.value("causes", Json::array())}, {"residue", t.value("residue", "")},
                           {"cause", t.value("cause", "")},
                           {"verdict", t.value("verdict", "")}, {"dir", dir}, {"artifacts", 0},
                           {"first_seen_this_run", false}, {"files", files_of(t)}, {"repro", t.value("repro", "")},
                           {"message", t.value("message", "")}});
        }
        Json& f = out[at[dir]];
        f["artifacts"] = f["artifacts"].get<int>() + 1;
        if (t.value("first", false)) f["first_seen_this_run"] = true;
    }
    return out;
}

Json coverage_of(const std::map<std::string, std::string>& v) {
    std::vector<std::string> dirs;
    for (const char* key : {"corpus", "seeds"})
        if (!text(v, key).empty() && fs::is_directory(text(v, key))) dirs.push_back(text(v, key));
    if (dirs.empty()) return nullptr;
    const auto variant = resolve_variant(text(v, "name"), nullptr);
    if (!variant) return nullptr;
    const TraceFiles files = find_trace_files(dirs, true);
    return coverage_json(measure_lifecycle_coverage(files.files, variant), variant->name);
}

Json rates(const std::map<std::string, std::string>& v, const Counts& jobs, const Counts& single) {
    const double seconds = number(v, "seconds"), jobs_n = std::max(1.0, number(v, "jobs"));
    const double campaign = rate(jobs.executions, seconds);
    const double per_job = campaign / jobs_n;
    const double alone = rate(single.executions, number(v, "single_seconds"));
    return {{"exec_per_sec", rounded(campaign)},
            {"exec_per_sec_per_job", rounded(per_job)},
            {"single_process", {{"seconds", number(v, "single_seconds")}, {"executions", single.executions},
                                {"exec_per_sec", rounded(alone)}}},
            {"per_job_to_single_ratio", alone > 0 ? rounded(per_job / alone) : 0.0}};
}

// The jobs' last share of time, in the sanitizer build (scripts/nightly --sanitizer-share).
Json sanitizer_json(const std::map<std::string, std::string>& v, const Counts& sanitizer) {
    const double seconds = number(v, "sanitizer_seconds"), jobs_n = std::max(1.0, number(v, "jobs"));
    return {{"seconds", seconds}, {"processes", sanitizer.processes}, {"executions", sanitizer.executions},
            {"repeats", sanitizer.repeats}, {"exec_per_sec_per_job", rounded(rate(sanitizer.executions, seconds) / jobs_n)}};
}

// Inputs run under one scheduling mode by every process of a variant (both builds' jobs and the single one).
double runs_under(std::initializer_list<const Counts*> counts, const std::string& mode) {
    double n = 0;
    for (const Counts* c : counts)
        if (const auto it = c->modes.find(mode); it != c->modes.end()) n += it->second;
    return n;
}

Json variant_json(const fs::path& run_dir, const std::map<std::string, std::string>& v, const std::string& broken) {
    const std::string name = text(v, "name");
    const Counts jobs = sum_stats(run_dir / "stats" / name, "jobs");
    const Counts single = sum_stats(run_dir / "stats" / name, "single");
    const Counts sanitizer = sum_stats(run_dir / "stats" / name, "sanitizer");
    Json findings = findings_of(run_dir / ("triage-" + name + ".jsonl"));
    const auto count = [&](const char* status) {
        return std::count_if(findings.begin(), findings.end(), [&](const Json& f) { return f["status"] == status; });
    };
    const auto list = split_list(broken);
    const bool is_broken = std::find(list.begin(), list.end(), name) != list.end();
    Json out = {{"variant", name}, {"expected_clean", !is_broken}, {"fuzzed", number(v, "seconds") > 0},
                {"budget_seconds", number(v, "budget")}, {"seconds", number(v, "seconds")},
                {"jobs", number(v, "jobs")}, {"processes", jobs.processes}, {"executions", jobs.executions},
                {"repeats", jobs.repeats}};
    out.update(rates(v, jobs, single));
    out["sanitizer_build"] = sanitizer_json(v, sanitizer);
    Json known = Json::object();
    for (const Counts* c : {&jobs, &sanitizer})
        for (const auto& [id, n] : c->known) known[id] = known.value(id, 0.0) + n;
    out["known_in_process"] = known;
    out["runs_by_async_scheduling"] = {{"off", runs_under({&jobs, &single, &sanitizer}, "off")},
                                       {"on", runs_under({&jobs, &single, &sanitizer}, "on")}};
    out.update(Json{{"corpus_before", number(v, "corpus_before")}, {"corpus_after", number(v, "corpus_after")},
                    {"seeds", number(v, "seed_count")}, {"seeds_left_out", number(v, "seeds_left_out")},
                    {"crash_artifacts", number(v, "crash_artifacts")},
                    {"findings_new", count("new")}, {"findings_known", count("known")},
                    {"findings_unreproduced", count("unreproduced")}, {"findings", findings},
                    {"coverage", coverage_of(v)}, {"lifecycle_graph", lifecycle_graph_of(run_dir, name)}});
    return out;
}

// status and exit code, worst first
std::pair<std::string, int> campaign_status(const Facts& f, const Json& variants) {
    int new_on_clean = 0;
    for (const Json& v : variants)
        if (v["expected_clean"].get<bool>()) new_on_clean += v["findings_new"].get<int>();
    if (text(f.scalar, "build") != "ok") return {"build_failed", 70};
    if (text(f.canary, "status") == "failed") return {"canary_failed", 2};
    if (new_on_clean > 0) return {"new_findings", 1};
    if (text(f.scalar, "interrupted") == "1") return {"interrupted", 130};
    return {"clean", 0};
}

}  // namespace

CampaignReport build_campaign_report(const fs::path& run_dir) {
    const Facts f = read_facts(run_dir / "campaign.txt");
    Json variants = Json::array();
    for (const auto& v : f.variants) variants.push_back(variant_json(run_dir, v, text(f.scalar, "broken")));
    const auto [status, code] = campaign_status(f, variants);
    Json canary = {{"variant", text(f.canary, "variant")}, {"signature", text(f.canary, "signature")},
                   {"status", text(f.canary, "status").empty() ? "skipped" : text(f.canary, "status")},
                   {"seconds", number(f.canary, "seconds")}, {"runs", number(f.canary, "runs")},
                   {"artifact", text(f.canary, "artifact")}};
    int fresh = 0, known = 0;
    for (const Json& v : variants) {
        fresh += v["findings_new"].get<int>();
        known += v["findings_known"].get<int>();
    }
    Json report = {{"run_id", text(f.scalar, "run_id")}, {"started", text(f.scalar, "started")},
                   {"commit", text(f.scalar, "commit")}, {"minutes", number(f.scalar, "minutes")},
                   {"wall_seconds", number(f.scalar, "wall_seconds")}, {"jobs", number(f.scalar, "jobs")},
                   {"sanitizer_share_percent", number(f.scalar, "sanitizer_share")},
                   {"build", text(f.scalar, "build")}, {"interrupted", text(f.scalar, "interrupted") == "1"},
                   {"status", status}, {"exit_code", code}, {"run_dir", fs::absolute(run_dir).string()},
                   {"broken_variants", split_list(text(f.scalar, "broken"))}, {"canary", canary}, {"variants", variants},
                   {"findings_new", fresh}, {"findings_known", known}};
    return CampaignReport{report, render_report_markdown(report, run_dir), render_report_html(report, run_dir), code};
}

}  // namespace kvsim
