// Request-state family (tests/README.md, Property tests): every live request sits in exactly the queue its status says, finished requests
// hold blocks only while a delayed free is pending, block tables belong to live requests, shared
// blocks are prefix-cache blocks, and every status change is a lifecycle edge.
#include "properties/suites/family_macros.h"
#include "properties/suites/suite_common.h"

namespace kvsim::propgen {
namespace {

constexpr int kCases = 800;

void request_state(const std::string& variant) { check_family_property(Family::request_state, variant, kCases); }

KVSIM_CLEAN_PRESET_TESTS("request state", "[property][request_state]", request_state)

}  // namespace
}  // namespace kvsim::propgen
