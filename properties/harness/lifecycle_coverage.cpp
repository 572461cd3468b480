#include "properties/harness/lifecycle_coverage.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "properties/harness/run_trace.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxRejectedExamples = 10;

void add_directory(const std::string& dir, bool any_name, std::vector<std::string>& files) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        if (any_name || it->path().extension() == ".trace") files.push_back(it->path().string());
    }
}

// The variant a trace runs under when no fixed one is given; cached by name.
class VariantChooser {
public:
    explicit VariantChooser(const std::optional<Variant>& fixed) : fixed_(fixed) {}

    std::optional<Variant> choose(const Trace& trace) {
        if (fixed_) return fixed_;
        std::string name = trace.run.variant;
        if (name.empty() && !trace.expectations.empty()) name = trace.expectations.front().variant;
        if (name.empty()) return std::nullopt;
        if (!cache_.contains(name)) {
            std::string error;
            cache_[name] = resolve_variant(name, &error);
        }
        return cache_.at(name);
    }

private:
    std::optional<Variant> fixed_;
    std::map<std::string, std::optional<Variant>> cache_;
};

// A file named on the command line is an input: its error ends the command, as `kvsim run`'s
// would. Files found under a directory are counted and the first few errors listed.
void tally_file(const std::string& file, bool named, VariantChooser& chooser, LifecycleCoverage& coverage) {
    ++coverage.files;
    Trace trace;
    try {
        trace = parse_trace_file(file);
    } catch (const InputError& error) {
        if (named) throw;
        ++coverage.rejected;
        if (coverage.rejected_examples.size() < kMaxRejectedExamples) coverage.rejected_examples.push_back(error.what());
        return;
    }
    const std::optional<Variant> variant = chooser.choose(trace);
    if (!variant) {
        if (named)
            throw InputError(file, 0, "run.variant",
                             "no variant: give --variant, a 'run variant=' line or an expect line");
        ++coverage.without_variant;
        return;
    }
    const RunResult result = run_trace(trace, *variant);
    ++coverage.traces_run;
    ++coverage.verdicts[result.internal_error ? "internal-error" : std::string(to_string(result.verdict))];
    for (const auto& key : result.lifecycle_edges) ++coverage.edge_traces[key];
}

void classify_edges(LifecycleCoverage& coverage) {
    const LifecycleGraph& graph = LifecycleGraph::upstream();
    for (const auto& e : graph.edges()) {
        coverage.edges_modelled += e.modelled ? 1 : 0;
        if (coverage.traces_of(e.key) > 0)
            (e.modelled ? coverage.exercised : coverage.mislabelled).push_back(&e);
        else
            (e.modelled ? coverage.never_reached : coverage.not_modelled).push_back(&e);
    }
    for (const auto& [key, n] : coverage.edge_traces)
        if (graph.find_edge(key) == nullptr) coverage.non_edges.emplace_back(key, n);
}

nlohmann::ordered_json edge_keys(const std::vector<const LifecycleEdgeInfo*>& edges) {
    nlohmann::ordered_json keys = nlohmann::ordered_json::array();
    for (const auto* e : edges) keys.push_back(e->key);
    return keys;
}

nlohmann::ordered_json edges_json(const LifecycleCoverage& coverage) {
    nlohmann::ordered_json edges = nlohmann::ordered_json::array();
    for (const auto& e : LifecycleGraph::upstream().edges())
        edges.push_back({{"key", e.key},
                         {"from", std::string(to_string(e.from))},
                         {"to", std::string(to_string(e.to))},
                         {"name", e.name},
                         {"modelled", e.modelled},
                         {"traces", coverage.traces_of(e.key)}});
    return edges;
}

std::string edge_lines(const std::vector<const LifecycleEdgeInfo*>& edges, const LifecycleCoverage& coverage,
                       std::string_view count_text) {
    std::string out;
    for (const auto* e : edges)
        out += fmt::format("  {:>6}  {:<50} {}\n",
                           count_text.empty() ? std::to_string(coverage.traces_of(e->key)) : std::string(count_text),
                           e->key, e->name);
    return out;
}

}  // namespace

int LifecycleCoverage::traces_of(const std::string& key) const {
    const auto it = edge_traces.find(key);
    return it == edge_traces.end() ? 0 : it->second;
}

