#pragma once
// A classification (classify.h) as people and tools read it: one line for the terminal, and JSON for
// `kvsim run --json`, triage and the run page.
#include <string>

#include "properties/findings/classify.h"
#include "properties/harness/run_json.h"

namespace kvsim {

// "registry: known: a (fix +p), then b (fix flags f=v)", "registry: NEW: SIG under V, after a (fix +p)",
// "registry: NEW: SIG"; "" when there is nothing to classify.
std::string classification_line(const Classification& classification);

// {"outcome": "known"|"new"|"none", "causes": [{"id", "class", "upstream": {"state", "references"},
// "fix"}...], "unexplored": bool, "residue": {"signature", "message", "variant"} or null, "reruns": N}
Json classification_json(const Classification& classification);

}  // namespace kvsim
