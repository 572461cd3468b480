// The passable-trace rules (sim/trace/trace_builder.h): what they keep, drop and size.
#include <catch2/catch.hpp>

#include <vector>

#include "sim/trace/trace_builder.h"
#include "sim/trace/trace_schema.h"

using namespace kvsim;

namespace {

ConnectorSpec stand_in() {
    ConnectorSpec c;
    c.kind = std::string(kConnectorStandIn);
    return c;
}

std::vector<ConnectorSpec> p2p_only(KvRole role) { return {p2p_connector(role)}; }

Trace one_request(int prompt_len, int max_tokens) {
    Trace t;
    t.engine.block_size = 4;
    t.engine.max_model_len = 64;
    t.segments.push_back(Segment{.name = "s0", .tokens = generated_segment_tokens("s0", prompt_len)});
    t.events.push_back(Event{.step = 0, .body = ArriveEvent{.request_id = "r0", .prompt = {"s0"}, .max_tokens = max_tokens}});
    return t;
}

}  // namespace

TEST_CASE("trace builder: a remote prefill to a kv_producer p2p connector is valid but not passable", "[builder]") {
    const auto producer = p2p_only(KvRole::kv_producer);
    CHECK(accepts_remote_prefill(producer));
    CHECK_FALSE(passes_remote_prefill(producer));
    const RemoteFlags flags = passable_remote_flags(producer, {.prefill = true, .decode = false});
    CHECK_FALSE(flags.prefill);
    CHECK_FALSE(flags.decode);

    for (KvRole role : {KvRole::kv_consumer, KvRole::kv_both}) CHECK(passes_remote_prefill(p2p_only(role)));
    CHECK(passes_remote_prefill(std::vector{stand_in()}));
    const std::vector<ConnectorSpec> store_only = {store_connector(KvRole::kv_both, {})};
    CHECK_FALSE(accepts_remote_prefill(store_only));
    CHECK_FALSE(passes_remote_prefill(store_only));
}

TEST_CASE("trace builder: remote_decode needs a p2p connector that sends and prefill wins over decode", "[builder]") {
    CHECK_FALSE(accepts_remote_decode(p2p_only(KvRole::kv_consumer)));
    CHECK(accepts_remote_decode(p2p_only(KvRole::kv_producer)));
    CHECK(accepts_remote_decode(p2p_only(KvRole::kv_both)));
    CHECK_FALSE(accepts_remote_decode(std::vector{stand_in()}));

    const auto both = p2p_only(KvRole::kv_both);
    const RemoteFlags asked_both = passable_remote_flags(both, {.prefill = true, .decode = true});
    CHECK(asked_both.prefill);
    CHECK_FALSE(asked_both.decode);
    // When the prefill cannot be served, the decode the stack can serve stays.
    const RemoteFlags on_producer = passable_remote_flags(p2p_only(KvRole::kv_producer), {.prefill = true, .decode = true});
    CHECK_FALSE(on_producer.prefill);
    CHECK(on_producer.decode);
}

TEST_CASE("trace builder: faults need the connectors that serve them", "[builder]") {
    const std::vector<ConnectorSpec> p2p = p2p_only(KvRole::kv_consumer);
    const std::vector<ConnectorSpec> none;
    const std::vector<ConnectorSpec> store = {store_connector(KvRole::kv_consumer, {})};
    for (FaultKind kind : {FaultKind::store_delay, FaultKind::store_fail, FaultKind::lookup_pending}) {
        CHECK_FALSE(connectors_take_fault(p2p, kind));
        CHECK(connectors_take_fault(store, kind));
    }
    CHECK(connectors_take_fault(p2p, FaultKind::load_fail));
    CHECK_FALSE(connectors_take_fault(none, FaultKind::load_fail));
    CHECK(fault_names_request(FaultKind::lookup_pending));
    CHECK_FALSE(fault_names_request(FaultKind::store_fail));
    CHECK(fault_names_rank(FaultKind::store_fail));
    CHECK(fault_has_steps(FaultKind::store_delay));
    CHECK_FALSE(fault_has_steps(FaultKind::load_fail));
}

