// Liveness (tests/README.md, Property tests), and the whole verdict: faults come early, so after them every request must
// finish and every pin be released before max_steps (which build_trace makes generous); and no
// other finding of any kind (crash, violation, internal error) may happen on the way.
#include "properties/suites/family_macros.h"
#include "properties/suites/suite_common.h"

namespace kvsim::propgen {
namespace {

constexpr int kCases = 800;

void liveness(const std::string& variant) { check_family_property(Family::other, variant, kCases); }

KVSIM_CLEAN_PRESET_TESTS("liveness and verdict pass", "[property][liveness]", liveness)

}  // namespace
}  // namespace kvsim::propgen
