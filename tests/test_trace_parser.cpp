// Trace format v1: happy paths, defaults, comments, the schema tables, in-memory validation.
#include <catch2/catch.hpp>

#include "sim/common/stable_hash.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"
#include "sim/trace/trace_schema.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace kvsim {
namespace {

const char* const kFull = R"(kvsim-trace 1                 # header
# '#' starts a comment
engine block_size=32 num_blocks=128 max_batched_tokens=1024 max_running=8 max_model_len=1024 chunked_prefill=off prefix_caching=off long_prefill_threshold=64
run seed=42 max_steps=500 variant=v0.29.0
connector stand_in role=kv_consumer load_delay=2
segment sys len=48
segment q1 tokens=5,6,7
expect v0.29.0 crash signature=crash:missing_current_block_table
expect v0.30.0 pass
@0 arrive r1 prompt=sys+q1 max_tokens=4 remote_prefill=on
@3 abort r1
@3 arrive r2 prompt=q1 max_tokens=1
@4 fault load_fail request=r2
)";

// The disaggregated / store side: p2p and store connectors, workers, store lines, faults.
const char* const kStoreTrace = R"(kvsim-trace 1
engine block_size=16 num_blocks=64 max_model_len=1008
run max_steps=100
multi role=kv_both
connector p2p role=kv_both
connector store role=kv_both load_async=off lookup_async=on enable_lookup=off save_decode_cache=on
workers ranks=4 store_delay_min=2 store_delay_max=5 load_delay_min=0 load_delay_max=3 pull_delay=7
segment sys len=32
segment q1 tokens=5,6,7
store prefix=sys
store prefix=sys+q1+sys
@0 arrive r1 prompt=sys+q1 max_tokens=4 remote_decode=on
@0 arrive r2 prompt=sys max_tokens=2 remote_prefill=on remote_decode=off
@1 fault store_delay rank=3 steps=10
@1 fault store_fail rank=0
@2 fault load_fail request=r2
@2 fault lookup_pending steps=4 request=r1
)";

TEST_CASE("parse: every value lands in its field", "[trace][parser]") {
    const Trace t = parse_trace(kFull, "t.trace");
    CHECK(t.version == 1);
    CHECK(t.engine.block_size == 32);
    CHECK(t.engine.num_blocks == 128);
    CHECK(t.engine.max_batched_tokens == 1024);
    CHECK(t.engine.max_running == 8);
    CHECK(t.engine.max_model_len == 1024);
    CHECK_FALSE(t.engine.chunked_prefill);
    CHECK_FALSE(t.engine.prefix_caching);
    CHECK(t.engine.long_prefill_threshold == 64);
    CHECK(t.run.seed == 42);
    CHECK(t.run.max_steps == 500);
    CHECK(t.run.variant == "v0.29.0");

    REQUIRE(t.connectors.size() == 1);
    CHECK(t.connectors[0].kind == "stand_in");
    CHECK(t.connectors[0].role == KvRole::kv_consumer);
    CHECK(t.connectors[0].load_delay == 2);
    CHECK(t.workers == WorkerConfig{});
    CHECK(t.store.empty());

    REQUIRE(t.segments.size() == 2);
    CHECK(t.segments[0].name == "sys");
    CHECK(t.segments[0].generated);
    CHECK(t.segments[0].tokens == generated_segment_tokens("sys", 48));
    CHECK(t.segments[1].name == "q1");
    CHECK_FALSE(t.segments[1].generated);
    CHECK(t.segments[1].tokens == std::vector<std::int32_t>{5, 6, 7});

    REQUIRE(t.expectations.size() == 2);
    CHECK(t.expectations[0].variant == "v0.29.0");
    CHECK(t.expectations[0].verdict == Verdict::crash);
    CHECK(t.expectations[0].signature == "crash:missing_current_block_table");
    CHECK(t.expectations[1].variant == "v0.30.0");
    CHECK(t.expectations[1].verdict == Verdict::pass);
    CHECK(t.expectations[1].signature.empty());

    REQUIRE(t.events.size() == 4);
    CHECK(t.events[0].step == 0);
    CHECK(t.events[0].line == 10);
    const auto& a = std::get<ArriveEvent>(t.events[0].body);
    CHECK(a.request_id == "r1");
    CHECK(a.prompt == std::vector<std::string>{"sys", "q1"});
    CHECK(a.max_tokens == 4);
    CHECK(a.remote_prefill);
    CHECK_FALSE(a.remote_decode);
    CHECK(t.events[1].step == 3);
    CHECK(t.events[1].line == 11);
    CHECK(std::get<AbortEvent>(t.events[1].body).request_id == "r1");
    CHECK_FALSE(std::get<ArriveEvent>(t.events[2].body).remote_prefill);
    const auto& f = std::get<FaultEvent>(t.events[3].body);
    CHECK(f.kind == FaultKind::load_fail);
    CHECK(f.request_id == "r2");
    CHECK(f.rank == 0);
    CHECK(f.steps == 0);

    const auto prompt = t.prompt_tokens(a);
    REQUIRE(prompt.size() == 51);
    CHECK(std::equal(prompt.begin(), prompt.begin() + 48, t.segments[0].tokens.begin()));
    CHECK(prompt[48] == 5);
    CHECK(prompt[50] == 7);
    CHECK(t.find_segment("q1") == &t.segments[1]);
    CHECK(t.find_segment("nope") == nullptr);
    CHECK(t.concat_segments({"q1", "q1"}) == std::vector<std::int32_t>{5, 6, 7, 5, 6, 7});
    CHECK(t.concat_segments(a.prompt) == prompt);
    CHECK(t.concat_segments({}).empty());
}

