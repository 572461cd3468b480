#include "properties/findings/classification_view.h"

#include <fmt/format.h>

namespace kvsim {
namespace {

std::string causes_text(const Classification& c) {
    std::string out;
    for (const KnownEntry* e : c.causes)
        out += fmt::format("{}{} (fix {})", out.empty() ? "" : ", then ", e->id, e->fix.label());
    return out;
}

}  // namespace

std::string classification_line(const Classification& c) {
    switch (c.outcome) {
        case Outcome::none: return {};
        case Outcome::known:
            return fmt::format("registry: known: {}{}", causes_text(c),
                               c.unexplored ? "; what the last cause may hide was not run (its fix is not modelled)" : "");
        case Outcome::new_finding:
            if (c.causes.empty()) return fmt::format("registry: NEW: {}", c.residue_signature);
            return fmt::format("registry: NEW: {} under {}, after the known causes {}", c.residue_signature,
                               c.residue_variant, causes_text(c));
    }
    return {};
}

Json classification_json(const Classification& c) {
    Json causes = Json::array();
    for (const KnownEntry* e : c.causes)
        causes.push_back({{"id", e->id},
                          {"class", to_string(e->finding_class)},
                          {"upstream", {{"state", to_string(e->upstream.state)}, {"references", e->upstream.references}}},
                          {"fix", e->fix.label()}});
    Json residue = nullptr;
    if (c.is_new())
        residue = {{"signature", c.residue_signature}, {"message", c.residue_message}, {"variant", c.residue_variant}};
    return {{"outcome", to_string(c.outcome)}, {"causes", causes},      {"unexplored", c.unexplored},
            {"residue", residue},              {"reruns", c.reruns.made}};
}

}  // namespace kvsim
