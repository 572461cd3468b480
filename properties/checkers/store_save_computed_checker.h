#pragma once
#include "properties/checkers/checker.h"

namespace kvsim {

// save_beyond_computed_tokens: a store job never covers tokens that are not computed by the end of
// the step that emits it. A save past the core's num_computed_tokens writes KV the model never
// produced for those positions (a failed load's garbage, or nothing) under valid block hashes.
// Judged after the step, against the request's num_computed_tokens once update_from_output has run
// (so a rewind after a failed load counts); a request freed in that step is judged with the count it
// had when freed: every scheduled token for a normal finish, the rewound count for one that ended
// FINISHED_ERROR under kv_load_failure_policy=fail (its save still stores the failed load's blocks).
class StoreSaveComputedChecker : public Checker {
public:
    std::string_view name() const override { return "store_save_computed_checker"; }
    void check(const Engine& engine, std::vector<Violation>& out) const override;
};

}  // namespace kvsim