TEST_CASE("parse: connectors of each kind, workers, store lines and faults land", "[trace][parser]") {
    const Trace t = parse_trace(kStoreTrace, "t.trace");
    REQUIRE(t.connectors.size() == 2);
    CHECK(t.connectors[0].kind == "p2p");
    CHECK(t.connectors[0].role == KvRole::kv_both);
    CHECK(t.connectors[0] == ConnectorSpec{.kind = "p2p", .role = KvRole::kv_both});  // the rest at defaults
    const ConnectorSpec& store = t.connectors[1];
    CHECK(store.kind == "store");
    CHECK(store.role == KvRole::kv_both);
    CHECK(store.load_delay == 1);
    CHECK_FALSE(store.load_async);
    CHECK(store.lookup_async);
    CHECK_FALSE(store.enable_lookup);
    CHECK(store.save_decode_cache);

    CHECK(t.workers.ranks == 4);
    CHECK(t.workers.store_delay_min == 2);
    CHECK(t.workers.store_delay_max == 5);
    CHECK(t.workers.load_delay_min == 0);
    CHECK(t.workers.load_delay_max == 3);
    CHECK(t.workers.pull_delay == 7);

    REQUIRE(t.store.size() == 2);
    CHECK(t.store[0].prefix == std::vector<std::string>{"sys"});
    CHECK(t.store[1].prefix == std::vector<std::string>{"sys", "q1", "sys"});
    CHECK(t.concat_segments(t.store[1].prefix).size() == 67);

    REQUIRE(t.events.size() == 6);
    const auto& r1 = std::get<ArriveEvent>(t.events[0].body);
    CHECK(r1.remote_decode);
    CHECK_FALSE(r1.remote_prefill);
    const auto& r2 = std::get<ArriveEvent>(t.events[1].body);
    CHECK(r2.remote_prefill);
    CHECK_FALSE(r2.remote_decode);
    // (request_id has no default member initializer: gcc's -Wmissing-field-initializers wants it named)
    CHECK(std::get<FaultEvent>(t.events[2].body) ==
          FaultEvent{.kind = FaultKind::store_delay, .rank = 3, .steps = 10, .request_id = {}});
    CHECK(std::get<FaultEvent>(t.events[3].body) ==
          FaultEvent{.kind = FaultKind::store_fail, .rank = 0, .request_id = {}});
    CHECK(std::get<FaultEvent>(t.events[4].body) ==
          FaultEvent{.kind = FaultKind::load_fail, .request_id = "r2"});
    CHECK(std::get<FaultEvent>(t.events[5].body) ==
          FaultEvent{.kind = FaultKind::lookup_pending, .steps = 4, .request_id = "r1"});
    CHECK(t.events[5].step == 2);
    CHECK(t.events[5].line == 17);

    // The store keys default as trace.h says; a store connector alone is valid.
    const Trace d = parse_trace("kvsim-trace 1\nengine block_size=4 num_blocks=9 max_model_len=32\nconnector store role=kv_consumer\n",
                                "t.trace");
    CHECK(d.connectors.at(0).load_async);
    CHECK_FALSE(d.connectors.at(0).lookup_async);
    CHECK(d.connectors.at(0).enable_lookup);
    CHECK_FALSE(d.connectors.at(0).save_decode_cache);
    CHECK(d.workers == WorkerConfig{});
}

