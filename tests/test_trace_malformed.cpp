// Malformed traces: each gives one InputError with the exact "FILE:LINE: FIELD: MESSAGE"
// text, and no input (garbage, NUL bytes, huge numbers, long lines) escapes as anything else.
#include <catch2/catch.hpp>

#include "sim/common/prng.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"
#include "sim/variant/variant.h"
#include "tests/trace_error.h"

#include <string>
#include <string_view>

namespace kvsim {
namespace {

using namespace std::string_literals;

using testing::error_of;

const std::string kHead = "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008\n";  // lines 1-2
const std::string kBody = kHead + "segment s len=8\n@0 arrive r1 prompt=s max_tokens=2\n";  // lines 3-4

struct Case {
    const char* what;
    std::string text;
    std::string expected;
};

void check_cases(const std::vector<Case>& cases) {
    for (const Case& c : cases) {
        INFO(c.what);
        CHECK(error_of(c.text) == c.expected);
    }
}

TEST_CASE("malformed: the baseline used by the cases parses", "[trace][malformed]") {
    CHECK(error_of(kHead).empty());
    CHECK(error_of(kBody).empty());
}

TEST_CASE("malformed: header", "[trace][malformed]") {
    check_cases({
        {"missing header", "engine block_size=16 num_blocks=64 max_model_len=1008\n",
         "t.trace:1: header: expected 'kvsim-trace 1' as the first line, got 'engine'"},
        {"header after comments", "# c\n\n  # d\nengine block_size=16 num_blocks=64 max_model_len=1008\n",
         "t.trace:4: header: expected 'kvsim-trace 1' as the first line, got 'engine'"},
        {"empty file", "", "t.trace:1: header: expected 'kvsim-trace 1', found the end of the file"},
        {"comments only", "# a\n# b\n", "t.trace:2: header: expected 'kvsim-trace 1', found the end of the file"},
        {"wrong version", "kvsim-trace 2\n", "t.trace:1: header: unsupported version 2 (this kvsim reads version 1)"},
        {"version zero", "kvsim-trace 0\n", "t.trace:1: header: unsupported version 0 (this kvsim reads version 1)"},
        {"no version", "kvsim-trace\n", "t.trace:1: header: missing version after 'kvsim-trace'"},
        {"bad version", "kvsim-trace v1\n", "t.trace:1: header: expected a decimal integer, got 'v1'"},
        {"extra header argument", "kvsim-trace 1 x\n", "t.trace:1: header: unexpected argument 'x'"},
        {"second header", kHead + "kvsim-trace 1\n", "t.trace:3: header: second header line (first on line 1)"},
        {"missing engine", "kvsim-trace 1\nrun seed=1\n", "t.trace:1: engine: missing engine line (required once)"},
        {"duplicate engine", kHead + "engine block_size=16 num_blocks=64 max_model_len=1008\n",
         "t.trace:3: engine: duplicate engine line (first on line 2)"},
        {"duplicate run", kHead + "run\nrun seed=2\n", "t.trace:4: run: duplicate run line (first on line 3)"},
    });
}

TEST_CASE("malformed: keywords and keys", "[trace][malformed]") {
    check_cases({
        {"unknown keyword", kHead + "frobnicate x=1\n",
         "t.trace:3: keyword: unknown keyword 'frobnicate' (expected engine, run, multi, connector, workers, "
         "segment, store, expect or @STEP)"},
        {"unknown key", "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008 blocksize=3\n",
         "t.trace:2: engine: unknown key 'blocksize' (keys: block_size, num_blocks, max_batched_tokens, "
         "max_running, max_model_len, chunked_prefill, prefix_caching, long_prefill_threshold, reserve_full_isl, "
         "kv_load_failure_policy, async_scheduling)"},
        {"empty key", "kvsim-trace 1\nengine =3 block_size=16 num_blocks=64\n",
         "t.trace:2: engine: unknown key '' (keys: block_size, num_blocks, max_batched_tokens, max_running, "
         "max_model_len, chunked_prefill, prefix_caching, long_prefill_threshold, reserve_full_isl, "
         "kv_load_failure_policy, async_scheduling)"},
        {"positional as key", kHead + "segment name=s len=3\n", "t.trace:3: segment.name: missing required argument"},
        {"duplicate key", "kvsim-trace 1\nengine block_size=16 num_blocks=64 block_size=32 max_model_len=2016\n",
         "t.trace:2: engine.block_size: duplicate key"},
        {"unexpected argument", "kvsim-trace 1\nengine fast block_size=16 num_blocks=64\n",
         "t.trace:2: engine: unexpected argument 'fast'"},
        {"missing required key", "kvsim-trace 1\nengine block_size=16\n",
         "t.trace:2: engine.num_blocks: missing required key"},
        {"missing max_tokens", kHead + "segment s len=8\n@0 arrive r1 prompt=s\n",
         "t.trace:4: event.max_tokens: missing required key"},
        {"missing role", kHead + "connector stand_in load_delay=3\n",
         "t.trace:3: connector.role: missing required key"},
        {"unknown connector kind", kHead + "connector mooncake role=kv_both\n",
         "t.trace:3: connector.kind: expected one of stand_in, p2p, store, mock, got 'mooncake'"},
        {"empty value", "kvsim-trace 1\nengine block_size= num_blocks=64\n",
         "t.trace:2: engine.block_size: empty value"},
    });
}

TEST_CASE("malformed: integers and booleans", "[trace][malformed]") {
    const std::string e = "kvsim-trace 1\nengine num_blocks=64 block_size=";
    check_cases({
        {"bad integer", e + "1x\n", "t.trace:2: engine.block_size: expected a decimal integer, got '1x'"},
        {"negative", e + "-5\n", "t.trace:2: engine.block_size: expected a decimal integer, got '-5'"},
        {"plus sign", e + "+5\n", "t.trace:2: engine.block_size: expected a decimal integer, got '+5'"},
        {"hex", e + "0x10\n", "t.trace:2: engine.block_size: expected a decimal integer, got '0x10'"},
        {"leading zero", e + "016\n",
         "t.trace:2: engine.block_size: expected a decimal integer without leading zeros, got '016'"},
        {"below minimum", e + "0\n", "t.trace:2: engine.block_size: value 0 below minimum 1"},
        {"above maximum", e + "1025\n", "t.trace:2: engine.block_size: value 1025 above maximum 1024"},
        {"overflow", e + "99999999999999999999999\n",
         "t.trace:2: engine.block_size: value 99999999999999999999999 above maximum 1024"},
        {"u64 overflow by one", kHead + "run seed=18446744073709551616\n",
         "t.trace:3: run.seed: value 18446744073709551616 above maximum 18446744073709551615"},
        {"enormous number", e + std::string(3000, '9') + "\n",
         "t.trace:2: engine.block_size: value " + std::string(40, '9') + "... above maximum 1024"},
        {"num_blocks minimum", "kvsim-trace 1\nengine block_size=16 num_blocks=1 max_model_len=0\n",
         "t.trace:2: engine.num_blocks: value 1 below minimum 2"},
        {"max_steps zero", kHead + "run max_steps=0\n", "t.trace:3: run.max_steps: value 0 below minimum 1"},
        {"load_delay too big", kHead + "connector stand_in role=kv_both load_delay=10001\n",
         "t.trace:3: connector.load_delay: value 10001 above maximum 10000"},
        {"bad bool", "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008 chunked_prefill=yes\n",
         "t.trace:2: engine.chunked_prefill: expected on or off, got 'yes'"},
        {"bool is not 1", "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008 prefix_caching=1\n",
         "t.trace:2: engine.prefix_caching: expected on or off, got '1'"},
    });
}

TEST_CASE("malformed: segments and prompts", "[trace][malformed]") {
    check_cases({
        {"unknown segment", kHead + "segment s len=8\n@0 arrive r1 prompt=s+nope max_tokens=2\n",
         "t.trace:4: event.prompt: unknown segment 'nope'"},
        {"empty prompt element", kHead + "segment s len=8\n@0 arrive r1 prompt=s++s max_tokens=2\n",
         "t.trace:4: event.prompt: element 2: expected a name of 1 to 64 characters from [A-Za-z0-9_.-], got ''"},
        {"duplicate segment", kHead + "segment s len=8\nsegment s tokens=1\n",
         "t.trace:4: segment.name: duplicate segment 's' (first on line 3)"},
        {"len and tokens", kHead + "segment s len=2 tokens=1,2\n",
         "t.trace:3: segment.tokens: only one of len, tokens may be given"},
        {"neither len nor tokens", kHead + "segment s\n", "t.trace:3: segment.len: one of len, tokens is required"},
        {"bad segment name", kHead + "segment s/x len=2\n",
         "t.trace:3: segment.name: expected a name of 1 to 64 characters from [A-Za-z0-9_.-], got 's/x'"},
        {"segment name too long", kHead + "segment " + std::string(65, 'n') + " len=2\n",
         "t.trace:3: segment.name: expected a name of 1 to 64 characters from [A-Za-z0-9_.-], got '" +
             std::string(40, 'n') + "'..."},
        {"empty token", kHead + "segment s tokens=1,,2\n",
         "t.trace:3: segment.tokens: element 2: expected a decimal integer, got ''"},
        {"token out of range", kHead + "segment s tokens=1,2147483648\n",
         "t.trace:3: segment.tokens: element 2: value 2147483648 above maximum 2147483647"},
        {"segment too long", kHead + "segment s len=65537\n",
         "t.trace:3: segment.len: value 65537 above maximum 65536"},
        {"prompt too long",
         "kvsim-trace 1\nengine block_size=4 num_blocks=8 max_model_len=8\nsegment s len=8\n"
         "@0 arrive r1 prompt=s max_tokens=1\n",
         "t.trace:4: event.prompt: prompt of 8 tokens, outside 1..max_model_len-1 = 1..7"},
    });
}

TEST_CASE("malformed: events", "[trace][malformed]") {
    check_cases({
        {"duplicate request id", kBody + "@1 arrive r1 prompt=s max_tokens=2\n",
         "t.trace:5: event.id: duplicate request id 'r1' (first arrives on line 4)"},
        {"abort of unknown id", kBody + "@1 abort r9\n",
         "t.trace:5: event.id: abort of request 'r9', which does not arrive on an earlier line"},
        {"abort before arrive", kHead + "segment s len=8\n@0 abort r1\n@0 arrive r1 prompt=s max_tokens=2\n",
         "t.trace:4: event.id: abort of request 'r1', which does not arrive on an earlier line"},
        {"decreasing step", kHead + "segment s len=8\n@5 arrive r1 prompt=s max_tokens=2\n@3 abort r1\n",
         "t.trace:5: event.step: step 3 is before step 5 of the previous event (line 4)"},
        {"step at max_steps", kHead + "run max_steps=10\nsegment s len=8\n@10 arrive r1 prompt=s max_tokens=2\n",
         "t.trace:5: event.step: step 10 is not below run.max_steps 10"},
        {"bad step", kHead + "@x arrive r1\n", "t.trace:3: event.step: expected a decimal integer, got 'x'"},
        {"no step", kHead + "@ arrive r1\n", "t.trace:3: event.step: missing step number after '@'"},
        {"step out of range", kHead + "@1000000 abort r1\n",
         "t.trace:3: event.step: value 1000000 above maximum 999999"},
        {"no event kind", kHead + "@1\n",
         "t.trace:3: event: missing event kind after '@1' (kinds: arrive, abort, fault, report, stop, "
         "reset_prefix_cache)"},
        {"unknown event kind", kHead + "@1 launch r1\n",
         "t.trace:3: event: unknown event kind 'launch' (kinds: arrive, abort, fault, report, stop, "
         "reset_prefix_cache, check)"},
        {"max_tokens zero", kHead + "segment s len=8\n@0 arrive r1 prompt=s max_tokens=0\n",
         "t.trace:4: event.max_tokens: value 0 below minimum 1"},
        {"bad remote_prefill", kHead + "segment s len=8\n@0 arrive r1 prompt=s max_tokens=1 remote_prefill=true\n",
         "t.trace:4: event.remote_prefill: expected on or off, got 'true'"},
        {"abort without id", kBody + "@1 abort\n", "t.trace:5: event.id: missing required argument"},
        {"abort with two ids", kBody + "@1 abort r1 r2\n", "t.trace:5: event: unexpected argument 'r2'"},
    });
}

// Traces with a store and a p2p connector; the cases append lines 7 and on.
const std::string kStoreHead = kHead +
                               "connector p2p role=kv_both\n"    // 3
                               "connector store role=kv_both\n"  // 4
                               "workers ranks=2\n"               // 5
                               "segment s len=8\n";              // 6
const std::string kStoreBody = kStoreHead + "@0 arrive r1 prompt=s max_tokens=2\n";  // 7

TEST_CASE("malformed: connector kinds and their keys", "[trace][malformed]") {
    REQUIRE(error_of(kStoreBody).empty());
    check_cases({
        {"store key on stand_in", kHead + "connector stand_in role=kv_both save_decode_cache=on\n",
         "t.trace:3: connector.save_decode_cache: applies to connector kind store only"},
        {"stand_in key on store", kHead + "connector store role=kv_both load_delay=2\n",
         "t.trace:3: connector.load_delay: applies to connector kind stand_in only"},
        {"store key on p2p", kHead + "connector p2p role=kv_both load_async=off\n",
         "t.trace:3: connector.load_async: applies to connector kind store only"},
        {"other-kind key checked before its value", kHead + "connector p2p role=kv_both lookup_async=maybe\n",
         "t.trace:3: connector.lookup_async: applies to connector kind store only"},
        {"unknown connector key", kHead + "connector store role=kv_both asynch=on\n",
         "t.trace:3: connector: unknown key 'asynch' (keys: role, load_async, lookup_async, enable_lookup, "
         "save_decode_cache)"},
        {"unknown fault key", kStoreBody + "@1 fault load_fail request=r1 when=3\n",
         "t.trace:8: event: unknown key 'when' (keys: request)"},
        {"bad store bool", kHead + "connector store role=kv_both enable_lookup=yes\n",
         "t.trace:3: connector.enable_lookup: expected on or off, got 'yes'"},
        {"two p2p connectors", kHead + "connector p2p role=kv_both\nconnector store role=kv_both\n"
                                       "connector p2p role=kv_consumer\n",
         "t.trace:5: connector.kind: second connector of kind p2p (first on line 3)"},
        {"two stand_in connectors", kHead + "connector stand_in role=kv_both\nconnector stand_in role=kv_both\n",
         "t.trace:4: connector.kind: second connector of kind stand_in (first on line 3)"},
        {"stand_in after p2p", kHead + "connector p2p role=kv_both\nconnector stand_in role=kv_consumer\n",
         "t.trace:4: connector.kind: stand_in cannot be combined with other connectors (lines 3 and 4); "
         "MultiConnector children are p2p, store or mock"},
        {"store after stand_in", kHead + "connector stand_in role=kv_consumer\nconnector store role=kv_both\n",
         "t.trace:4: connector.kind: stand_in cannot be combined with other connectors (lines 3 and 4); "
         "MultiConnector children are p2p, store or mock"},
        {"multi without role", kHead + "multi\nconnector p2p role=kv_both\nconnector store role=kv_both\n",
         "t.trace:3: multi.role: missing required key"},
        {"multi role outside its set", kHead + "multi role=kv_all\nconnector p2p role=kv_both\n",
         "t.trace:3: multi.role: expected one of kv_consumer, kv_producer, kv_both, got 'kv_all'"},
        {"two multi lines", kHead + "multi role=kv_both\nmulti role=kv_consumer\n",
         "t.trace:4: multi: duplicate multi line (first on line 3)"},
        {"multi without a connector", kHead + "multi role=kv_both\n",
         "t.trace:3: multi: a multi line needs at least one connector line"},
        {"multi over stand_in", kHead + "multi role=kv_both\nconnector stand_in role=kv_consumer\n",
         "t.trace:3: multi: stand_in cannot be a MultiConnector child (children are p2p, store or mock)"},
    });
    // several connector lines without a multi line parse: upstream refuses them (rule kv_role_required)
    CHECK(error_of(kHead + "connector store role=kv_both\nconnector p2p role=kv_both\n").empty());
    CHECK(error_of(kHead + "multi role=kv_producer\nconnector mock role=kv_both matched=8\nconnector p2p role=kv_producer\n")
              .empty());
}

TEST_CASE("malformed: workers", "[trace][malformed]") {
    check_cases({
        {"duplicate workers", kHead + "workers ranks=2\nworkers\n",
         "t.trace:4: workers: duplicate workers line (first on line 3)"},
        {"zero ranks", kHead + "workers ranks=0\n", "t.trace:3: workers.ranks: value 0 below minimum 1"},
        {"too many ranks", kHead + "workers ranks=65\n", "t.trace:3: workers.ranks: value 65 above maximum 64"},
        {"delay too big", kHead + "workers load_delay_max=10001\n",
         "t.trace:3: workers.load_delay_max: value 10001 above maximum 10000"},
        {"store delay max below min", kHead + "workers store_delay_min=5 store_delay_max=4\n",
         "t.trace:3: workers.store_delay_max: value 4 below store_delay_min 5"},
        {"load delay max below default min", kHead + "workers load_delay_max=0\n",
         "t.trace:3: workers.load_delay_max: value 0 below load_delay_min 1"},
        {"unknown workers key", kHead + "workers tp=2\n",
         "t.trace:3: workers: unknown key 'tp' (keys: ranks, store_delay_min, store_delay_max, load_delay_min, "
         "load_delay_max, pull_delay)"},
    });
    CHECK(error_of(kHead + "workers store_delay_min=0 store_delay_max=0 load_delay_min=3 load_delay_max=3\n").empty());
}

TEST_CASE("malformed: store lines", "[trace][malformed]") {
    check_cases({
        {"store without a store connector", kHead + "connector p2p role=kv_both\nsegment s len=8\nstore prefix=s\n",
         "t.trace:5: store: store lines need a connector of kind store"},
        {"store unknown segment", kStoreHead + "store prefix=s+nope\n",
         "t.trace:7: store.prefix: unknown segment 'nope'"},
        {"store without prefix", kStoreHead + "store\n", "t.trace:7: store.prefix: missing required key"},
        {"store prefix too long",
         "kvsim-trace 1\nengine block_size=4 num_blocks=8 max_model_len=8\nconnector store role=kv_both\n"
         "segment s len=5\nstore prefix=s+s\n",
         "t.trace:5: store.prefix: prefix of 10 tokens, outside 1..max_model_len = 1..8"},
    });
    CHECK(error_of("kvsim-trace 1\nengine block_size=4 num_blocks=8 max_model_len=8\nconnector store role=kv_both\n"
                   "segment s len=4\nstore prefix=s+s\n")
              .empty());  // a store prefix may fill max_model_len
}

TEST_CASE("malformed: remote_prefill / remote_decode", "[trace][malformed]") {
    check_cases({
        {"both remote flags", kStoreHead + "@0 arrive r1 prompt=s max_tokens=2 remote_prefill=on remote_decode=on\n",
         "t.trace:7: event.remote_decode: remote_prefill and remote_decode cannot both be on"},
        {"remote_prefill without a connector", kBody + "@1 arrive r2 prompt=s max_tokens=2 remote_prefill=on\n",
         "t.trace:5: event.remote_prefill: remote_prefill=on needs a connector of kind p2p or stand_in"},
        {"remote_prefill with store only",
         kHead + "connector store role=kv_both\nsegment s len=8\n@0 arrive r1 prompt=s max_tokens=2 "
                 "remote_prefill=on\n",
         "t.trace:5: event.remote_prefill: remote_prefill=on needs a connector of kind p2p or stand_in"},
        {"remote_decode with stand_in",
         kHead + "connector stand_in role=kv_both\nsegment s len=8\n@0 arrive r1 prompt=s max_tokens=2 "
                 "remote_decode=on\n",
         "t.trace:5: event.remote_decode: remote_decode=on needs a p2p connector with role kv_producer or kv_both"},
        {"remote_decode with a consumer p2p",
         kHead + "connector p2p role=kv_consumer\nsegment s len=8\n@0 arrive r1 prompt=s max_tokens=2 "
                 "remote_decode=on\n",
         "t.trace:5: event.remote_decode: remote_decode=on needs a p2p connector with role kv_producer or kv_both"},
        {"bad remote_decode", kStoreHead + "@0 arrive r1 prompt=s max_tokens=2 remote_decode=1\n",
         "t.trace:7: event.remote_decode: expected on or off, got '1'"},
    });
    CHECK(error_of(kHead + "connector p2p role=kv_producer\nsegment s len=8\n@0 arrive r1 prompt=s max_tokens=2 "
                           "remote_decode=on\n")
              .empty());
}

TEST_CASE("malformed: faults", "[trace][malformed]") {
    check_cases({
        {"fault without kind", kStoreBody + "@1 fault\n", "t.trace:8: event.kind: missing required argument"},
        {"unknown fault kind", kStoreBody + "@1 fault crash\n",
         "t.trace:8: event.kind: expected one of store_delay, store_fail, load_fail, lookup_pending, got 'crash'"},
        {"store_delay without steps", kStoreBody + "@1 fault store_delay rank=0\n",
         "t.trace:8: event.steps: missing required key"},
        {"store_delay without rank", kStoreBody + "@1 fault store_delay steps=2\n",
         "t.trace:8: event.rank: missing required key"},
        {"store_fail with steps", kStoreBody + "@1 fault store_fail rank=0 steps=2\n",
         "t.trace:8: event.steps: applies to fault kinds store_delay, lookup_pending only"},
        {"load_fail with rank", kStoreBody + "@1 fault load_fail request=r1 rank=0\n",
         "t.trace:8: event.rank: applies to fault kinds store_delay, store_fail only"},
        {"store_delay with request", kStoreBody + "@1 fault store_delay rank=0 steps=1 request=r1\n",
         "t.trace:8: event.request: applies to fault kinds load_fail, lookup_pending only"},
        {"load_fail without request", kStoreBody + "@1 fault load_fail\n",
         "t.trace:8: event.request: missing required key"},
        {"lookup_pending without steps", kStoreBody + "@1 fault lookup_pending request=r1\n",
         "t.trace:8: event.steps: missing required key"},
        {"fault steps zero", kStoreBody + "@1 fault lookup_pending request=r1 steps=0\n",
         "t.trace:8: event.steps: value 0 below minimum 1"},
        {"fault steps too big", kStoreBody + "@1 fault store_delay rank=0 steps=10001\n",
         "t.trace:8: event.steps: value 10001 above maximum 10000"},
        {"rank not below workers.ranks", kStoreBody + "@1 fault store_fail rank=2\n",
         "t.trace:8: event.rank: rank 2 is not below workers.ranks 2"},
        {"rank above the format maximum", kStoreBody + "@1 fault store_fail rank=64\n",
         "t.trace:8: event.rank: value 64 above maximum 63"},
        {"rank with default workers", kHead + "connector store role=kv_both\n@0 fault store_fail rank=1\n",
         "t.trace:4: event.rank: rank 1 is not below workers.ranks 1"},
        {"fault on unknown request", kStoreBody + "@1 fault load_fail request=r9\n",
         "t.trace:8: event.request: fault on request 'r9', which does not arrive on an earlier line"},
        {"fault before its arrive", kStoreHead + "@0 fault lookup_pending request=r1 steps=1\n"
                                                 "@0 arrive r1 prompt=s max_tokens=2\n",
         "t.trace:7: event.request: fault on request 'r1', which does not arrive on an earlier line"},
        {"store_delay without a store connector",
         kHead + "connector p2p role=kv_both\n@0 fault store_delay rank=0 steps=1\n",
         "t.trace:4: event.kind: fault store_delay needs a connector of kind store"},
        {"store_fail with stand_in", kHead + "connector stand_in role=kv_both\n@0 fault store_fail rank=0\n",
         "t.trace:4: event.kind: fault store_fail needs a connector of kind store"},
        {"lookup_pending without a store connector",
         kHead + "connector p2p role=kv_both\nsegment s len=8\n@0 arrive r1 prompt=s max_tokens=2\n"
                 "@1 fault lookup_pending request=r1 steps=3\n",
         "t.trace:6: event.kind: fault lookup_pending needs a connector of kind store"},
        {"load_fail without a connector", kBody + "@1 fault load_fail request=r1\n",
         "t.trace:5: event.kind: fault load_fail needs a connector of kind p2p, store or stand_in"},
        {"fault step order", kStoreBody + "@1 fault store_fail rank=0\n@0 fault store_fail rank=1\n",
         "t.trace:9: event.step: step 0 is before step 1 of the previous event (line 8)"},
    });
    for (const char* connector : {"stand_in", "p2p", "store"})
        CHECK(error_of(kHead + "connector " + connector + " role=kv_both\nsegment s len=8\n"
                       "@0 arrive r1 prompt=s max_tokens=2\n@1 fault load_fail request=r1\n")
                  .empty());
}

TEST_CASE("malformed: variants and expectations", "[trace][malformed]") {
    std::string unknown_release;
    std::string unknown_patch;
    REQUIRE_FALSE(resolve_variant("v9.9", &unknown_release).has_value());
    REQUIRE_FALSE(resolve_variant("v0.29.0+pr1", &unknown_patch).has_value());
    check_cases({
        {"unknown variant", kHead + "run variant=v9.9\n", "t.trace:3: run.variant: " + unknown_release},
        {"unknown patch", kHead + "expect v0.29.0+pr1 pass\n", "t.trace:3: expect.variant: " + unknown_patch},
        {"variant charset", kHead + "run variant=v0.30.0/x\n",
         "t.trace:3: run.variant: expected a variant name such as v0.30.0 or v0.29.0+pr55066, got 'v0.30.0/x'"},
        {"unknown verdict", kHead + "expect v0.30.0 ok\n",
         "t.trace:3: expect.verdict: expected one of pass, violation, crash, liveness, nondeterminism, mismatch, rejected, got 'ok'"},
        {"missing verdict", kHead + "expect v0.30.0\n", "t.trace:3: expect.verdict: missing required argument"},
        {"duplicate expect", kHead + "expect v0.30.0 pass\nexpect v0.30.0 crash\n",
         "t.trace:4: expect.variant: duplicate expect for variant 'v0.30.0' (first on line 3)"},
        {"non-ascii signature", kHead + "expect v0.30.0 crash signature=caf\xc3\xa9\n",
         "t.trace:3: expect.signature: expected 1 to 256 printable characters without spaces, got 'caf\\xc3\\xa9'"},
    });
}

TEST_CASE("malformed: long lines / control bytes and binary garbage", "[trace][malformed]") {
    check_cases({
        {"long line", kHead + "# " + std::string(4998, 'x') + "\n",
         "t.trace:3: line: 5000 bytes, more than the maximum 4096"},
        {"long line before the header", std::string(4097, ' ') + "\n",
         "t.trace:1: line: 4097 bytes, more than the maximum 4096"},
        {"binary garbage", "\x7f" "ELF\x02\x01\x01\0\0\0"s,
         "t.trace:1: line: control character \\x7f at column 1"},
        {"NUL inside a line", "kvsim-trace 1\nengine block_size=16\0 num_blocks=64\n"s,
         "t.trace:2: line: control character \\x00 at column 21"},
        {"bare CR inside a line", "kvsim-trace 1\r\nengine block_size=16\rnum_blocks=64\r\n",
         "t.trace:2: line: control character \\x0d at column 21"},
        {"high bytes", "\xff\xfe\xfd garbage\n",
         "t.trace:1: header: expected 'kvsim-trace 1' as the first line, got '\\xff\\xfe\\xfd'"},
        {"high bytes as keyword", kHead + "\xc3\xa9vent x\n",
         "t.trace:3: keyword: unknown keyword '\\xc3\\xa9vent' (expected engine, run, multi, connector, "
         "workers, segment, store, expect or @STEP)"},
    });
    CHECK(error_of(kHead + "# " + std::string(4094, 'x') + "\r\n").empty());  // 4096 bytes + CR is fine
}

TEST_CASE("malformed: an unreadable file is an input error on line 0", "[trace][malformed]") {
    CHECK_THROWS_WITH(parse_trace_file("/nonexistent/dir/x.trace"),
                      "/nonexistent/dir/x.trace:0: file: cannot open: No such file or directory");
    CHECK_THROWS_WITH(parse_trace_file("/"), "/:0: file: is a directory, not a trace");
}

// A tiny deterministic fuzzer: random bytes and byte-level mutations of a valid trace.
// Every input either parses (and then round-trips) or throws InputError with a one-line
// message; nothing else escapes.
void check_survives(const std::string& text) {
    try {
        const Trace t = parse_trace(text, "f.trace");
        const std::string printed = print_trace(t);
        const Trace again = parse_trace(printed, "f.trace");
        REQUIRE(again == t);
        REQUIRE(print_trace(again) == printed);
    } catch (const InputError& e) {
        const std::string what = e.what();
        REQUIRE(what.rfind("f.trace:", 0) == 0);
        REQUIRE(what.find('\n') == std::string::npos);
    }
}

TEST_CASE("malformed: random bytes and mutations never escape as anything but InputError",
          "[trace][malformed][fuzz]") {
    const std::string seed_texts[] = {
        "kvsim-trace 1\nengine block_size=4 num_blocks=16 max_model_len=64 chunked_prefill=off\n"
        "run seed=7 max_steps=100 variant=v0.29.0\nconnector stand_in role=kv_both load_delay=3\n"
        "segment a len=5\nsegment b tokens=1,2,3\nexpect v0.30.0 pass\n"
        "@0 arrive r1 prompt=a+b max_tokens=3 remote_prefill=on\n@2 abort r1\n@2 arrive r2 prompt=b max_tokens=1\n",
        "kvsim-trace 1\nengine block_size=4 num_blocks=16 max_model_len=64\nrun max_steps=100\n"
        "connector p2p role=kv_both\nconnector store role=kv_both lookup_async=on save_decode_cache=on\n"
        "workers ranks=3 store_delay_min=1 store_delay_max=4 pull_delay=2\nsegment a len=5\nstore prefix=a+a\n"
        "@0 arrive r1 prompt=a max_tokens=3 remote_decode=on\n@1 fault store_delay rank=2 steps=3\n"
        "@1 fault lookup_pending request=r1 steps=2\n@2 fault load_fail request=r1\n@2 fault store_fail rank=1\n",
    };
    for (const std::string& seed_text : seed_texts) REQUIRE(error_of(seed_text).empty());
    const std::string alphabet =
        "kvsim-trace 1engine=_,+@#\t\r\n\0\xff" "0123456789 abortarrivesegmentlenfaultstorep2pworkersrank"s;
    Prng rng(12345);
    int parsed = 0;
    for (int round = 0; round < 3000; ++round) {
        std::string text;
        if (round % 3 == 0) {
            const auto n = rng.below(200);
            for (std::uint64_t i = 0; i < n; ++i) text += static_cast<char>(rng.below(256));
        } else {
            text = seed_texts[rng.below(2)];
            const auto edits = 1 + rng.below(4);
            for (std::uint64_t e = 0; e < edits; ++e) {
                const auto pos = rng.below(text.size() + 1);
                switch (rng.below(4)) {
                    case 0: text.insert(pos, 1, alphabet[rng.below(alphabet.size())]); break;
                    case 1:
                        if (pos < text.size()) text.erase(pos, 1 + rng.below(8));
                        break;
                    case 2:
                        if (pos < text.size()) text[pos] = static_cast<char>(rng.below(256));
                        break;
                    default: text.insert(pos, std::string(1 + rng.below(30), '9')); break;
                }
            }
        }
        INFO("round " << round);
        check_survives(text);
        parsed += error_of(text).empty() ? 1 : 0;
    }
    CHECK(parsed > 5);  // some mutations stay valid and exercise the round trip
}

}  // namespace
}  // namespace kvsim
