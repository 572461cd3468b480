// index.html, rendered from report.json (fuzz/campaign/report.h): one self-contained page (inline
// CSS, no script, no network) that links each finding's files and the lifecycle graphs.
#include <fmt/format.h>

#include <cctype>

#include "fuzz/campaign/report.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr const char* kStyle = R"(body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.n{text-align:right}code{font:12px ui-monospace,monospace;background:#f6f6f6;padding:1px 3px}
.status{font-weight:bold;padding:4px 8px;display:inline-block}.ok{background:#dff3df}.fail{background:#f8d7d7}
.new{color:#b00;font-weight:bold}.known{color:#555}.unreproduced{color:#886}
a{color:#0645ad}.links a{margin-right:.7em})";

std::string escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

std::string str(const Json& j) {
    if (j.is_string()) return j.get<std::string>();
    if (j.is_null()) return "-";
    if (j.is_number_float()) return fmt::format("{:.6g}", j.get<double>());
    return j.dump();
}

std::string cell(const Json& j) { return "<td>" + escape(str(j)) + "</td>"; }
std::string number_cell(const Json& j) { return "<td class=\"n\">" + escape(str(j)) + "</td>"; }

std::string anchor(const fs::path& target, const fs::path& page_dir, std::string_view label) {
    return fmt::format("<a href=\"{}\">{}</a>", escape(relative_link(target, page_dir)), escape(label));
}

// The finding's trace, page and explain text, and its variant's lifecycle graph when rendered.
std::string finding_links(const Json& f, const Json& variant, const fs::path& page_dir) {
    std::string out = "<td class=\"links\">";
    for (const char* which : {"trace", "page", "explain"})
        if (const fs::path file = finding_file(f, which); !file.empty()) out += anchor(file, page_dir, which);
    if (const Json& svg = variant["lifecycle_graph"]["svg"]; svg.is_string())
        out += anchor(svg.get<std::string>(), page_dir, "lifecycle graph");
    return out + "</td>";
}

std::string finding_row(const Json& f, const Json& variant, const fs::path& page_dir) {
    const std::string status = f["status"];
    const std::string label = status == "new" ? "NEW" : status;
    return fmt::format("<tr><td class=\"{}\">{}</td>{}{}<td><code>{}</code></td>{}<td>{}</td>{}<td><code>{}</code></td></tr>\n",
                       escape(status), escape(label), cell(causes_label(f).empty() ? Json("-") : Json(causes_label(f))),
                       cell(variant["variant"]), escape(str(f["signature"])), number_cell(f["artifacts"]),
                       f["first_seen_this_run"].get<bool>() ? "this run" : "an earlier run",
                       finding_links(f, variant, page_dir), escape(str(f["repro"])));
}

std::string findings_table(const Json& r, const fs::path& page_dir) {
    std::string rows;
    for (const Json& v : r["variants"])
        for (const Json& f : v["findings"]) rows += finding_row(f, v, page_dir);
    if (rows.empty()) return "<h2>Findings</h2>\n<p>None in this run.</p>\n";
    return "<h2>Findings</h2>\n<table id=\"findings\">\n<tr><th>status</th><th>registry causes</th><th>variant</th>"
           "<th>signature</th><th>artifacts</th><th>first seen</th><th>files</th><th>repro</th></tr>\n" +
           rows + "</table>\n";
}

std::string variants_table(const Json& r, const fs::path& page_dir) {
    std::string out = "<h2>Variants</h2>\n<table>\n<tr><th>variant</th><th>expected</th><th>time (s)</th>"
                      "<th>executions</th><th>exec/s per job</th><th>exec/s single process</th><th>findings new</th>"
                      "<th>findings known</th><th>lifecycle edges</th><th>graph</th></tr>\n";
    for (const Json& v : r["variants"]) {
        const Json& c = v["coverage"];
        const std::string edges = c.is_null() ? "-" : str(c["edges_exercised"]) + " of " + str(c["edges_modelled"]);
        const Json& svg = v["lifecycle_graph"]["svg"];
        out += "<tr>" + cell(v["variant"]) + cell(v["expected_clean"].get<bool>() ? "clean" : "broken") +
               number_cell(v["seconds"]) + number_cell(v["executions"]) + number_cell(v["exec_per_sec_per_job"]) +
               number_cell(v["single_process"]["exec_per_sec"]) + number_cell(v["findings_new"]) +
               number_cell(v["findings_known"]) + cell(edges) + "<td>" +
               (svg.is_string() ? anchor(svg.get<std::string>(), page_dir, "svg") : std::string("-")) + "</td></tr>\n";
    }
    return out + "</table>\n";
}

std::string canary_section(const Json& c) {
    if (c["status"] == "skipped") return "<h2>Canary</h2>\n<p>skipped (scripts/nightly --no-canary)</p>\n";
    return fmt::format("<h2>Canary</h2>\n<p>{} from an empty corpus must find <code>{}</code>: <b>{}</b> ({} s, {} run(s))</p>\n",
                       escape(str(c["variant"])), escape(str(c["signature"])), escape(str(c["status"])),
                       escape(str(c["seconds"])), escape(str(c["runs"])));
}

std::string header(const Json& r) {
    const bool ok = r["exit_code"].get<int>() == 0;
    return fmt::format(
        "<h1>kvsim nightly campaign {}</h1>\n<p><span class=\"status {}\">{} (exit {})</span></p>\n"
        "<p>started {}, {} s wall; budget {} min, {} job(s); commit <code>{}</code>; findings: {} new, {} known</p>\n",
        escape(str(r["run_id"])), ok ? "ok" : "fail", escape(report_status_line(r)), escape(str(r["exit_code"])),
        escape(str(r["started"])), escape(str(r["wall_seconds"])), escape(str(r["minutes"])), escape(str(r["jobs"])),
        escape(str(r["commit"])), escape(str(r["findings_new"])), escape(str(r["findings_known"]))) +
           canary_section(r["canary"]);
}

}  // namespace

std::string relative_link(const fs::path& target, const fs::path& page_dir) {
    const fs::path from = fs::absolute(page_dir).lexically_normal();
    const std::string rel = fs::absolute(target).lexically_normal().lexically_relative(from).generic_string();
    std::string out;
    for (const unsigned char c : rel) {
        if (std::isalnum(c) || std::string_view("-._~/").find(char(c)) != std::string_view::npos) out += char(c);
        else out += fmt::format("%{:02X}", c);
    }
    return out;
}

fs::path finding_file(const Json& finding, const char* which) {
    const Json& name = finding.value("files", Json::object()).value(which, Json(nullptr));
    if (!name.is_string()) return {};
    return fs::path(finding["dir"].get<std::string>()) / name.get<std::string>();
}

std::string render_report_html(const Json& r, const fs::path& page_dir) {
    return fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                       "<title>kvsim nightly {}</title>\n<style>{}</style></head>\n<body>\n{}{}{}</body></html>\n",
                       escape(str(r["run_id"])), kStyle, header(r), variants_table(r, page_dir),
                       findings_table(r, page_dir));
}

}  // namespace kvsim