TEST_CASE("parse: omitted keys take the struct defaults", "[trace][parser]") {
    const Trace t = parse_trace("kvsim-trace 1\nengine block_size=4 num_blocks=9 max_model_len=32\n", "t.trace");
    EngineConfig expected;
    expected.block_size = 4;
    expected.num_blocks = 9;
    expected.max_model_len = 32;
    CHECK(t.engine == expected);
    CHECK(t.run == RunConfig{});
    CHECK(t.run.variant.empty());
    CHECK(t.connectors.empty());
    CHECK(t.workers == WorkerConfig{});
    CHECK(t.store.empty());
    CHECK(t.segments.empty());
    CHECK(t.expectations.empty());
    CHECK(t.events.empty());

    const Trace u = parse_trace("kvsim-trace 1\nengine block_size=4 num_blocks=9 max_model_len=32\nrun\n", "t.trace");
    CHECK(u.run == RunConfig{});
}

TEST_CASE("parse: comments / blank lines / tabs / CRLF / any line order", "[trace][parser]") {
    // '#' starts a comment only at the start of a line or after whitespace; glued to a token
    // it is part of the token.
    CHECK_THROWS_WITH(parse_trace("kvsim-trace 1#x\n", "t.trace"),
                      "t.trace:1: header: expected a decimal integer, got '1#x'");

    const Trace t = parse_trace(
        "\r\n"
        "# leading comment\r\n"
        "kvsim-trace\t1\t# header with a tab\r\n"
        "@0 arrive r1 prompt=late max_tokens=3   # segment defined below\r\n"
        "\t\t\r\n"
        "expect v0.30.0 violation signature=violation:a#b   # '#' inside a value is kept\r\n"
        "segment late len=5\r\n"
        "engine   num_blocks=8\tblock_size=2 max_model_len=14   \r\n",
        "t.trace");
    CHECK(t.engine.block_size == 2);
    CHECK(t.engine.num_blocks == 8);
    REQUIRE(t.expectations.size() == 1);
    CHECK(t.expectations[0].signature == "violation:a#b");
    CHECK(t.expectations[0].verdict == Verdict::violation);
    REQUIRE(t.events.size() == 1);
    CHECK(t.events[0].line == 4);
    CHECK(t.segments.at(0).tokens.size() == 5);
    // A trace without a final newline parses too.
    CHECK(parse_trace("kvsim-trace 1\nengine block_size=1 num_blocks=2 max_model_len=2", "t.trace").engine.num_blocks == 2);
}

