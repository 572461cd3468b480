#pragma once
// What a root cause needs, computed (never typed): for each registry entry, the settings each witness
// differs in from upstream's defaults for its variant (sim/trace/upstream_settings.h), the settings
// every witness needs, and whether one witness reaches it with all of upstream's defaults. `kvsim
// findings` prints it and properties/findings/README.md carries its table (tests/test_entry_settings.cpp).
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "properties/findings/registry.h"
#include "sim/trace/upstream_settings.h"

namespace kvsim {

struct WitnessSettings {
    Witness witness;
    std::vector<SettingDifference> settings;  // groups setting and test_double only
};

struct EntrySettings {
    const KnownEntry* entry = nullptr;
    std::vector<WitnessSettings> witnesses;
    // The settings every witness differs in, by key, in the first witness's order; a value the
    // witnesses do not share is their values joined by '|'.
    std::vector<SettingDifference> needs;
    // Some witness differs from upstream's defaults in no setting and runs no test double.
    bool reachable_with_defaults = false;
};

// Reads a witness trace by its repository-relative path; throws InputError when it cannot.
using WitnessLoader = std::function<Trace(const std::string& path)>;
// Loads from `root`/PATH.
WitnessLoader witness_loader(std::string root);

// Throws InputError naming the registry line when a witness's variant does not resolve.
EntrySettings entry_settings(const KnownEntry& entry, const WitnessLoader& load, std::string_view registry_file);
std::vector<EntrySettings> registry_settings(const Registry& registry, const WitnessLoader& load);

// One markdown table, one row per entry: id, class, upstream state, reachable with defaults, needs, fix.
std::string findings_table(const std::vector<EntrySettings>& entries);

}  // namespace kvsim
