// kvsim explore: swarm-style random search (DESIGN §7, §8). Each seed draws its own knobs and
// a small trace (fuzz/swarm/swarm.h), runs it under one variant, and every failing seed is printed
// with the command that regenerates and reruns exactly that trace.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "fuzz/swarm/swarm.h"
#include "sim/variant/variant.h"
#include "properties/harness/exit_codes.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"

namespace kvsim::cli {
namespace {

struct Tally {
    int count = 0;
    std::uint64_t first_seed = 0;
};

std::string failure_kind(const RunResult& result) {
    return result.internal_error ? std::string("internal-error") : result.signature;
}

std::string verdict_text(const RunResult& result) {
    return result.internal_error ? std::string("internal-error") : std::string(to_string(result.verdict));
}

std::string directory_name(std::string signature) {
    std::replace(signature.begin(), signature.end(), ':', '_');
    return signature;
}

}  // namespace

Command add_explore_command(CLI::App& app) {
    struct Options {
        std::uint64_t seeds = 0;
        std::uint64_t first_seed = 1;
        std::string variant = std::string(default_variant());
        std::string role = "any";
        std::string out_dir;
        std::uint64_t progress = 100;
        bool print_trace = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "explore", "Swarm-style random search: generate one trace per seed, run it, print every failing seed");
    cmd->add_option("--seeds", opts->seeds, "Number of seeds to run")->required()->check(CLI::Range(1, 100'000'000));
    cmd->add_option("--seed", opts->first_seed, "First seed (default 1)");
    cmd->add_option("--variant", opts->variant, fmt::format("Upstream variant, e.g. v0.29.0 or v0.29.0+pr55066 (default {})", default_variant()));
    cmd->add_option("--role", opts->role, "kv_role of every connector: any (drawn per connector), kv_consumer, "
                                          "kv_both or kv_producer (default any)");
    cmd->add_option("--out", opts->out_dir,
                    "Write each failing trace to DIR/<signature>/seed-S.trace (':' becomes '_')");
    cmd->add_option("--progress", opts->progress, "Progress line on stderr every K seeds (0: none; default 100)");
    cmd->add_flag("--print-trace", opts->print_trace, "Print every generated trace before its result");

    return [opts]() -> int {
        std::string error;
        const auto variant = resolve_variant(opts->variant, &error);
        if (!variant) {
            std::cerr << "kvsim: --variant: " << error << "\n";
            return exit_code::kUsage;
        }
        const auto role = parse_role_choice(opts->role);
        if (!role) {
            std::cerr << "kvsim: --role: unknown role '" << opts->role
                      << "' (expected any, kv_consumer, kv_both or kv_producer)\n";
            return exit_code::kUsage;
        }
        if (opts->first_seed > std::numeric_limits<std::uint64_t>::max() - (opts->seeds - 1)) {
            std::cerr << "kvsim: --seed: seeds " << opts->first_seed << " + " << opts->seeds
                      << " overflow 64 bits\n";
            return exit_code::kUsage;
        }
        if (!opts->out_dir.empty()) {
            std::error_code ec;
            std::filesystem::create_directories(opts->out_dir, ec);
            if (ec) {
                std::cerr << "kvsim: --out: cannot create " << opts->out_dir << ": " << ec.message() << "\n";
                return exit_code::kUsage;
            }
        }

        SwarmOptions swarm;
        swarm.role = *role;
        swarm.variant = opts->variant;
        const std::string role_text(to_string(*role));
        std::map<std::string, Tally> failures;  // sorted by signature
        std::uint64_t passes = 0;
        std::uint64_t failed = 0;
        bool internal_error = false;

        for (std::uint64_t i = 0; i < opts->seeds; ++i) {
            const std::uint64_t seed = opts->first_seed + i;
            const SwarmCase swarm_case = swarm_case_for_seed(seed, swarm);
            const std::string repro = fmt::format("kvsim explore --seed {} --seeds 1 --variant {} --role {}", seed,
                                                  opts->variant, role_text);
            const std::string header = fmt::format("# {}\n# knobs: {}\n", repro, describe(swarm_case.config));
            if (opts->print_trace) std::cout << header << print_trace(swarm_case.trace) << std::flush;

            RunResult result;
            try {
                validate_trace(swarm_case.trace, fmt::format("seed-{}", seed));
                result = run_trace(swarm_case.trace, *variant);
            } catch (const InputError& bad) {
                // The generator promises valid traces: an invalid one is a bug in kvsim.
                result.internal_error = true;
                result.message = fmt::format("generated trace is invalid: {}", bad.what());
            }
            const bool pass = !result.internal_error && result.verdict == Verdict::pass;
            if (pass) {
                ++passes;
            } else {
                ++failed;
                internal_error = internal_error || result.internal_error;
                const std::string kind = failure_kind(result);
                Tally& tally = failures[kind];
                if (tally.count++ == 0) tally.first_seed = seed;
                std::string line = fmt::format("seed={} verdict={} signature={} steps={} -- {} | repro: {}", seed,
                                               verdict_text(result), kind, result.steps, result.message, repro);
                if (!opts->out_dir.empty()) {
                    const auto dir = std::filesystem::path(opts->out_dir) / directory_name(kind);
                    const auto path = dir / fmt::format("seed-{}.trace", seed);
                    std::error_code ec;
                    std::filesystem::create_directories(dir, ec);
                    std::ofstream file(path, std::ios::binary);
                    file << header << print_trace(swarm_case.trace);
                    file.close();
                    if (ec || !file) {
                        std::cerr << "kvsim: --out: cannot write " << path.string() << "\n";
                        return exit_code::kUsage;
                    }
                    line += fmt::format(" | trace: kvsim run {} --variant {}", path.string(), opts->variant);
                }
                std::cout << line << "\n" << std::flush;
            }
            const std::uint64_t done = i + 1;
            if (opts->progress > 0 && done % opts->progress == 0 && done < opts->seeds)
                std::cerr << fmt::format("explore: {}/{} seeds, {} failures, {} signatures\n", done, opts->seeds,
                                         failed, failures.size());
        }

        std::cout << fmt::format("explore: variant={} role={} seeds={}..{} ({}): {} passed, {} failed, {} signatures\n",
                                 opts->variant, role_text, opts->first_seed, opts->first_seed + opts->seeds - 1,
                                 opts->seeds, passes, failed, failures.size());
        std::size_t width = 0;
        for (const auto& [kind, tally] : failures) width = std::max(width, kind.size());
        for (const auto& [kind, tally] : failures)
            std::cout << fmt::format("  {:<{}} {:>6}  first seed={}\n", kind, width, tally.count, tally.first_seed);
        if (internal_error) return exit_code::kInternalError;
        return failed == 0 ? exit_code::kPass : 1;
    };
}

}  // namespace kvsim::cli