TraceFiles find_trace_files(const std::vector<std::string>& paths, bool any_name) {
    TraceFiles found;
    for (const auto& path : paths) {
        std::error_code ec;
        if (fs::is_directory(path, ec)) {
            add_directory(path, any_name, found.files);
        } else if (fs::is_regular_file(path, ec)) {
            found.files.push_back(path);
            found.named.insert(path);
        } else {
            found.missing = path;
            return found;
        }
    }
    std::sort(found.files.begin(), found.files.end());
    found.files.erase(std::unique(found.files.begin(), found.files.end()), found.files.end());
    return found;
}

LifecycleCoverage measure_lifecycle_coverage(const std::vector<std::string>& files,
                                             const std::optional<Variant>& fixed_variant,
                                             const std::set<std::string>& named) {
    LifecycleCoverage coverage;
    VariantChooser chooser(fixed_variant);
    for (const auto& file : files) tally_file(file, named.contains(file), chooser, coverage);
    classify_edges(coverage);
    return coverage;
}

nlohmann::ordered_json coverage_json(const LifecycleCoverage& coverage, const std::string& variant_flag) {
    using nlohmann::ordered_json;
    ordered_json j;
    j["files"] = coverage.files;
    j["traces_run"] = coverage.traces_run;
    j["rejected"] = coverage.rejected;
    j["without_variant"] = coverage.without_variant;
    j["variant"] = variant_flag.empty() ? ordered_json(nullptr) : ordered_json(variant_flag);
    j["verdicts"] = coverage.verdicts;
    j["edges_total"] = LifecycleGraph::upstream().edges().size();
    j["edges_modelled"] = coverage.edges_modelled;
    j["edges_exercised"] = coverage.exercised.size();
    j["edges"] = edges_json(coverage);
    j["exercised"] = edge_keys(coverage.exercised);
    j["never_reached"] = edge_keys(coverage.never_reached);
    j["not_modelled"] = edge_keys(coverage.not_modelled);
    j["mislabelled"] = edge_keys(coverage.mislabelled);
    ordered_json non_edges = ordered_json::array();
    for (const auto& [key, n] : coverage.non_edges) non_edges.push_back({{"key", key}, {"traces", n}});
    j["non_edges"] = non_edges;
    j["rejected_examples"] = coverage.rejected_examples;
    return j;
}

std::string render_coverage(const LifecycleCoverage& coverage, const std::string& variant_flag) {
    std::string out = fmt::format("kvsim coverage: {} traces run ({} files, {} rejected, {} without a variant){}\n",
                                  coverage.traces_run, coverage.files, coverage.rejected, coverage.without_variant,
                                  variant_flag.empty() ? "" : " under " + variant_flag);
    if (!coverage.verdicts.empty()) {
        out += "verdicts:";
        for (const auto& [v, n] : coverage.verdicts) out += fmt::format(" {}={}", v, n);
        out += "\n";
    }
    out += fmt::format("lifecycle edges exercised: {} of {} modelled ({} upstream edges)\n", coverage.exercised.size(),
                       coverage.edges_modelled, LifecycleGraph::upstream().edges().size());
    out += edge_lines(coverage.exercised, coverage, "");
    out += fmt::format("never reached: {}\n", coverage.never_reached.size());
    out += edge_lines(coverage.never_reached, coverage, "0");
    out += fmt::format("not modelled by kvsim (upstream only): {}\n", coverage.not_modelled.size());
    out += edge_lines(coverage.not_modelled, coverage, "-");
    if (!coverage.mislabelled.empty()) {
        out += fmt::format("made by a trace although marked upstream only (a kvsim bug): {}\n",
                           coverage.mislabelled.size());
        out += edge_lines(coverage.mislabelled, coverage, "");
    }
    if (!coverage.non_edges.empty()) {
        out += fmt::format("NOT lifecycle edges (lifecycle_transition violations): {}\n", coverage.non_edges.size());
        for (const auto& [key, n] : coverage.non_edges) out += fmt::format("  {:>6}  {}\n", n, key);
    }
    for (const auto& example : coverage.rejected_examples) out += "rejected: " + example + "\n";
    return out;
}

}  // namespace kvsim
