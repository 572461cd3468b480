// The inputs upstream's tests use, as trace events: the mock connector, scripted worker reports,
// `stop`, `reset_prefix_cache` and the reuse of a finished request's id.
#include <catch2/catch.hpp>

#include "properties/harness/run_trace.h"
#include "sim/connector/mock/mock_connector.h"
#include "sim/engine/engine.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"
#include "sim/variant/variant.h"

#include <string>
#include <vector>

namespace kvsim {
namespace {

std::string error_of(const std::string& text) {
    try {
        (void)parse_trace(text, "t.trace");
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

const std::string kMockHead =
    "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008\nconnector mock role=kv_consumer matched=32 async=on defer=2\n"
    "segment s len=64\n@0 arrive r1 prompt=s max_tokens=2\n";  // lines 1-5

// The events of category `category` logged at `step`.
std::vector<const LogEvent*> events_at(const Engine& engine, int step, EventCategory category) {
    std::vector<const LogEvent*> out;
    for (const LogEvent& e : engine.log().events())
        if (e.step == step && e.category == category) out.push_back(&e);
    return out;
}

// Tokens the step scheduled for `id` (new or cached), 0 when none.
std::int64_t scheduled_tokens(const Engine& engine, int step, const std::string& id) {
    for (const LogEvent* e : events_at(engine, step, EventCategory::schedule))
        for (const char* key : {"new", "cached"})
            if (const auto* counts = e->value<CountList>(key))
                for (const auto& [req, n] : *counts)
                    if (req == id) return n;
    return 0;
}

std::optional<RequestStatus> status_of(const Engine& engine, const std::string& id) {
    const auto* slot = engine.scheduler().requests().find(id);
    if (slot == nullptr) return std::nullopt;
    return (*slot)->status;
}

int free_blocks(const Engine& engine) {
    return static_cast<int>(engine.scheduler().kv_cache_manager().block_pool().num_free_blocks());
}

}  // namespace

TEST_CASE("scripted inputs: each new line parses and prints back", "[trace][scripted]") {
    const std::string text = kMockHead +
                             "@0 arrive r2 prompt=s max_tokens=2 external=16\n"
                             "@1 report finished_recving r1\n"
                             "@1 report invalid_blocks r2 index=0,1\n"
                             "@2 report failed_recving r2\n"
                             "@2 report finished_sending r1\n"
                             "@3 stop r1\n"
                             "@4 reset_prefix_cache\n"
                             "@5 arrive r1 prompt=s max_tokens=1\n";
    const Trace t = parse_trace(text, "t.trace");
    REQUIRE(t.connectors.size() == 1);
    CHECK(t.connectors[0].kind == "mock");
    CHECK(t.connectors[0].matched == 32);
    CHECK(t.connectors[0].is_async);
    CHECK(t.connectors[0].defer == 2);
    CHECK(std::get<ArriveEvent>(t.events[1].body).external == 16);
    CHECK(std::get<ArriveEvent>(t.events[0].body).external == -1);
    const auto& invalid = std::get<ReportEvent>(t.events[3].body);
    CHECK(invalid.kind == ReportKind::invalid_blocks);
    CHECK(invalid.index == std::vector<std::int32_t>{0, 1});
    CHECK(std::get<StopEvent>(t.events[6].body).request_id == "r1");
    CHECK(std::holds_alternative<ResetPrefixCacheEvent>(t.events[7].body));
    const std::string printed = print_trace(t);
    CHECK(printed.find("connector mock role=kv_consumer matched=32 async=on defer=2\n") != std::string::npos);
    CHECK(printed.find("@1 report invalid_blocks r2 index=0,1\n") != std::string::npos);
    CHECK(printed.find("@0 arrive r2 prompt=s max_tokens=2 external=16\n") != std::string::npos);
    CHECK(printed.find("@4 reset_prefix_cache\n") != std::string::npos);
    CHECK(printed.find("@3 stop r1\n") != std::string::npos);
    const Trace again = parse_trace(printed, "t.trace");
    CHECK(again == t);
    CHECK(print_trace(again) == printed);
}

TEST_CASE("scripted inputs: bad input names file, line and field", "[trace][scripted]") {
    CHECK(error_of(kMockHead + "@1 report finished_recving r9\n") ==
          "t.trace:6: event.id: report on request 'r9', which does not arrive on an earlier line");
    CHECK(error_of(kMockHead + "@1 report invalid_blocks r1\n") == "t.trace:6: event.index: missing required key");
    CHECK(error_of(kMockHead + "@1 report finished_recving r1 index=0\n") ==
          "t.trace:6: event.index: applies to report kind invalid_blocks only");
    CHECK(error_of(kMockHead + "@1 report done r1\n").starts_with("t.trace:6: event.kind: "));
    CHECK(error_of(kMockHead + "@1 stop r9\n") ==
          "t.trace:6: event.id: stop of request 'r9', which does not arrive on an earlier line");
    CHECK(error_of(kMockHead + "@1 reset_prefix_cache now=on\n").starts_with("t.trace:6: event: unknown key 'now'"));
    CHECK(error_of(kMockHead + "@1 arrive r1 prompt=s max_tokens=2\n") ==
          "t.trace:6: event.id: duplicate request id 'r1' (first arrives on line 5)");
    CHECK(error_of(kMockHead + "@1 stop r1\n@2 arrive r1 prompt=s max_tokens=2\n").empty());
    CHECK(error_of(kMockHead + "@1 fault load_fail request=r1\n") ==
          "t.trace:6: event.kind: fault load_fail does not apply to the mock connector; script it with report "
          "failed_recving or invalid_blocks");
    const std::string no_mock = "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008\nsegment s len=8\n";
    CHECK(error_of(no_mock + "@0 arrive r1 prompt=s max_tokens=2 external=4\n") ==
          "t.trace:4: event.external: external needs a connector of kind mock");
    CHECK(error_of(no_mock + "@0 arrive r1 prompt=s max_tokens=2\n@1 report finished_sending r1\n") ==
          "t.trace:5: event.kind: report needs a connector");
    CHECK(error_of("kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008\nconnector mock role=kv_consumer\n"
                   "connector stand_in role=kv_both\n")
              .starts_with("t.trace:4: connector.kind: stand_in cannot be combined with other connectors"));
    // upstream's MultiConnector takes any connector, its test MockKVConnector included
    CHECK(error_of("kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008\nmulti role=kv_both\n"
                   "connector mock role=kv_consumer\nconnector store role=kv_both\n")
              .empty());
    CHECK(error_of("kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008\nconnector store role=kv_both matched=3\n") ==
          "t.trace:3: connector.matched: applies to connector kind mock only");
}

TEST_CASE("mock connector: sync, async and deferred answers", "[connector][mock]") {
    ConnectorSpec spec{.kind = "mock", .matched = 32};
    Request request("r1", std::vector<TokenId>(64, 7), 4, 16, 0, {});
    SECTION("sync") {
        MockConnectorScheduler mock(spec);
        const MatchResult m = mock.get_num_new_matched_tokens(request, 0);
        CHECK(m.num_tokens == 32);
        CHECK_FALSE(m.load_async);
    }
    SECTION("async") {
        spec.is_async = true;
        MockConnectorScheduler mock(spec);
        const MatchResult m = mock.get_num_new_matched_tokens(request, 0);
        CHECK(m.num_tokens == 32);
        CHECK(m.load_async);
    }
    SECTION("deferred K calls per request, then the count; a request's own count wins") {
        spec.defer = 2;
        MockConnectorScheduler mock(spec);
        Request other("r2", std::vector<TokenId>(64, 7), 4, 16, 0, {.external_tokens = 16});
        CHECK_FALSE(mock.get_num_new_matched_tokens(request, 0).num_tokens.has_value());
        CHECK_FALSE(mock.get_num_new_matched_tokens(other, 0).num_tokens.has_value());
        CHECK_FALSE(mock.get_num_new_matched_tokens(request, 0).num_tokens.has_value());
        CHECK(mock.get_num_new_matched_tokens(request, 0).num_tokens == 32);
        CHECK_FALSE(mock.get_num_new_matched_tokens(other, 0).num_tokens.has_value());
        CHECK(mock.get_num_new_matched_tokens(other, 0).num_tokens == 16);
    }
}

TEST_CASE("scripted report: finished_recving drives the same state change as a drawn delay", "[engine][scripted]") {
    const std::string head =
        "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008 async_scheduling=off\nrun max_steps=40 variant=v0.30.0\n"
        "connector mock role=kv_consumer matched=32 async=on\nworkers load_delay_min=2 load_delay_max=2\n"
        "segment s len=64\n@0 arrive r1 prompt=s max_tokens=2\n";
    const Trace drawn = parse_trace(head, "drawn.trace");
    // The drawn load starts with step 0's metadata and reports at step 2; the script says step 2.
    const Trace scripted = parse_trace(head + "@2 report finished_recving r1\n", "scripted.trace");
    Engine a(drawn, require_variant("v0.30.0"));
    Engine b(scripted, require_variant("v0.30.0"));
    for (int step = 0; step < 6; ++step) {
        a.run_step(step);
        b.run_step(step);
        INFO("step " << step);
        CHECK(status_of(a, "r1") == status_of(b, "r1"));
        CHECK(scheduled_tokens(a, step, "r1") == scheduled_tokens(b, step, "r1"));
        CHECK(events_at(a, step, EventCategory::recv_done).size() == events_at(b, step, EventCategory::recv_done).size());
    }
    CHECK(events_at(b, 2, EventCategory::recv_done).size() == 1);
    CHECK(scheduled_tokens(b, 3, "r1") == 32);
    CHECK(a.quiet());
    CHECK(b.quiet());
}

TEST_CASE("scripted report: invalid_blocks by index rewinds the request", "[engine][scripted]") {
    const Trace t = parse_trace(
        "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008 kv_load_failure_policy=recompute\n"
        "run max_steps=40 variant=v0.30.0\n"
        "connector mock role=kv_consumer matched=32 async=on\nsegment s len=64\n@0 arrive r1 prompt=s max_tokens=2\n"
        "@1 report finished_recving r1\n@1 report invalid_blocks r1 index=1\n",
        "t.trace");
    Engine engine(t, require_variant("v0.30.0"));
    engine.run_step(0);
    const std::vector<BlockId> table = engine.scheduler().kv_cache_manager().get_block_ids("r1");
    REQUIRE(table.size() == 2);
    engine.run_step(1);
    const LogEvent* report = nullptr;
    for (const LogEvent* e : events_at(engine, 1, EventCategory::worker))
        if (e->text("kind") == "invalid_blocks") report = e;
    REQUIRE(report != nullptr);
    CHECK(*report->value<IdList>("invalid") == IdList{table[1]});
    // rewound to the invalid block's first token, and counted as a failed receive
    const auto* r1 = engine.scheduler().requests().find("r1");
    REQUIRE(r1 != nullptr);
    CHECK(r1->get()->num_computed_tokens == 16);
    CHECK(engine.scheduler().finished_recving_kv_req_ids().contains("r1"));
}

TEST_CASE("stop: the request samples EOS and finishes FINISHED_STOPPED", "[engine][scripted]") {
    const Trace t = parse_trace(
        "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008 async_scheduling=off\nrun max_steps=40 variant=v0.30.0\n"
        "segment s len=20\n@0 arrive r1 prompt=s max_tokens=10\n@0 stop r1\n@2 arrive r1 prompt=s max_tokens=5\n",
        "t.trace");
    Engine engine(t, require_variant("v0.30.0"));
    engine.run_step(0);
    CHECK_FALSE(status_of(engine, "r1").has_value());  // finished and freed in its first step
    const auto finished = events_at(engine, 0, EventCategory::finish);
    REQUIRE(finished.size() == 1);
    CHECK(finished.front()->text("status") == "FINISHED_STOPPED");
    CHECK(finished.front()->integer("output") == 1);
    CHECK(free_blocks(engine) == 63);
    engine.run_step(1);
    engine.run_step(2);  // the id is free again: a new request
    CHECK(status_of(engine, "r1") == RequestStatus::running);
}

TEST_CASE("reset_prefix_cache: fails while blocks are in use, clears the cache when idle", "[engine][scripted]") {
    const Trace t = parse_trace(
        "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008\nrun max_steps=40 variant=v0.30.0\n"
        "segment s len=40\n@0 arrive r1 prompt=s max_tokens=2\n@1 reset_prefix_cache\n@3 reset_prefix_cache\n",
        "t.trace");
    Engine engine(t, require_variant("v0.30.0"));
    for (int step = 0; step < 4; ++step) engine.run_step(step);
    const auto first = events_at(engine, 1, EventCategory::reset);
    const auto second = events_at(engine, 3, EventCategory::reset);
    REQUIRE(first.size() == 1);
    REQUIRE(second.size() == 1);
    CHECK_FALSE(first.front()->flag("ok"));
    CHECK(second.front()->flag("ok"));
    CHECK(engine.scheduler().kv_cache_manager().block_pool().cached_blocks().empty());
    CHECK(free_blocks(engine) == 63);
}

TEST_CASE("id reuse: an arrival whose id is still alive is skipped", "[engine][scripted]") {
    const Trace t = parse_trace(
        "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008\nrun max_steps=40 variant=v0.30.0\n"
        "connector mock role=kv_consumer matched=16 async=on\nsegment s len=40\n"
        "@0 arrive r1 prompt=s max_tokens=2\n@1 abort r1\n@1 arrive r1 prompt=s max_tokens=2\n",
        "t.trace");
    const RunResult r = run_trace(t, require_variant("v0.30.0"));
    // r1 waits for its drawn load when aborted: its blocks stay held, so the new arrival is skipped.
    bool skipped = false;
    for (const LogEvent& e : r.events) skipped = skipped || (e.category == EventCategory::arrive && e.flag("skipped"));
    CHECK(skipped);
    CHECK(r.verdict == Verdict::pass);
}

TEST_CASE("the example trace with the mock connector and scripted reports passes", "[engine][scripted]") {
    const Trace t = parse_trace_file(KVSIM_SOURCE_DIR "/corpus/examples/10_mock_connector_scripted_reports.trace");
    const RunResult r = run_trace(t, require_variant("v0.30.0"));
    CHECK(r.verdict == Verdict::pass);
    int resets = 0, oks = 0;
    for (const LogEvent& e : r.events)
        if (e.category == EventCategory::reset) {
            ++resets;
            oks += e.flag("ok") ? 1 : 0;
        }
    CHECK(resets == 2);
    CHECK(oks == 1);
}

}  // namespace kvsim

namespace kvsim {

TEST_CASE("scripted report: store_done completes one rank's copy at the scripted step", "[engine][scripted]") {
    const std::string head =
        "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008\nrun max_steps=40 variant=v0.30.0\n"
        "connector store role=kv_both\nworkers ranks=2\nsegment s len=40\n@0 arrive r1 prompt=s max_tokens=2\n";
    const Trace t = parse_trace(head + "@1 report store_done r1 rank=0\n@3 report store_done r1 rank=1\n", "t.trace");
    const RunResult r = run_trace(t, require_variant("v0.30.0"));
    CHECK(r.verdict == Verdict::pass);
    std::vector<std::pair<int, std::int64_t>> copies;  // (step, rank)
    for (const LogEvent& e : r.events)
        if (e.category == EventCategory::store && e.text("action") == "copy") copies.emplace_back(e.step, *e.integer("rank"));
    CHECK(copies == std::vector<std::pair<int, std::int64_t>>{{1, 0}, {3, 1}});
    CHECK(error_of(head + "@1 report store_done r1 rank=2\n") == "t.trace:8: event.rank: rank 2 is not below workers.ranks 2");
    CHECK(error_of(head + "@1 report store_done r1\n") == "t.trace:8: event.rank: missing required key");
}

}  // namespace kvsim