TEST_CASE("parse: boundary values are accepted", "[trace][parser]") {
    const Trace t = parse_trace(
        "kvsim-trace 1\n"
        "engine block_size=1024 num_blocks=2 max_batched_tokens=1 max_running=1 max_model_len=2 "
        "long_prefill_threshold=0\n"
        "run seed=18446744073709551615 max_steps=1\n"
        "connector stand_in role=kv_producer load_delay=10000\n"
        "segment t tokens=0,2147483647\n"
        "segment u len=1\n"
        "@0 arrive a.b-c_D prompt=u max_tokens=1\n"
        "@0 fault load_fail request=a.b-c_D\n",
        "t.trace");
    CHECK(t.engine.block_size == 1024);
    CHECK(t.run.seed == 18446744073709551615ULL);
    CHECK(t.connectors[0].load_delay == 10000);
    CHECK(t.segments[0].tokens == std::vector<std::int32_t>{0, 2147483647});
    CHECK(std::get<ArriveEvent>(t.events[0].body).request_id == "a.b-c_D");

    // max_model_len=2: a store prefix may fill the whole model length, a prompt one token less.
    const Trace s = parse_trace(
        "kvsim-trace 1\n"
        "engine block_size=1 num_blocks=2 max_model_len=2\n"
        "connector store role=kv_both\n"
        "workers ranks=64 store_delay_min=10000 store_delay_max=10000 load_delay_min=0 load_delay_max=0 "
        "pull_delay=10000\n"
        "segment u len=2\n"
        "store prefix=u\n"
        "@0 fault store_delay rank=63 steps=10000\n"
        "@0 fault store_delay rank=0 steps=1\n",
        "t.trace");
    CHECK(s.workers.ranks == 64);
    CHECK(s.workers.store_delay_min == 10000);
    CHECK(s.workers.load_delay_max == 0);
    CHECK(std::get<FaultEvent>(s.events[0].body).rank == 63);
    CHECK(std::get<FaultEvent>(s.events[0].body).steps == 10000);
}

TEST_CASE("generated segment tokens derive from the name only", "[trace]") {
    const auto a = generated_segment_tokens("sys", 100);
    REQUIRE(a.size() == 100);
    for (auto tok : a) {
        CHECK(tok >= 1);
        CHECK(tok <= 50000);
    }
    CHECK(generated_segment_tokens("sys", 100) == a);
    const auto prefix = generated_segment_tokens("sys", 10);
    CHECK(std::equal(prefix.begin(), prefix.end(), a.begin()));
    CHECK(generated_segment_tokens("sys2", 100) != a);
    CHECK(generated_segment_tokens("x", 0).empty());
    // Pinned values: the derivation is part of the format (traces name segments, not tokens).
    CHECK(a[0] == generated_segment_tokens("sys", 1)[0]);
    const std::uint64_t h = mix64(hash_combine(fnv1a("sys"), 0));
    CHECK(a[0] == static_cast<std::int32_t>(1 + h % 50000));
}

TEST_CASE("roles and verdicts: to_string and parse agree with the schema choices", "[trace]") {
    for (KvRole r : {KvRole::kv_consumer, KvRole::kv_producer, KvRole::kv_both})
        CHECK(parse_role(to_string(r)) == r);
    for (Verdict v : {Verdict::pass, Verdict::violation, Verdict::crash, Verdict::liveness, Verdict::nondeterminism})
        CHECK(parse_verdict(to_string(v)) == v);
    for (FaultKind k : {FaultKind::store_delay, FaultKind::store_fail, FaultKind::load_fail, FaultKind::lookup_pending})
        CHECK(parse_fault_kind(to_string(k)) == k);
    CHECK_FALSE(parse_role("kv_nothing").has_value());
    CHECK_FALSE(parse_verdict("PASS").has_value());
    CHECK_FALSE(parse_fault_kind("store").has_value());
    CHECK(to_string(static_cast<FaultKind>(9)) == "?");

    const auto& fault_kind = fault_schema().rows[0].spec;
    REQUIRE(fault_kind.name == "kind");
    CHECK(fault_kind.choices.size() == 4);
    for (auto c : fault_kind.choices) CHECK(parse_fault_kind(c).has_value());
    const auto& connector_kind = connector_schema().rows[0].spec;
    REQUIRE(connector_kind.name == "kind");
    CHECK(std::vector<std::string_view>(connector_kind.choices.begin(), connector_kind.choices.end()) ==
          std::vector<std::string_view>{kConnectorStandIn, kConnectorP2p, kConnectorStore, kConnectorMock});

    const auto& role = connector_schema().rows[1].spec;
    REQUIRE(role.name == "role");
    CHECK(role.choices.size() == 3);
    for (auto c : role.choices) CHECK(parse_role(c).has_value());
    const auto& verdict = expect_schema().rows[1].spec;
    REQUIRE(verdict.name == "verdict");
    CHECK(verdict.choices.size() == 7);
    for (auto c : verdict.choices) CHECK(parse_verdict(c).has_value());
}

