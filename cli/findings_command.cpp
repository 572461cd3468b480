// kvsim findings: every root cause of the registry with the settings its witnesses need, computed
// against upstream's defaults (properties/findings/entry_settings.h). `--markdown` prints the table
// properties/findings/README.md carries (scripts/update-findings-doc).
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/registry_option.h"
#include "properties/findings/entry_settings.h"
#include "properties/harness/exit_codes.h"
#include "sim/trace/input_error.h"

namespace kvsim::cli {
namespace {

struct FindingsOptions {
    std::string registry;
    std::string root = ".";
    bool json = false;
    bool markdown = false;
};

nlohmann::ordered_json differences_json(const std::vector<SettingDifference>& diff) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const SettingDifference& d : diff)
        out.push_back({{"group", to_string(d.group)}, {"key", d.key}, {"value", d.value},
                       {"upstream", d.upstream}, {"source", d.source}});
    return out;
}

nlohmann::ordered_json entry_json(const EntrySettings& e) {
    nlohmann::ordered_json witnesses = nlohmann::ordered_json::array();
    for (const WitnessSettings& w : e.witnesses)
        witnesses.push_back({{"trace", w.witness.trace}, {"variant", w.witness.variant},
                             {"settings", differences_json(w.settings)}});
    const KnownEntry& k = *e.entry;
    return {{"id", k.id},
            {"class", to_string(k.finding_class)},
            {"upstream", to_string(k.upstream.state)},
            {"references", k.upstream.references},
            {"reachable_with_defaults", e.reachable_with_defaults},
            {"needs", differences_json(e.needs)},
            {"fix", k.fix.label()},
            {"witnesses", witnesses}};
}

void print_text(const std::vector<EntrySettings>& entries) {
    for (const EntrySettings& e : entries) {
        const KnownEntry& k = *e.entry;
        std::cout << fmt::format("{}  {}  upstream {}  fix {}\n", k.id, to_string(k.finding_class),
                                 to_string(k.upstream.state), k.fix.label());
        if (e.reachable_with_defaults) std::cout << "  reachable with upstream's defaults\n";
        for (const SettingDifference& d : e.needs) std::cout << "  needs " << describe(d) << "\n";
        for (const WitnessSettings& w : e.witnesses)
            std::cout << fmt::format("  witness {} {}: {} setting(s) off upstream's defaults\n", w.witness.trace,
                                     w.witness.variant, w.settings.size());
    }
}

int run_findings(const FindingsOptions& o) {
    int failure = 0;
    const Registry* registry = registry_from_option(o.registry, &failure);
    if (registry == nullptr) return failure;
    std::vector<EntrySettings> entries;
    try {
        entries = registry_settings(*registry, witness_loader(o.root));
    } catch (const InputError& e) {
        std::cerr << e.what() << "\n";
        return exit_code::kInputError;
    }
    if (o.markdown) {
        std::cout << findings_table(entries);
    } else if (o.json) {
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (const EntrySettings& e : entries) out.push_back(entry_json(e));
        std::cout << out.dump(2) << "\n";
    } else {
        print_text(entries);
    }
    return exit_code::kPass;
}

}  // namespace

Command add_findings_command(CLI::App& app) {
    CLI::App* cmd = app.add_subcommand(
        "findings", "Print every known root cause and the settings its witnesses need, against upstream's defaults");
    auto o = std::make_shared<FindingsOptions>();
    cmd->add_option("--registry", o->registry, "Registry file (default: the built-in known_findings.txt)");
    cmd->add_option("--root", o->root, "Repository root the witness paths are relative to")->capture_default_str();
    auto* json = cmd->add_flag("--json", o->json, "One JSON array: entries, their needs and each witness's settings");
    cmd->add_flag("--markdown", o->markdown, "The table of properties/findings/README.md")->excludes(json);
    return [o] { return run_findings(*o); };
}

}  // namespace kvsim::cli
