#include "fuzz/campaign/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <map>

#include "fuzz/campaign/campaign_facts.h"
#include "properties/harness/lifecycle_coverage.h"
#include "sim/variant/variant.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

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
        const Json j = read_fuzz_stats(f);
        ++c.processes;
        c.executions += j["executions"].get<double>();
        c.repeats += j["repeats"].get<double>();
        for (const auto& [id, n] : j["known"].items()) c.known[id] += n.get<double>();
        for (const auto& [mode, n] : j["async_scheduling"].items()) c.modes[mode] += n.get<double>();
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
    const fs::path dir = line["dir"].get<std::string>();
    Json out = Json::object();
    for (const char* which : {"trace", "page", "explain"}) {
        const Json& name = line["files"][which];
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
    std::map<std::string, std::size_t> at;  // dir -> index in out
    for (const Json& t : read_triage_summary(summary)) {
        const std::string dir = t["dir"];
        if (!at.contains(dir)) {
            at[dir] = out.size();
            out.push_back({{"status", t["status"]}, {"signature", t["signature"]}, {"causes", t["causes"]},
                           {"residue", t["residue"]}, {"cause", t["cause"]}, {"verdict", t["verdict"]}, {"dir", dir},
                           {"artifacts", 0}, {"first_seen_this_run", false}, {"files", files_of(t)},
                           {"repro", t["repro"]}, {"message", t["message"]}});
        }
        Json& f = out[at[dir]];
        f["artifacts"] = f["artifacts"].get<int>() + 1;
        if (t["first"].get<bool>()) f["first_seen_this_run"] = true;
    }
    return out;
}

Json coverage_of(const FactSet& v) {
    std::vector<std::string> dirs;
    for (const char* key : {"corpus", "seeds"})
        if (fs::is_directory(v.text(key))) dirs.push_back(v.text(key));
    if (dirs.empty()) return nullptr;
    const auto variant = resolve_variant(v.text("name"), nullptr);
    if (!variant) return nullptr;
    const TraceFiles files = find_trace_files(dirs, true);
    return coverage_json(measure_lifecycle_coverage(files.files, variant), variant->name);
}

Json rates(const FactSet& v, const Counts& jobs, const Counts& single) {
    const double seconds = v.number("seconds"), jobs_n = std::max(1.0, v.number("jobs"));
    const double campaign = rate(jobs.executions, seconds);
    const double per_job = campaign / jobs_n;
    const double alone = rate(single.executions, v.number("single_seconds"));
    return {{"exec_per_sec", rounded(campaign)},
            {"exec_per_sec_per_job", rounded(per_job)},
            {"single_process", {{"seconds", v.number("single_seconds")}, {"executions", single.executions},
                                {"exec_per_sec", rounded(alone)}}},
            {"per_job_to_single_ratio", alone > 0 ? rounded(per_job / alone) : 0.0}};
}