template <class T>
void check_help_lists(const std::string& help, const LineSchema<T>& schema) {
    CHECK(help.find(schema.help) != std::string::npos);
    for (const auto& row : schema.rows) {
        INFO(schema.keyword << "." << row.spec.name);
        CHECK(help.find(row.spec.help) != std::string::npos);
        CHECK(help.find(row.spec.positional ? std::string(row.spec.name) + " (" : std::string(row.spec.name) + "=") !=
              std::string::npos);
    }
}

TEST_CASE("format_help documents every key of every table", "[trace][schema]") {
    const std::string help = format_help();
    check_help_lists(help, engine_schema());
    check_help_lists(help, run_schema());
    check_help_lists(help, connector_schema());
    check_help_lists(help, segment_schema());
    check_help_lists(help, expect_schema());
    check_help_lists(help, arrive_schema());
    check_help_lists(help, abort_schema());
    check_help_lists(help, fault_schema());
    check_help_lists(help, workers_schema());
    check_help_lists(help, store_schema());
    CHECK(help.find("kvsim-trace 1") != std::string::npos);
    CHECK(help.find("block_size=N                 required; 1..1024") != std::string::npos);
    CHECK(help.find("max_batched_tokens=N         default 2048") != std::string::npos);
    CHECK(help.find("save_decode_cache=on|off     store only: default off.") != std::string::npos);
    CHECK(help.find("load_delay=N                 stand_in only: default 1; 0..10000.") != std::string::npos);
    CHECK(help.find("rank=N                       store_delay, store_fail only: required; 0..63.") !=
          std::string::npos);
    CHECK(help.find("store_delay_max=N            default 1; 0..10000; >= store_delay_min.") != std::string::npos);
    CHECK(help.find("@STEP fault KIND KEY=VALUE...") != std::string::npos);
}

TEST_CASE("the kinds of a line select its keys", "[trace][schema]") {
    // Every kinds list names real kinds of its line, so no key is dead.
    const auto check = [](const auto& schema) {
        const auto& kind_spec = schema.rows[0].spec;
        REQUIRE(kind_spec.name == schema.kind_key);
        REQUIRE(kind_spec.positional);
        for (const auto& row : schema.rows)
            for (std::string_view k : row.spec.kinds) {
                INFO(schema.keyword << "." << row.spec.name << " kind " << k);
                CHECK(std::find(kind_spec.choices.begin(), kind_spec.choices.end(), k) != kind_spec.choices.end());
            }
    };
    check(connector_schema());
    check(fault_schema());
    CHECK(engine_schema().kind_key.empty());

    ConnectorSpec store{.kind = "store"};
    ConnectorSpec stand_in{.kind = "stand_in"};
    std::vector<std::string_view> store_keys;
    std::vector<std::string_view> stand_in_keys;
    for (const auto& row : connector_schema().rows) {
        if (row_applies(connector_schema(), row, store)) store_keys.push_back(row.spec.name);
        if (row_applies(connector_schema(), row, stand_in)) stand_in_keys.push_back(row.spec.name);
    }
    CHECK(store_keys == std::vector<std::string_view>{"kind", "role", "load_async", "lookup_async", "enable_lookup",
                                                      "save_decode_cache"});
    CHECK(stand_in_keys == std::vector<std::string_view>{"kind", "role", "load_delay"});
    CHECK(line_kind(connector_schema(), store) == "store");
    CHECK(line_kind(fault_schema(), FaultEvent{.kind = FaultKind::lookup_pending, .request_id = {}}) ==
          "lookup_pending");
    CHECK(line_kind(engine_schema(), EngineConfig{}).empty());
}

