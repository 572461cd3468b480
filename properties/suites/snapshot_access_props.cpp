// The snapshot-and-access family (tests/README.md, Property tests), the headline property and its neighbours: no store job names a block outside the
// request's current block table (with a block for every token it writes), no rank or P2P send
// reads a freed or reused block, loads write only into the request's own blocks; upstream's own
// "Missing current block table" assertion counts as a failure of the same property.
#include "properties/suites/family_macros.h"
#include "properties/suites/suite_common.h"

namespace kvsim::propgen {
namespace {

constexpr int kCases = 800;

void snapshot_access(const std::string& variant) { check_family_property(Family::snapshot_access, variant, kCases); }

KVSIM_CLEAN_PRESET_TESTS("snapshot and block access", "[property][snapshot]", snapshot_access)

}  // namespace
}  // namespace kvsim::propgen
