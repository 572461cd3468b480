// Block-pool family (tests/README.md, Property tests): ref counts equal the holders (block tables plus store-job pins), ref 0 <=> in the
// free queue, no double free, the null block is never handed out, freed or hashed, the prefix map
// names only blocks carrying its hash.
#include "properties/suites/family_macros.h"
#include "properties/suites/suite_common.h"

namespace kvsim::propgen {
namespace {

constexpr int kCases = 800;

void block_pool(const std::string& variant) { check_family_property(Family::block_pool, variant, kCases); }

KVSIM_CLEAN_PRESET_TESTS("ref counts and free queue", "[property][block_pool]", block_pool)

}  // namespace
}  // namespace kvsim::propgen