TEST_CASE("sim/trace/README.md carries the current format_help() text", "[trace][schema][docs]") {
    std::ifstream in(std::string(KVSIM_SOURCE_DIR) + "/sim/trace/README.md", std::ios::binary);
    REQUIRE(in);
    const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO("a key table changed: paste the new `kvsim format` output into sim/trace/README.md");
    CHECK(readme.find(format_help()) != std::string::npos);
}

TEST_CASE("the printer writes every key the tables declare / in table order", "[trace][printer]") {
    const Trace t = parse_trace(kFull, "t.trace");
    CHECK(format_line(t.engine) ==
          "engine block_size=32 num_blocks=128 max_batched_tokens=1024 max_running=8 max_model_len=1024 "
          "chunked_prefill=off prefix_caching=off long_prefill_threshold=64 reserve_full_isl=on");
    CHECK(format_line(RunConfig{}) == "run seed=1 max_steps=1000");
    CHECK(format_line(t.run) == "run seed=42 max_steps=500 variant=v0.29.0");
    CHECK(format_line(t.connectors[0]) == "connector stand_in role=kv_consumer load_delay=2");
    CHECK(format_line(t.segments[0]) == "segment sys len=48");
    CHECK(format_line(t.segments[1]) == "segment q1 tokens=5,6,7");
    CHECK(format_line(t.expectations[0]) == "expect v0.29.0 crash signature=crash:missing_current_block_table");
    CHECK(format_line(t.expectations[1]) == "expect v0.30.0 pass");
    CHECK(format_line(t.events[0]) == "@0 arrive r1 prompt=sys+q1 max_tokens=4 remote_prefill=on");
    CHECK(format_line(t.events[1]) == "@3 abort r1");
    CHECK(format_line(t.events[2]) == "@3 arrive r2 prompt=q1 max_tokens=1");
    CHECK(format_line(t.events[3]) == "@4 fault load_fail request=r2");
    CHECK(print_trace(t).rfind("kvsim-trace 1\nengine ", 0) == 0);
    // Only a stand_in connector and default workers: no workers line.
    CHECK(print_trace(t).find("\nworkers") == std::string::npos);

    // Each connector line prints the keys of its kind only.
    CHECK(format_line(ConnectorSpec{.kind = "p2p", .role = KvRole::kv_producer}) == "connector p2p role=kv_producer");
    CHECK(format_line(ConnectorSpec{.kind = "store"}) ==
          "connector store role=kv_consumer load_async=on lookup_async=off enable_lookup=on save_decode_cache=off");

    const Trace s = parse_trace(kStoreTrace, "t.trace");
    CHECK(print_trace(s) ==
          "kvsim-trace 1\n"
          "engine block_size=16 num_blocks=64 max_batched_tokens=2048 max_running=16 max_model_len=1008 "
          "chunked_prefill=on prefix_caching=on long_prefill_threshold=0 reserve_full_isl=on\n"
          "run seed=1 max_steps=100\n"
          "multi role=kv_both\n"
          "connector p2p role=kv_both\n"
          "connector store role=kv_both load_async=off lookup_async=on enable_lookup=off save_decode_cache=on\n"
          "workers ranks=4 store_delay_min=2 store_delay_max=5 load_delay_min=0 load_delay_max=3 pull_delay=7\n"
          "segment sys len=32\n"
          "segment q1 tokens=5,6,7\n"
          "store prefix=sys\n"
          "store prefix=sys+q1+sys\n"
          "@0 arrive r1 prompt=sys+q1 max_tokens=4 remote_decode=on\n"
          "@0 arrive r2 prompt=sys max_tokens=2 remote_prefill=on\n"
          "@1 fault store_delay rank=3 steps=10\n"
          "@1 fault store_fail rank=0\n"
          "@2 fault load_fail request=r2\n"
          "@2 fault lookup_pending steps=4 request=r1\n");

    // The workers line: always with a p2p or store connector, otherwise only when not default.
    Trace w = parse_trace("kvsim-trace 1\nengine block_size=4 num_blocks=9 max_model_len=32\nconnector p2p role=kv_both\n", "t.trace");
    CHECK(prints_workers(w));
    CHECK(print_trace(w).find("\nworkers ranks=1 store_delay_min=1 store_delay_max=1 load_delay_min=1 "
                              "load_delay_max=1 pull_delay=1\n") != std::string::npos);
    w.connectors.clear();
    CHECK_FALSE(prints_workers(w));
    w.workers.pull_delay = 3;
    CHECK(prints_workers(w));
    CHECK(print_trace(w).find("\nworkers ranks=1") != std::string::npos);
    CHECK(parse_trace(print_trace(w), "t.trace") == w);
}

