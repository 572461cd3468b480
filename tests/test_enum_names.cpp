// One name table per enum (sim/common/enum_names.h): printing and parsing read the same rows.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "fuzz/mutator/trace_mutator.h"
#include "fuzz/swarm/swarm.h"
#include "properties/lifecycle/lifecycle_graph.h"
#include "sim/core/request.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_builder.h"
#include "sim/variant/variant.h"

using namespace kvsim;

namespace {

// Every row parses back to its value, and no two rows share a name.
template <class E, std::size_t N>
void check_table(const EnumNames<E, N>& table) {
    std::set<std::string_view> seen;
    for (const EnumName<E>& row : table) {
        INFO(row.name);
        CHECK(parse_enum(table, row.name) == row.value);
        CHECK(enum_name(table, row.value) == row.name);
        CHECK(seen.insert(row.name).second);
    }
    CHECK_FALSE(parse_enum(table, "no such name"));
    CHECK(enum_name(table, static_cast<E>(N + 7)) == "?");
}

}  // namespace

TEST_CASE("enum names: every table round-trips and has unique names", "[enum_names]") {
    check_table(kKvRoleNames);
    check_table(kVerdictNames);
    check_table(kFaultKindNames);
    check_table(kRequestStatusNames);
    check_table(kConnectorStackNames);
    check_table(kPoolPressureNames);
    check_table(kRoleChoiceNames);
    check_table(kArrivalPatternNames);
    check_table(kPresetTagNames);
}

TEST_CASE("enum names: the per-enum printers and parsers read the tables", "[enum_names]") {
    CHECK(to_string(KvRole::kv_both) == "kv_both");
    CHECK(parse_role("kv_producer") == KvRole::kv_producer);
    CHECK(parse_verdict("liveness") == Verdict::liveness);
    CHECK(parse_fault_kind("lookup_pending") == FaultKind::lookup_pending);
    CHECK(to_string(RequestStatus::waiting_for_remote_kvs) == "WAITING_FOR_REMOTE_KVS");
    CHECK_THROWS_AS(to_string(static_cast<RequestStatus>(42)), std::logic_error);
    CHECK(to_string(ConnectorStack::store_p2p) == "store+p2p");
    CHECK(parse_role_choice("any") == RoleChoice::any);
    CHECK(to_string(PresetTag::known_broken) == "known_broken");
    CHECK(fuzz::to_string(fuzz::Mutation::toggle_remote) == "toggle_remote");
    CHECK(fuzz::to_string(static_cast<fuzz::Mutation>(fuzz::kMutationCount)) == "?");
}

TEST_CASE("enum names: lifecycle states are NEW, upstream's statuses, FREED", "[enum_names]") {
    CHECK(to_string(LifecycleState::new_request) == "NEW");
    CHECK(to_string(LifecycleState::freed) == "FREED");
    for (const auto& row : kRequestStatusNames) {
        INFO(row.name);
        CHECK(to_string(lifecycle_state(row.value)) == row.name);
        CHECK(parse_lifecycle_state(row.name) == lifecycle_state(row.value));
    }
    CHECK_THROWS_AS(to_string(static_cast<LifecycleState>(kNumLifecycleStates)), std::logic_error);
}
