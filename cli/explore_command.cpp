// kvsim explore: swarm-style random search (fuzz/README.md, Exploring; fuzz/swarm/explore.h does the
// work). Every failing seed is printed with the command that regenerates and reruns exactly that trace.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/registry_option.h"
#include "fuzz/swarm/explore.h"
#include "properties/harness/exit_codes.h"
#include "sim/variant/variant.h"

namespace kvsim::cli {

struct ExploreOptions {
    std::uint64_t seeds = 0;
    std::uint64_t first_seed = 1;
    std::string variant = std::string(default_variant());
    std::string role = "any";
    std::string out_dir;
    std::uint64_t progress = 100;
    bool print_trace = false;
    bool any_failure = false;
    std::string registry;  // empty: the built-in registry
    std::string async_scheduling = "drawn";  // drawn | on | off
};

namespace {

// The search the options ask for, or nullopt after printing why they do not make one.
std::optional<ExploreConfig> explore_config(const ExploreOptions& options, const Registry* registry) {
    std::string error;
    const auto variant = resolve_variant(options.variant, &error);
    if (!variant) {
        std::cerr << "kvsim: --variant: " << error << "\n";
        return std::nullopt;
    }
    const auto role = parse_role_choice(options.role);
    if (!role) {
        std::cerr << "kvsim: --role: unknown role '" << options.role
                  << "' (expected any, kv_consumer, kv_both or kv_producer)\n";
        return std::nullopt;
    }
    if (options.first_seed > std::numeric_limits<std::uint64_t>::max() - (options.seeds - 1)) {
        std::cerr << "kvsim: --seed: seeds " << options.first_seed << " + " << options.seeds << " overflow 64 bits\n";
        return std::nullopt;
    }
    if (!options.out_dir.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(options.out_dir, ec);
        if (ec) {
            std::cerr << "kvsim: --out: cannot create " << options.out_dir << ": " << ec.message() << "\n";
            return std::nullopt;
        }
    }
    return ExploreConfig{.first_seed = options.first_seed,
                         .seeds = options.seeds,
                         .variant = *variant,
                         .role = *role,
                         .out_dir = options.out_dir,
                         .progress = options.progress,
                         .print_trace = options.print_trace,
                         .registry = registry,
                         .any_failure = options.any_failure,
                         .async_scheduling = options.async_scheduling == "drawn"
                                                 ? std::nullopt
                                                 : std::optional<bool>(options.async_scheduling == "on")};
}

}  // namespace

int run_explore(const ExploreOptions& options) {
    int failure = 0;
    const Registry* registry = registry_from_option(options.registry, &failure);
    if (registry == nullptr) return failure;
    const auto config = explore_config(options, registry);
    if (!config) return exit_code::kUsage;
    const ExploreSummary summary = explore(*config, std::cout, std::cerr);
    if (!summary.unwritable.empty()) {
        std::cerr << "kvsim: --out: cannot write " << summary.unwritable << "\n";
        return exit_code::kUsage;
    }
    std::cout << render_explore_summary(summary, *config);
    if (summary.internal_error) return exit_code::kInternalError;
    const bool failed = summary.failed > 0 || (options.any_failure && summary.known > 0);
    return failed ? 1 : exit_code::kPass;
}

Command add_explore_command(CLI::App& app) {
    auto opts = std::make_shared<ExploreOptions>();
    CLI::App* cmd = app.add_subcommand(
        "explore", "Swarm-style random search: generate one trace per seed, run it, print every failing seed");
    cmd->add_option("--seeds", opts->seeds, "Number of seeds to run")->required()->check(CLI::Range(1, 100'000'000));
    cmd->add_option("--seed", opts->first_seed, "First seed (default 1)");
    cmd->add_option("--variant", opts->variant,
                    fmt::format("Upstream variant, e.g. v0.29.0 or v0.29.0+pr55066 (default {})", default_variant()));
    cmd->add_option("--role", opts->role, "kv_role of every connector: any (drawn per connector), kv_consumer, "
                                          "kv_both or kv_producer (default any)");
    cmd->add_option("--out", opts->out_dir,
                    "Write each failing trace to DIR/<signature>/seed-S.trace (':' becomes '_')");
    cmd->add_option("--progress", opts->progress, "Progress line on stderr every K seeds (0: none; default 100)");
    cmd->add_flag("--print-trace", opts->print_trace, "Print every generated trace before its result");
    cmd->add_flag("--any-failure", opts->any_failure,
                  "Print known findings too and exit 1 on any failure (default: only a NEW finding fails)");
    cmd->add_option("--async-scheduling", opts->async_scheduling,
                    "Scheduling mode of every seed: drawn (default: on or off per seed, half each), on or off "
                    "(the rest of each seed's trace unchanged)")
        ->check(CLI::IsMember({"drawn", "on", "off"}));
    cmd->add_option("--registry", opts->registry,
                    "Registry of known findings (default: the built-in properties/findings/known_findings.txt)");
    return [opts] { return run_explore(*opts); };
}

}  // namespace kvsim::cli