Trace small_trace() {
    Trace t;
    t.engine.block_size = 4;
    t.engine.num_blocks = 16;
    t.segments.push_back({"s", generated_segment_tokens("s", 6), true});
    t.events.push_back({0, ArriveEvent{.request_id = "r1", .prompt = {"s"}, .max_tokens = 2}, 0});
    return t;
}

std::string validation_error(const Trace& t) {
    try {
        validate_trace(t);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

TEST_CASE("validate_trace: in-memory traces get the parser's rules", "[trace][validate]") {
    CHECK(validation_error(small_trace()).empty());

    Trace t = small_trace();
    t.engine.block_size = -3;
    CHECK(validation_error(t) == "<trace>:0: engine.block_size: value -3 below minimum 1");

    t = small_trace();
    t.connectors.push_back({"stand_in", static_cast<KvRole>(7), 1});
    CHECK(validation_error(t) ==
          "<trace>:0: connector.role: expected one of kv_consumer, kv_producer, kv_both, got '?'");

    t = small_trace();
    t.segments[0].tokens[0] += 1;  // claims to be generated, but is not
    CHECK(validation_error(t) == "<trace>:0: segment.len: tokens of generated segment 's' are not the ones its "
                                 "name derives (explicit tokens need generated=false)");
    t.segments[0].generated = false;
    CHECK(validation_error(t).empty());

    t = small_trace();
    auto& arrive = std::get<ArriveEvent>(t.events[0].body);
    arrive.prompt.assign(100, "s");  // 600 tokens, and a 2 + 100*2 byte prompt is fine for the line cap
    t.engine.max_model_len = 601;
    CHECK(validation_error(t).empty());
    t.engine.max_model_len = 600;
    CHECK(validation_error(t) == "<trace>:0: event.prompt: prompt of 600 tokens, outside 1..max_model_len-1 = 1..599");

    t = small_trace();
    t.segments.push_back({std::string(60, 'x'), generated_segment_tokens(std::string(60, 'x'), 1), true});
    std::get<ArriveEvent>(t.events[0].body).prompt.assign(70, std::string(60, 'x'));
    t.engine.max_model_len = 1000;
    CHECK(validation_error(t) == "<trace>:0: event: printed line is 4302 bytes, more than the maximum 4096");

    // Keys of another kind must keep their defaults: the printer would drop them.
    t = small_trace();
    t.connectors.push_back({.kind = "stand_in", .save_decode_cache = true});
    CHECK(validation_error(t) == "<trace>:0: connector.save_decode_cache: applies to connector kind store only");
    t.connectors[0] = {.kind = "store", .load_delay = 5};
    CHECK(validation_error(t) == "<trace>:0: connector.load_delay: applies to connector kind stand_in only");
    t.connectors[0] = {.kind = "p2p", .load_async = false};
    CHECK(validation_error(t) == "<trace>:0: connector.load_async: applies to connector kind store only");
    t.connectors[0] = {.kind = "p2p"};
    CHECK(validation_error(t).empty());
    t.connectors.push_back({.kind = "store"});
    CHECK(validation_error(t).empty());
    t.connectors.push_back({.kind = "p2p"});
    CHECK(validation_error(t) == "<trace>:0: connector.kind: second connector of kind p2p (first on line 0)");

    t = small_trace();
    t.connectors.push_back({.kind = "store"});
    t.events.push_back({1, FaultEvent{.kind = FaultKind::store_fail, .rank = 0, .steps = 2, .request_id = {}}, 0});
    CHECK(validation_error(t) == "<trace>:0: event.steps: applies to fault kinds store_delay, lookup_pending only");
    t.events[1].body = FaultEvent{.kind = FaultKind::load_fail, .rank = 1, .request_id = "r1"};
    CHECK(validation_error(t) == "<trace>:0: event.rank: applies to fault kinds store_delay, store_fail only");
    t.events[1].body = FaultEvent{.kind = FaultKind::lookup_pending, .steps = 0, .request_id = "r1"};
    CHECK(validation_error(t) == "<trace>:0: event.steps: value 0 below minimum 1");
    t.events[1].body = FaultEvent{.kind = FaultKind::lookup_pending, .steps = 1, .request_id = {}};
    CHECK(validation_error(t) ==
          "<trace>:0: event.request: expected a name of 1 to 64 characters from [A-Za-z0-9_.-], got ''");
    t.events[1].body = FaultEvent{.kind = static_cast<FaultKind>(9), .request_id = {}};
    CHECK(validation_error(t) ==
          "<trace>:0: event.kind: expected one of store_delay, store_fail, load_fail, lookup_pending, got '?'");
    t.events[1].body = FaultEvent{.kind = FaultKind::store_delay, .rank = 1, .steps = 1, .request_id = {}};
    CHECK(validation_error(t) == "<trace>:0: event.rank: rank 1 is not below workers.ranks 1");
    t.workers.ranks = 2;
    CHECK(validation_error(t).empty());

    t = small_trace();
    t.workers.load_delay_min = 4;
    t.workers.load_delay_max = 3;
    CHECK(validation_error(t) == "<trace>:0: workers.load_delay_max: value 3 below load_delay_min 4");
    t.workers.load_delay_min = -1;
    CHECK(validation_error(t) == "<trace>:0: workers.load_delay_min: value -1 below minimum 0");

    t = small_trace();
    t.store.push_back({{"s"}});
    CHECK(validation_error(t) == "<trace>:0: store: store lines need a connector of kind store");
    t.connectors.push_back({.kind = "store"});
    CHECK(validation_error(t).empty());
    t.store.push_back({{}});
    CHECK(validation_error(t) == "<trace>:0: store.prefix: empty list");

    t = small_trace();
    t.version = 2;
    CHECK(validation_error(t) == "<trace>:0: header: unsupported version 2 (this kvsim reads version 1)");
}

TEST_CASE("parse_trace_file reads a file and names it in errors", "[trace][parser]") {
    const auto dir = std::filesystem::temp_directory_path();
    const auto good = (dir / "kvsim_test_trace_parser_good.trace").string();
    const auto bad = (dir / "kvsim_test_trace_parser_bad.trace").string();
    {
        std::ofstream(good) << "kvsim-trace 1\nengine block_size=2 num_blocks=3 max_model_len=4\n";
        std::ofstream(bad) << "kvsim-trace 1\nengine block_size=2\n";
    }
    CHECK(parse_trace_file(good).engine.num_blocks == 3);
    try {
        parse_trace_file(bad);
        FAIL("no error");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()) == bad + ":2: engine.num_blocks: missing required key");
        CHECK(e.file() == bad);
        CHECK(e.line() == 2);
        CHECK(e.field() == "engine.num_blocks");
        CHECK(e.message() == "missing required key");
    }
    std::remove(good.c_str());
    std::remove(bad.c_str());
}

}  // namespace
}  // namespace kvsim
