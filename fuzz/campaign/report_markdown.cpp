// report.md, rendered from report.json (fuzz/campaign/report.h).
#include <fmt/format.h>

#include "fuzz/campaign/report.h"

namespace kvsim {
using Json = nlohmann::ordered_json;

std::string report_status_line(const Json& r) {
    const std::string s = r["status"];
    if (s == "clean") return "OK: no new finding on a variant expected clean";
    if (s == "new_findings") return "FAIL: NEW finding(s) on a variant expected clean";
    if (s == "canary_failed")
        return fmt::format("FAIL: the canary did not find {} on {}", r["canary"]["signature"].get<std::string>(),
                           r["canary"]["variant"].get<std::string>());
    if (s == "interrupted") return "INTERRUPTED (partial results)";
    return "FAIL: build failed";
}

namespace {

std::string num(const Json& j) {
    if (j.is_number_integer()) return std::to_string(j.get<long long>());
    if (j.is_number()) return fmt::format("{:.6g}", j.get<double>());
    return j.is_null() ? "-" : j.dump();
}

std::string variants_table(const Json& r) {
    std::string out =
        "| variant | expected | time (s) | jobs | executions | exec/s (campaign) | exec/s per job | exec/s single "
        "process | ratio | sanitizer build: time (s) / exec/s per job | known in process | findings new | "
        "findings known | runs async off / on |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const Json& v : r["variants"]) {
        double known = 0;
        for (const auto& [id, n] : v["known_in_process"].items()) known += n.get<double>();
        out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {} | {} / {} |\n",
                           v["variant"].get<std::string>(), v["expected_clean"].get<bool>() ? "clean" : "broken",
                           num(v["seconds"]), num(v["jobs"]), num(v["executions"]), num(v["exec_per_sec"]),
                           num(v["exec_per_sec_per_job"]), num(v["single_process"]["exec_per_sec"]),
                           num(v["per_job_to_single_ratio"]), num(v["sanitizer_build"]["seconds"]),
                           num(v["sanitizer_build"]["exec_per_sec_per_job"]), known, num(v["findings_new"]),
                           num(v["findings_known"]), num(v["runs_by_async_scheduling"]["off"]),
                           num(v["runs_by_async_scheduling"]["on"]));
    }
    return out;
}

// "[trace](..) · [page](..) · [explain](..)": the finding's files that exist.
std::string finding_links(const Json& f, const std::filesystem::path& page_dir) {
    std::string out;
    for (const char* which : {"trace", "page", "explain"}) {
        const std::filesystem::path file = finding_file(f, which);
        if (file.empty()) continue;
        out += fmt::format("{}[{}]({})", out.empty() ? "" : " · ", which, relative_link(file, page_dir));
    }
    return out.empty() ? fmt::format("`{}`", f["dir"].get<std::string>()) : out;
}

std::string findings_section(const Json& r, const std::filesystem::path& page_dir) {
    std::string out = "## Findings\n";
    bool any = false;
    for (const Json& v : r["variants"]) {
        if (v["findings"].empty()) continue;
        any = true;
        out += fmt::format("### {}\n", v["variant"].get<std::string>());
        for (const Json& f : v["findings"]) {
            const std::string status = f["status"];
            const std::string label = status == "new" ? "**NEW**" : status == "known" ? "known" : "unreproduced";
            out += fmt::format("- {} `{}`{} ({}; {} artifact(s){})\n  - repro: `{}`\n  - finding: {}\n", label,
                               f["signature"].get<std::string>(),
                               causes_label(f).empty() ? "" : " = " + causes_label(f),
                               f["verdict"].get<std::string>(), num(f["artifacts"]),
                               f["first_seen_this_run"].get<bool>() ? ", first seen in this run" : ", seen before",
                               f["repro"].get<std::string>(), finding_links(f, page_dir));
        }
    }
    return out + (any ? "" : "None in this run.\n");
}

std::string coverage_section(const Json& r, const std::filesystem::path& page_dir) {
    std::string out = "## Lifecycle coverage\n";
    for (const Json& v : r["variants"]) {
        const std::string name = v["variant"];
        if (const Json& svg = v["lifecycle_graph"]["svg"]; svg.is_string())
            out += fmt::format("- {}: the graph [lifecycle-{}.svg]({})\n", name, name,
                               relative_link(svg.get<std::string>(), page_dir));
        const Json& c = v["coverage"];
        if (c.is_null()) continue;
        out += fmt::format("- {}: {} of {} modelled edges over {} traces ({} rejected)\n", name,
                           num(c["edges_exercised"]), num(c["edges_modelled"]), num(c["traces_run"]), num(c["rejected"]));
        for (const Json& e : c["edges"])
            if (e.value("modelled", false))
                out += fmt::format("  | {} | {} | {} |\n", e["key"].get<std::string>(), e["name"].get<std::string>(),
                                   num(e["traces"]));
    }
    return out;
}

}  // namespace

std::string render_report_markdown(const Json& r, const std::filesystem::path& page_dir) {
    std::string out = fmt::format("# kvsim nightly campaign {}\n\n**{}** (exit {})\n\n", r["run_id"].get<std::string>(),
                                  report_status_line(r), num(r["exit_code"]));
    out += fmt::format("- started {}, {} s wall; budget {} min, {} job(s); commit {}\n", r["started"].get<std::string>(),
                       num(r["wall_seconds"]), num(r["minutes"]), num(r["jobs"]), r["commit"].get<std::string>());
    out += fmt::format("- findings: {} new, {} known; artifacts and logs: `{}`\n\n", num(r["findings_new"]),
                       num(r["findings_known"]), r["run_dir"].get<std::string>());
    const Json& c = r["canary"];
    if (c["status"] == "skipped")
        out += "## Canary\nskipped (scripts/nightly --no-canary).\n\n";
    else
        out += fmt::format("## Canary\n{} from an empty corpus, abort on any finding: **{}** ({} s, {} run(s)); must find `{}`.\n\n",
                           c["variant"].get<std::string>(), c["status"].get<std::string>(), num(c["seconds"]),
                           num(c["runs"]), c["signature"].get<std::string>());
    out += "## Variants\nexec/s (campaign) = executions of every job of the throughput build / their wall time; "
           "per job = that / jobs; single process = the same fuzz binary alone on the same corpus; ratio = per job "
           "/ single process. The sanitizer build (ASan+UBSan) fuzzes the last share of the jobs' time on the "
           "corpus the throughput build grew.\n\n";
    out += variants_table(r) + "\n" + findings_section(r, page_dir) + "\n" + coverage_section(r, page_dir);
    return out;
}

}  // namespace kvsim
