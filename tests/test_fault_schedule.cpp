// FaultSchedule (sim/environment/fault_schedule.h): what is armed, in effect and fired, which the
// search's idle budget reads (StallWatch, properties/checkers/liveness_checker.h).
#include <catch2/catch.hpp>

#include "sim/environment/fault_schedule.h"

namespace kvsim {
namespace {

TEST_CASE("fault schedule: an armed failure is active, not in effect, and counts once it fires", "[fault]") {
    FaultSchedule faults;
    faults.apply(FaultEvent{.kind = FaultKind::load_fail, .request_id = "r0"});
    faults.apply(FaultEvent{.kind = FaultKind::store_fail, .rank = 1});
    faults.apply(FaultEvent{.kind = FaultKind::store_fail, .rank = 1});
    CHECK(faults.active());
    CHECK_FALSE(faults.in_effect());
    CHECK(faults.fired() == 0);

    CHECK_FALSE(faults.take_load_failure("r1"));  // armed for another request
    CHECK_FALSE(faults.take_store_failure(0));
    CHECK(faults.fired() == 0);
    CHECK(faults.take_load_failure("r0"));
    CHECK_FALSE(faults.take_load_failure("r0"));  // fired once
    CHECK(faults.fired() == 1);
    CHECK(faults.take_store_failure(1));
    CHECK(faults.active());  // the second store failure on rank 1 is still armed
    CHECK(faults.take_store_failure(1));
    CHECK(faults.fired() == 3);
    CHECK_FALSE(faults.active());
}

TEST_CASE("fault schedule: a pending lookup is in effect until its step, a store delay never", "[fault]") {
    FaultSchedule faults;
    faults.set_step(4);
    faults.apply(FaultEvent{.kind = FaultKind::store_delay, .rank = 0, .steps = 9});
    CHECK_FALSE(faults.in_effect());
    CHECK_FALSE(faults.active());
    CHECK(faults.store_extra_delay(0) == 9);
    faults.apply(FaultEvent{.kind = FaultKind::lookup_pending, .steps = 3, .request_id = "r"});
    CHECK(faults.in_effect());
    CHECK(faults.lookup_pending("r"));
    faults.set_step(6);
    CHECK(faults.in_effect());
    faults.set_step(7);
    CHECK_FALSE(faults.in_effect());
    CHECK_FALSE(faults.active());
    CHECK(faults.fired() == 0);  // a lookup held pending is not a failure taken
}

}  // namespace
}  // namespace kvsim