// The jobs' last share of time, in the sanitizer build (scripts/nightly --sanitizer-share).
Json sanitizer_json(const FactSet& v, const Counts& sanitizer) {
    const double seconds = v.number("sanitizer_seconds"), jobs_n = std::max(1.0, v.number("jobs"));
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

Json variant_json(const fs::path& run_dir, const FactSet& v, const std::vector<std::string>& broken) {
    const std::string name = v.text("name");
    const Counts jobs = sum_stats(run_dir / "stats" / name, "jobs");
    const Counts single = sum_stats(run_dir / "stats" / name, "single");
    const Counts sanitizer = sum_stats(run_dir / "stats" / name, "sanitizer");
    Json findings = findings_of(run_dir / ("triage-" + name + ".jsonl"));
    const auto count = [&](const char* status) {
        return std::count_if(findings.begin(), findings.end(), [&](const Json& f) { return f["status"] == status; });
    };
    const bool is_broken = std::find(broken.begin(), broken.end(), name) != broken.end();
    Json out = {{"variant", name}, {"expected_clean", !is_broken}, {"fuzzed", v.number("seconds") > 0},
                {"budget_seconds", v.json("budget")}, {"seconds", v.json("seconds")},
                {"jobs", v.json("jobs")}, {"processes", jobs.processes}, {"executions", jobs.executions},
                {"repeats", jobs.repeats}};
    out.update(rates(v, jobs, single));
    out["sanitizer_build"] = sanitizer_json(v, sanitizer);
    Json known = Json::object();
    for (const Counts* c : {&jobs, &sanitizer})
        for (const auto& [id, n] : c->known) known[id] = known.value(id, 0.0) + n;
    out["known_in_process"] = known;
    out["runs_by_async_scheduling"] = {{"off", runs_under({&jobs, &single, &sanitizer}, "off")},
                                       {"on", runs_under({&jobs, &single, &sanitizer}, "on")}};
    out.update(Json{{"corpus_before", v.json("corpus_before")}, {"corpus_after", v.json("corpus_after")},
                    {"seeds", v.json("seed_count")}, {"seeds_left_out", v.json("seeds_left_out")},
                    {"crash_artifacts", v.json("crash_artifacts")},
                    {"findings_new", count("new")}, {"findings_known", count("known")},
                    {"findings_unreproduced", count("unreproduced")}, {"findings", findings},
                    {"coverage", coverage_of(v)}, {"lifecycle_graph", lifecycle_graph_of(run_dir, name)}});
    return out;
}

// status and exit code, worst first
std::pair<std::string, int> campaign_status(const CampaignFacts& f, const Json& variants) {
    int new_on_clean = 0;
    for (const Json& v : variants)
        if (v["expected_clean"].get<bool>()) new_on_clean += v["findings_new"].get<int>();
    if (!f.built()) return {"build_failed", 70};
    if (f.canary && f.canary->text("status") == "failed") return {"canary_failed", 2};
    if (new_on_clean > 0) return {"new_findings", 1};
    if (f.scalar.text("interrupted") == "1") return {"interrupted", 130};
    return {"clean", 0};
}

// The canary's facts; when it did not run, status skipped and every other fact null.
Json canary_json(const std::optional<FactSet>& canary) {
    Json out = Json::object();
    for (const FactSpec& spec : campaign_fact_specs())
        if (spec.line == FactLine::canary) out[std::string(spec.key)] = canary ? canary->json(spec.key) : Json(nullptr);
    if (!canary) out["status"] = "skipped";
    return out;
}

// The variants expected broken; none when campaign.txt does not say (its build failed: no variant ran).
std::vector<std::string> broken_variants(const FactSet& scalar) {
    return scalar.has("broken") ? split_list(scalar.text("broken")) : std::vector<std::string>();
}

}  // namespace

CampaignReport build_campaign_report(const fs::path& run_dir) {
    const CampaignFacts f = read_campaign_facts(run_dir / "campaign.txt");
    const std::vector<std::string> broken = broken_variants(f.scalar);
    Json variants = Json::array();
    for (const FactSet& v : f.variants) variants.push_back(variant_json(run_dir, v, broken));
    const auto [status, code] = campaign_status(f, variants);
    int fresh = 0, known = 0;
    for (const Json& v : variants) {
        fresh += v["findings_new"].get<int>();
        known += v["findings_known"].get<int>();
    }
    const FactSet& s = f.scalar;
    Json report = {{"run_id", s.json("run_id")}, {"started", s.json("started")}, {"commit", s.json("commit")},
                   {"minutes", s.json("minutes")}, {"wall_seconds", s.json("wall_seconds")}, {"jobs", s.json("jobs")},
                   {"sanitizer_share_percent", s.json("sanitizer_share")}, {"build", s.json("build")},
                   {"interrupted", s.text("interrupted") == "1"}, {"status", status}, {"exit_code", code},
                   {"run_dir", fs::absolute(run_dir).string()},
                   {"broken_variants", s.has("broken") ? Json(broken) : Json(nullptr)}, {"canary", canary_json(f.canary)}, {"variants", variants}, {"findings_new", fresh},
                   {"findings_known", known}};
    return CampaignReport{report, render_report_markdown(report, run_dir), render_report_html(report, run_dir), code};
}

}  // namespace kvsim
