// Trace format v1: happy paths, defaults, comments, the schema tables, in-memory validation.
#include <catch2/catch.hpp>

#include "sim/common/stable_hash.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"
#include "sim/trace/trace_schema.h"

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
connector stand_in role=kv_both
segment sys len=48
segment q1 tokens=5,6,7
expect v0.29.0 crash signature=crash:missing_current_block_table
expect v0.30.0 pass
@0 arrive r1 prompt=sys+q1 max_tokens=4 remote_prefill=on
@3 abort r1
@3 arrive r2 prompt=q1 max_tokens=1
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

    REQUIRE(t.connectors.size() == 2);
    CHECK(t.connectors[0].kind == "stand_in");
    CHECK(t.connectors[0].role == KvRole::kv_consumer);
    CHECK(t.connectors[0].load_delay == 2);
    CHECK(t.connectors[1].role == KvRole::kv_both);
    CHECK(t.connectors[1].load_delay == 1);

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

    REQUIRE(t.events.size() == 3);
    CHECK(t.events[0].step == 0);
    CHECK(t.events[0].line == 11);
    const auto& a = std::get<ArriveEvent>(t.events[0].body);
    CHECK(a.request_id == "r1");
    CHECK(a.prompt == std::vector<std::string>{"sys", "q1"});
    CHECK(a.max_tokens == 4);
    CHECK(a.remote_prefill);
    CHECK(t.events[1].step == 3);
    CHECK(t.events[1].line == 12);
    CHECK(std::get<AbortEvent>(t.events[1].body).request_id == "r1");
    CHECK_FALSE(std::get<ArriveEvent>(t.events[2].body).remote_prefill);

    const auto prompt = t.prompt_tokens(a);
    REQUIRE(prompt.size() == 51);
    CHECK(std::equal(prompt.begin(), prompt.begin() + 48, t.segments[0].tokens.begin()));
    CHECK(prompt[48] == 5);
    CHECK(prompt[50] == 7);
    CHECK(t.find_segment("q1") == &t.segments[1]);
    CHECK(t.find_segment("nope") == nullptr);
}

TEST_CASE("parse: omitted keys take the struct defaults", "[trace][parser]") {
    const Trace t = parse_trace("kvsim-trace 1\nengine block_size=4 num_blocks=9\n", "t.trace");
    EngineConfig expected;
    expected.block_size = 4;
    expected.num_blocks = 9;
    CHECK(t.engine == expected);
    CHECK(t.run == RunConfig{});
    CHECK(t.run.variant.empty());
    CHECK(t.connectors.empty());
    CHECK(t.segments.empty());
    CHECK(t.expectations.empty());
    CHECK(t.events.empty());

    const Trace u = parse_trace("kvsim-trace 1\nengine block_size=4 num_blocks=9\nrun\n", "t.trace");
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
        "expect v0.30.0 violation signature=a#b   # '#' inside a value is kept\r\n"
        "segment late len=5\r\n"
        "engine   num_blocks=8\tblock_size=2   \r\n",
        "t.trace");
    CHECK(t.engine.block_size == 2);
    CHECK(t.engine.num_blocks == 8);
    REQUIRE(t.expectations.size() == 1);
    CHECK(t.expectations[0].signature == "a#b");
    CHECK(t.expectations[0].verdict == Verdict::violation);
    REQUIRE(t.events.size() == 1);
    CHECK(t.events[0].line == 4);
    CHECK(t.segments.at(0).tokens.size() == 5);
    // A trace without a final newline parses too.
    CHECK(parse_trace("kvsim-trace 1\nengine block_size=1 num_blocks=2", "t.trace").engine.num_blocks == 2);
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
        "@0 arrive a.b-c_D prompt=u max_tokens=1\n",
        "t.trace");
    CHECK(t.engine.block_size == 1024);
    CHECK(t.run.seed == 18446744073709551615ULL);
    CHECK(t.connectors[0].load_delay == 10000);
    CHECK(t.segments[0].tokens == std::vector<std::int32_t>{0, 2147483647});
    CHECK(std::get<ArriveEvent>(t.events[0].body).request_id == "a.b-c_D");
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
    CHECK_FALSE(parse_role("kv_nothing").has_value());
    CHECK_FALSE(parse_verdict("PASS").has_value());

    const auto& role = connector_schema().rows[1].spec;
    REQUIRE(role.name == "role");
    CHECK(role.choices.size() == 3);
    for (auto c : role.choices) CHECK(parse_role(c).has_value());
    const auto& verdict = expect_schema().rows[1].spec;
    REQUIRE(verdict.name == "verdict");
    CHECK(verdict.choices.size() == 5);
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
    CHECK(help.find("kvsim-trace 1") != std::string::npos);
    CHECK(help.find("block_size=N                 required; 1..1024") != std::string::npos);
    CHECK(help.find("max_batched_tokens=N         default 2048") != std::string::npos);
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
    CHECK(format_line(t.connectors[1]) == "connector stand_in role=kv_both load_delay=1");
    CHECK(format_line(t.segments[0]) == "segment sys len=48");
    CHECK(format_line(t.segments[1]) == "segment q1 tokens=5,6,7");
    CHECK(format_line(t.expectations[0]) == "expect v0.29.0 crash signature=crash:missing_current_block_table");
    CHECK(format_line(t.expectations[1]) == "expect v0.30.0 pass");
    CHECK(format_line(t.events[0]) == "@0 arrive r1 prompt=sys+q1 max_tokens=4 remote_prefill=on");
    CHECK(format_line(t.events[1]) == "@3 abort r1");
    CHECK(format_line(t.events[2]) == "@3 arrive r2 prompt=q1 max_tokens=1");
    CHECK(print_trace(t).rfind("kvsim-trace 1\nengine ", 0) == 0);
}

Trace small_trace() {
    Trace t;
    t.engine.block_size = 4;
    t.engine.num_blocks = 16;
    t.segments.push_back({"s", generated_segment_tokens("s", 6), true});
    t.events.push_back({0, ArriveEvent{"r1", {"s"}, 2, false}, 0});
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

    t = small_trace();
    t.version = 2;
    CHECK(validation_error(t) == "<trace>:0: header: unsupported version 2 (this kvsim reads version 1)");
}

TEST_CASE("parse_trace_file reads a file and names it in errors", "[trace][parser]") {
    const auto dir = std::filesystem::temp_directory_path();
    const auto good = (dir / "kvsim_test_trace_parser_good.trace").string();
    const auto bad = (dir / "kvsim_test_trace_parser_bad.trace").string();
    {
        std::ofstream(good) << "kvsim-trace 1\nengine block_size=2 num_blocks=3\n";
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