TEST_CASE("trace builder: connector stacks list their connectors in file order", "[builder]") {
    const ConnectorSpec p2p = p2p_connector(KvRole::kv_both);
    const ConnectorSpec store = store_connector(KvRole::kv_consumer, {.load_async = false, .save_decode_cache = true});
    CHECK(store.kind == "store");
    CHECK_FALSE(store.load_async);
    CHECK(store.save_decode_cache);
    CHECK(stack_connectors(ConnectorStack::store_p2p, p2p, store) == std::vector{store, p2p});
    CHECK(stack_connectors(ConnectorStack::p2p_store, p2p, store) == std::vector{p2p, store});
    CHECK(stack_connectors(ConnectorStack::p2p, p2p, store) == std::vector{p2p});
    CHECK(to_string(ConnectorStack::p2p_store) == "p2p+store");
    CHECK_FALSE(has_store(ConnectorStack::p2p));
    CHECK(has_p2p(ConnectorStack::store_p2p));
}

TEST_CASE("trace builder: every pool pressure fits the largest request alone", "[builder]") {
    const std::vector<int> demands = {3, 7, 2};
    CHECK(num_blocks_for_demands(PoolPressure::roomy, demands) == 1 + 12 + 7);
    CHECK(num_blocks_for_demands(PoolPressure::moderate, demands) == 1 + 7 + 5 / 2);
    CHECK(num_blocks_for_demands(PoolPressure::tight, demands) == 1 + 8);
    CHECK(num_blocks_for_demands(PoolPressure::starved, demands) == 1 + 7);
    CHECK(num_blocks_for_largest(PoolPressure::roomy, demands, 0) == 1 + 35);
    CHECK(num_blocks_for_largest(PoolPressure::starved, demands, 2) == 1 + 7 + 2);
    CHECK(num_blocks_for_largest(PoolPressure::starved, {}, -5) == 2);  // slack clamps at 0, one block at least
    for (PoolPressure p : {PoolPressure::roomy, PoolPressure::moderate, PoolPressure::tight, PoolPressure::starved}) {
        CHECK(num_blocks_for_demands(p, demands) - kNullBlocks >= 7);
        CHECK(num_blocks_for_largest(p, demands, 0) - kNullBlocks >= 7);
    }
}

TEST_CASE("trace builder: a request's blocks are capped by max_model_len and min_num_blocks fits it", "[builder]") {
    CHECK(request_blocks(10, 6, 64, 4) == 4);
    CHECK(request_blocks(10, 100, 64, 4) == 16);  // capped at 64 tokens
    CHECK(min_num_blocks(one_request(10, 6)) == 4 + kNullBlocks);
    CHECK(min_num_blocks(Trace{}) == 1 + kNullBlocks);
    CHECK(min_model_len(10, 4) == 11);
    CHECK(min_model_len(3, 20) == 20);
    CHECK(min_model_len(0, 0) == 2);
    CHECK(batch_budget(true, 16, 64) == 16);
    CHECK(batch_budget(false, 16, 64) == 64);
}

TEST_CASE("trace builder: events come out by step, then arrive < fault < abort, then insertion", "[builder]") {
    EventPlan plan;
    plan.add(2, AbortEvent{"r0"}, EventClass::abort);
    plan.add(2, FaultEvent{.kind = FaultKind::load_fail, .request_id = "r0"}, EventClass::fault);
    plan.add(2, ArriveEvent{.request_id = "r0", .prompt = {}}, EventClass::arrive);
    plan.add(0, ArriveEvent{.request_id = "r1", .prompt = {}}, EventClass::arrive);
    plan.add(2, AbortEvent{"r1"}, EventClass::abort);
    const std::vector<Event> events = plan.take_ordered();
    REQUIRE(events.size() == 5);
    CHECK(std::get<ArriveEvent>(events[0].body).request_id == "r1");
    CHECK(std::get<ArriveEvent>(events[1].body).request_id == "r0");
    CHECK(std::holds_alternative<FaultEvent>(events[2].body));
    CHECK(std::get<AbortEvent>(events[3].body).request_id == "r0");
    CHECK(std::get<AbortEvent>(events[4].body).request_id == "r1");
    CHECK(last_event_step(events) == 2);
    CHECK(plan.take_ordered().empty());
}

TEST_CASE("trace builder: the drain bound adds its parts and stays within 1..kMaxSteps", "[builder]") {
    CHECK(drain_step_bound({.last_event_step = 5, .work = 10, .delays = 3, .delay_rounds = 2, .slack = 7}) ==
          5 + 7 + kDrainFactor * (10 + 3 * 2));
    CHECK(drain_step_bound({}) == 1);
    CHECK(drain_step_bound({.work = limits::kMaxSteps}) == limits::kMaxSteps);
}
