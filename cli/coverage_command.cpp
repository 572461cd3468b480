// kvsim coverage: which request lifecycle edges (properties/lifecycle/lifecycle_graph.h) a set
// of traces exercises, and which it never reaches.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "properties/lifecycle/lifecycle_graph.h"
#include "cli/commands.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"

namespace kvsim::cli {
namespace {

namespace fs = std::filesystem;

struct CoverageTally {
    int files = 0;
    int run = 0;
    int rejected = 0;         // not a valid trace
    int without_variant = 0;  // no --variant, no run variant, no expect line
    std::map<std::string, int> verdicts;
    std::map<std::string, int> edge_traces;  // key -> traces that made the transition
    std::vector<std::string> rejected_examples;
};

constexpr std::size_t kMaxRejectedExamples = 10;

}  // namespace

Command add_coverage_command(CLI::App& app) {
    struct Options {
        std::vector<std::string> paths;
        std::string variant;
        bool any_name = false;
        bool json = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "coverage", "Run every trace under the directories; list the request lifecycle edges exercised and never reached");
    cmd->add_option("paths", opts->paths, "Directories (searched recursively for *.trace) or trace files")->required();
    cmd->add_option("--variant", opts->variant,
                    "Run every trace under this variant (default: each trace's run variant, else its first expect line)");
    cmd->add_flag("--any-name", opts->any_name,
                  "Take every regular file under the directories, not only *.trace (fuzzer corpora); invalid ones are counted as rejected");
    cmd->add_flag("--json", opts->json, "Print one JSON object instead of the table");

    return [opts]() -> int {
        std::optional<Variant> fixed_variant;
        if (!opts->variant.empty()) {
            std::string error;
            fixed_variant = resolve_variant(opts->variant, &error);
            if (!fixed_variant) {
                std::cerr << "kvsim: --variant: " << error << "\n";
                return exit_code::kUsage;
            }
        }
        std::vector<std::string> files;
        for (const auto& path : opts->paths) {
            std::error_code ec;
            if (fs::is_directory(path, ec)) {
                for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
                     !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
                    if (!it->is_regular_file(ec)) continue;
                    if (opts->any_name || it->path().extension() == ".trace") files.push_back(it->path().string());
                }
            } else if (fs::is_regular_file(path, ec)) {
                files.push_back(path);
            } else {
                std::cerr << "kvsim: coverage: " << path << ": no such file or directory\n";
                return exit_code::kUsage;
            }
        }
        std::sort(files.begin(), files.end());
        files.erase(std::unique(files.begin(), files.end()), files.end());

        CoverageTally tally;
        std::map<std::string, std::optional<Variant>> variant_cache;
        for (const auto& file : files) {
            ++tally.files;
            Trace trace;
            try {
                trace = parse_trace_file(file);
            } catch (const InputError& error) {
                ++tally.rejected;
                if (tally.rejected_examples.size() < kMaxRejectedExamples) tally.rejected_examples.push_back(error.what());
                continue;
            }
            std::optional<Variant> variant = fixed_variant;
            if (!variant) {
                std::string name = trace.run.variant;
                if (name.empty() && !trace.expectations.empty()) name = trace.expectations.front().variant;
                if (!name.empty()) {
                    if (!variant_cache.contains(name)) {
                        std::string error;
                        variant_cache[name] = resolve_variant(name, &error);
                    }
                    variant = variant_cache.at(name);
                }
            }
            if (!variant) {
                ++tally.without_variant;
                continue;
            }
            const RunResult result = run_trace(trace, *variant);
            ++tally.run;
            ++tally.verdicts[result.internal_error ? "internal-error" : std::string(to_string(result.verdict))];
            for (const auto& key : result.lifecycle_edges) ++tally.edge_traces[key];
        }

        const LifecycleGraph& graph = LifecycleGraph::upstream();
        auto traces_of = [&](const std::string& key) { return tally.edge_traces.contains(key) ? tally.edge_traces.at(key) : 0; };
        std::vector<const LifecycleEdgeInfo*> exercised, never, unmodelled;
        int modelled = 0;
        for (const auto& e : graph.edges()) {
            modelled += e.modelled ? 1 : 0;
            if (traces_of(e.key) > 0)
                exercised.push_back(&e);
            else
                (e.modelled ? never : unmodelled).push_back(&e);
        }
        std::vector<std::pair<std::string, int>> non_edges;
        for (const auto& [key, n] : tally.edge_traces)
            if (graph.find_edge(key) == nullptr) non_edges.emplace_back(key, n);

        if (opts->json) {
            using nlohmann::ordered_json;
            ordered_json j;
            j["files"] = tally.files;
            j["traces_run"] = tally.run;
            j["rejected"] = tally.rejected;
            j["without_variant"] = tally.without_variant;
            j["variant"] = opts->variant.empty() ? ordered_json(nullptr) : ordered_json(opts->variant);
            j["verdicts"] = tally.verdicts;
            j["edges_total"] = graph.edges().size();
            j["edges_modelled"] = modelled;
            j["edges_exercised"] = exercised.size();
            ordered_json edges = ordered_json::array();
            for (const auto& e : graph.edges())
                edges.push_back({{"key", e.key},
                                 {"from", std::string(to_string(e.from))},
                                 {"to", std::string(to_string(e.to))},
                                 {"name", e.name},
                                 {"modelled", e.modelled},
                                 {"traces", traces_of(e.key)}});
            j["edges"] = edges;
            auto keys = [](const std::vector<const LifecycleEdgeInfo*>& list) {
                ordered_json a = ordered_json::array();
                for (const auto* e : list) a.push_back(e->key);
                return a;
            };
            j["exercised"] = keys(exercised);
            j["never_reached"] = keys(never);
            j["not_modelled"] = keys(unmodelled);
            ordered_json bad = ordered_json::array();
            for (const auto& [key, n] : non_edges) bad.push_back({{"key", key}, {"traces", n}});
            j["non_edges"] = bad;
            j["rejected_examples"] = tally.rejected_examples;
            std::cout << j.dump(2) << "\n";
        } else {
            std::cout << fmt::format("kvsim coverage: {} traces run ({} files, {} rejected, {} without a variant){}\n",
                                     tally.run, tally.files, tally.rejected, tally.without_variant,
                                     opts->variant.empty() ? "" : " under " + opts->variant);
            if (!tally.verdicts.empty()) {
                std::string line = "verdicts:";
                for (const auto& [v, n] : tally.verdicts) line += fmt::format(" {}={}", v, n);
                std::cout << line << "\n";
            }
            std::cout << fmt::format("lifecycle edges exercised: {} of {} modelled ({} upstream edges)\n",
                                     exercised.size(), modelled, graph.edges().size());
            for (const auto* e : exercised)
                std::cout << fmt::format("  {:>6}  {:<50} {}\n", traces_of(e->key), e->key, e->name);
            std::cout << fmt::format("never reached: {}\n", never.size());
            for (const auto* e : never) std::cout << fmt::format("  {:>6}  {:<50} {}\n", 0, e->key, e->name);
            std::cout << fmt::format("not modelled by kvsim (upstream only): {}\n", unmodelled.size());
            for (const auto* e : unmodelled) std::cout << fmt::format("  {:>6}  {:<50} {}\n", "-", e->key, e->name);
            if (!non_edges.empty()) {
                std::cout << fmt::format("NOT lifecycle edges (lifecycle_transition violations): {}\n", non_edges.size());
                for (const auto& [key, n] : non_edges) std::cout << fmt::format("  {:>6}  {}\n", n, key);
            }
            for (const auto& example : tally.rejected_examples) std::cout << "rejected: " << example << "\n";
        }
        return non_edges.empty() ? exit_code::kPass : 1;
    };
}

}  // namespace kvsim::cli
