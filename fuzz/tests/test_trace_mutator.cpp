// The fuzzers' structure-aware trace mutator (fuzz/mutator): every output is a valid trace inside
// the fuzzing envelope, for every corpus seed, garbage input, crossover and byte-level mutation;
// the same (input, seed) gives the same output; every mutation kind changes what it names.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/mutator/trace_mutator.h"
#include "sim/common/prng.h"
#include "sim/trace/config_rules.h"
#include "sim/trace/input_error.h"
#include "sim/trace/trace_parser.h"
#include "sim/trace/trace_printer.h"
#include "sim/trace/trace_schema.h"
#include "sim/variant/variant.h"

namespace kvsim::fuzz {
namespace {

struct Seed {
    std::string path;
    std::string text;
};

std::vector<Seed> corpus_seeds() {
    namespace fs = std::filesystem;
    std::vector<Seed> out;
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(KVSIM_SOURCE_DIR) / "corpus")) {
        if (!entry.is_regular_file() || entry.path().extension() != ".trace") continue;
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        out.push_back({entry.path().string(), text.str()});
    }
    std::sort(out.begin(), out.end(), [](const Seed& a, const Seed& b) { return a.path < b.path; });
    return out;
}

int count_requests(const Trace& t) {
    return static_cast<int>(std::count_if(t.events.begin(), t.events.end(),
                                          [](const Event& e) { return std::holds_alternative<ArriveEvent>(e.body); }));
}

// Everything the fuzz target relies on: the text parses, is canonical, validates, is inside the
// envelope and the work budget.
void check_output(const std::string& text, std::size_t max_size = 1 << 16) {
    REQUIRE(!text.empty());
    REQUIRE(text.size() <= max_size);
    Trace t;
    try {
        t = parse_trace(text, "mutated.trace");
    } catch (const InputError& e) {
        FAIL("mutator output does not parse: " << e.what() << "\n" << text);
    }
    REQUIRE(print_trace(t) == text);
    CHECK(t.expectations.empty());
    CHECK(t.checks.empty());
    CHECK(t.events.size() <= static_cast<std::size_t>(envelope::kMaxEvents));
    CHECK(count_requests(t) <= envelope::kMaxRequests);
    CHECK(t.segments.size() <= static_cast<std::size_t>(envelope::kMaxSegments));
    CHECK(t.engine.max_model_len <= envelope::kMaxModelLen);
    CHECK(t.run.max_steps == step_bound(t));
    std::string why;
    CHECK(within_budget(t, &why));
    INFO(why);
    // upstream accepts it, under the release the fuzz target runs and the clean preset
    for (const char* v : {"v0.27.1", "v0.30.0", "v0.30.0+all_fixes"}) {
        const auto rejection = upstream_rejects(t, require_variant(v));
        CHECK_FALSE(rejection.has_value());
        if (rejection) FAIL_CHECK(v << ": " << rejection->message() << "\n" << text);
    }
    for (const Event& e : t.events)
        if (const auto* a = std::get_if<ArriveEvent>(&e.body); a && a->remote_prefill) {
            // remote_prefill is served by a stand_in or a p2p connector that is not only a producer
            const bool ok = std::any_of(t.connectors.begin(), t.connectors.end(), [](const ConnectorSpec& c) {
                return c.kind == kConnectorStandIn || (c.kind == kConnectorP2p && c.role != KvRole::kv_producer);
            });
            CHECK(ok);
        }
}

TEST_CASE("fuzz mutator: every corpus seed mutated many times stays a valid trace", "[fuzz][mutator]") {
    const auto seeds = corpus_seeds();
    REQUIRE(seeds.size() >= 8);
    TextOptions options;
    options.max_size = 8192;
    for (const Seed& seed : seeds) {
        INFO(seed.path);
        std::string current = seed.text;
        for (std::uint64_t i = 0; i < 150; ++i) {
            // half from the seed itself, half chained (mutants of mutants)
            const std::string out = mutate_text(i % 2 == 0 ? std::string_view(seed.text) : current, i * 7919 + 1, options);
            check_output(out, options.max_size);
            current = out;
        }
    }
}

TEST_CASE("fuzz mutator: the variant is stamped into mutated traces", "[fuzz][mutator]") {
    TextOptions options;
    options.variant = "v0.29.0+pr55066";
    const std::string out = mutate_text(corpus_seeds().front().text, 3, options);
    CHECK(parse_trace(out, "x").run.variant == "v0.29.0+pr55066");
}

TEST_CASE("fuzz mutator: mutation and crossover are deterministic for a seed", "[fuzz][mutator]") {
    const auto seeds = corpus_seeds();
    TextOptions options;
    std::set<std::string> distinct;
    for (std::uint64_t s = 0; s < 40; ++s) {
        const std::string& text = seeds[s % seeds.size()].text;
        const std::string a = mutate_text(text, s, options);
        CHECK(a == mutate_text(text, s, options));
        distinct.insert(a);
        const std::string& other = seeds[(s * 5 + 3) % seeds.size()].text;
        CHECK(cross_over_text(text, other, s, options) == cross_over_text(text, other, s, options));
    }
    CHECK(distinct.size() >= 30);  // different seeds explore different traces
}

// mutate_text skips mutate()'s first normalize(): repair() already gave a trace normalize() keeps.
TEST_CASE("fuzz mutator: mutate_text prints what mutate() makes of the repaired parent", "[fuzz][mutator]") {
    const TextOptions options{.max_size = 1 << 16, .variant = "v0.30.0", .byte_mutate = {}, .cache = nullptr};
    for (const Seed& seed : corpus_seeds()) {
        INFO(seed.path);
        for (std::uint64_t s = 0; s < 5; ++s) {
            Prng rng(s);
            Trace t = repair(seed.text, rng.next());
            mutate(t, rng);
            t.run.variant = options.variant;
            CHECK(mutate_text(seed.text, s, options) == print_trace(t));
        }
    }
}

TEST_CASE("fuzz mutator: a mutation always changes the trace", "[fuzz][mutator]") {
    for (const Seed& seed : corpus_seeds()) {
        INFO(seed.path);
        for (std::uint64_t s = 0; s < 20; ++s) {
            Trace before = repair(seed.text, s);
            Trace after = before;
            Prng rng(s);
            mutate(after, rng);
            CHECK_FALSE(after == before);
        }
    }
}

TEST_CASE("fuzz mutator: crossover of corpus pairs is valid", "[fuzz][mutator]") {
    const auto seeds = corpus_seeds();
    TextOptions options;
    std::uint64_t s = 0;
    for (const Seed& a : seeds)
        for (const Seed& b : seeds) {
            INFO(a.path << " x " << b.path);
            check_output(cross_over_text(a.text, b.text, ++s, options));
        }
    // children of mutants
    const std::string x = mutate_text(seeds[0].text, 1, options);
    const std::string y = mutate_text(seeds[1].text, 2, options);
    for (std::uint64_t k = 0; k < 50; ++k) check_output(cross_over_text(x, y, k, options));
}

TEST_CASE("fuzz mutator: crossover takes parts of both parents", "[fuzz][mutator]") {
    const auto seeds = corpus_seeds();
    const Trace a = repair(seeds[0].text, 0);
    const Trace b = repair(seeds[1].text, 0);
    bool from_b = false;
    for (std::uint64_t s = 0; s < 40 && !from_b; ++s) {
        Prng rng(s);
        const Trace child = cross_over(a, b, rng);
        for (const Event& e : child.events)
            if (const auto* arrive = std::get_if<ArriveEvent>(&e.body))
                for (const Event& eb : b.events)
                    if (const auto* ab = std::get_if<ArriveEvent>(&eb.body))
                        from_b = from_b || child.prompt_tokens(*arrive) == b.prompt_tokens(*ab);
    }
    CHECK(from_b);
}

TEST_CASE("fuzz mutator: repair turns garbage into a valid trace", "[fuzz][mutator]") {
    std::vector<std::string> inputs = {
        "",
        "\n",
        std::string("\0\0\0", 3),
        "kvsim-trace 2\n",
        "engine block_size=0 num_blocks=99999999999999999999999\n@5 arrive r1 prompt=nope max_tokens=0\n",
        "kvsim-trace 1\nengine block_size=16 num_blocks=64 max_model_len=1008\n@3 abort ghost\n@2 fault store_fail rank=9\n",
        "connector stand_in role=kv_both\nconnector p2p role=kv_producer\nconnector store role=kv_both\n"
        "connector store role=kv_consumer\n@0 arrive a prompt=x max_tokens=3 remote_prefill=on remote_decode=on\n",
        "segment x len=100000\nsegment x tokens=1,2,3\nsegment y tokens=-1,2\n@0 arrive a prompt=x+y+x+y+x+y\n",
        "@999999 arrive a prompt=s max_tokens=5\n@0 arrive a prompt=s max_tokens=5\nsegment s len=7\n",
        "workers ranks=999 store_delay_min=9 store_delay_max=2\nconnector store role=kv_both\n"
        "segment s len=30\n@0 arrive r prompt=s max_tokens=4\n@1 fault lookup_pending request=r steps=0\n",
        std::string(5000, 'x') + "\nsegment \xff\xfe len=4\n",
    };
    {  // unparsable (no header), with 300 segments of 65536 generated tokens: cut while salvaging
        std::string big;
        for (int i = 0; i < 300; ++i) big += "segment s" + std::to_string(i) + " len=65536\n";
        inputs.push_back(big + "@0 arrive r prompt=s7+s9 max_tokens=2\n");
    }
    // corpus seeds cut at every 37th byte, and with bytes flipped
    Prng rng(99);
    for (const Seed& seed : corpus_seeds()) {
        for (std::size_t cut = 0; cut < seed.text.size(); cut += 37) inputs.push_back(seed.text.substr(0, cut));
        for (int k = 0; k < 20; ++k) {
            std::string flipped = seed.text;
            for (int j = 0; j < 4; ++j)
                flipped[static_cast<std::size_t>(rng.below(flipped.size()))] = static_cast<char>(rng.below(256));
            inputs.push_back(flipped);
        }
    }
    for (int k = 0; k < 200; ++k) {  // random bytes
        std::string bytes(static_cast<std::size_t>(rng.below(400)), '\0');
        for (char& c : bytes) c = static_cast<char>(rng.below(256));
        inputs.push_back(bytes);
    }
    std::uint64_t s = 0;
    for (const std::string& input : inputs) {
        const Trace t = repair(input, ++s);
        const std::string text = print_trace(t);
        INFO("input: " << input.substr(0, 200));
        check_output(text);
        CHECK(count_requests(t) >= 1);
        Trace again = t;
        CHECK(normalize(again));
        CHECK(again == t);  // normalize is idempotent
    }
}

TEST_CASE("fuzz mutator: repair keeps what parses in a broken trace", "[fuzz][mutator]") {
    const std::string text =
        "kvsim-trace 1\n"
        "engine block_size=8 num_blocks=40 max_model_len=312 frobnicate=1\n"
        "connector store role=kv_both save_decode_cache=on\n"
        "segment sys len=32\n"
        "store prefix=sys\n"
        "@0 arrive r1 prompt=sys max_tokens=9 bogus=1\n"
        "@1 fault store_fail rank=0\n";
    const Trace t = repair(text, 1);
    CHECK(t.engine.block_size == 8);
    CHECK(t.engine.num_blocks == 40);
    REQUIRE(t.connectors.size() == 1);
    CHECK(t.connectors[0].save_decode_cache);
    REQUIRE(t.store.size() == 1);
    REQUIRE(t.events.size() == 2);
    CHECK(std::get<ArriveEvent>(t.events[0].body).max_tokens == 9);
    CHECK(std::holds_alternative<FaultEvent>(t.events[1].body));
}

TEST_CASE("fuzz mutator: normalize never falls back on mutated traces", "[fuzz][mutator]") {
    for (const Seed& seed : corpus_seeds()) {
        INFO(seed.path);
        Trace t = repair(seed.text, 0);
        Prng rng(seed.text.size());
        for (int i = 0; i < 120; ++i) {
            // stacks of raw mutations, without normalize in between
            const int n = static_cast<int>(rng.between(1, 6));
            for (int k = 0; k < n; ++k)
                apply_mutation(t, all_mutations()[static_cast<std::size_t>(rng.below(all_mutations().size()))], rng);
            REQUIRE(normalize(t));
        }
    }
}

TEST_CASE("fuzz mutator: byte-level mutations are repaired", "[fuzz][mutator]") {
    TextOptions options;
    options.max_size = 4096;
    std::uint64_t calls = 0;
    options.byte_mutate = [&](std::uint8_t* data, std::size_t size, std::size_t max) -> std::size_t {
        ++calls;
        Prng rng(calls);
        // an insert of dictionary-like words, deletions and flipped bytes, like LLVMFuzzerMutate
        static const std::string words[] = {" save_decode_cache=on", " role=kv_producer", "@0 fault load_fail", "\n",
                                            " remote_prefill=on", "=99999999999", "+"};
        const std::string& w = words[rng.below(7)];
        if (size + w.size() <= max) {
            const std::size_t at = static_cast<std::size_t>(rng.below(size + 1));
            std::copy_backward(data + at, data + size, data + size + w.size());
            std::copy(w.begin(), w.end(), data + at);
            size += w.size();
        }
        for (int j = 0; j < 3 && size > 0; ++j) data[rng.below(size)] = static_cast<std::uint8_t>(rng.below(256));
        if (size > 10 && rng.chance(1, 2)) size -= static_cast<std::size_t>(rng.below(10));
        return size;
    };
    for (const Seed& seed : corpus_seeds())
        for (std::uint64_t s = 0; s < 60; ++s) check_output(mutate_text(seed.text, s, options), options.max_size);
    CHECK(calls > 20);  // about one call in kByteMutationOdds
}

TEST_CASE("fuzz mutator: output fits max_size or is empty", "[fuzz][mutator]") {
    const auto seeds = corpus_seeds();
    for (const std::size_t max : {std::size_t{64}, std::size_t{300}, std::size_t{600}, std::size_t{1000}})
        for (std::uint64_t s = 0; s < 30; ++s) {
            TextOptions options;
            options.max_size = max;
            const std::string out = mutate_text(seeds[s % seeds.size()].text, s, options);
            if (out.empty()) {
                CHECK(max < 400);  // only when not even a minimal trace fits
                continue;
            }
            check_output(out, max);
        }
}

TEST_CASE("fuzz mutator: the work budget accepts every corpus trace and rejects runaway ones", "[fuzz][mutator]") {
    for (const Seed& seed : corpus_seeds()) {
        INFO(seed.path);
        std::string why;
        CHECK(within_budget(parse_trace(seed.text, seed.path), &why));
        INFO(why);
    }
    Trace t = parse_trace(corpus_seeds().front().text, "x");
    t.run.max_steps = budget::kMaxSteps + 1;
    CHECK_FALSE(within_budget(t));
    t = parse_trace(corpus_seeds().front().text, "x");
    t.engine.num_blocks = 2;  // no request fits a one-block pool
    std::string why;
    CHECK_FALSE(within_budget(t, &why));
    CHECK(why.find("does not fit") != std::string::npos);
}

// ---- each mutation kind changes the part of the trace it names ----------------------------

std::vector<Event> events_of(const Trace& t, auto predicate) {
    std::vector<Event> out;
    for (const Event& e : t.events)
        if (predicate(e)) out.push_back(e);
    return out;
}

bool is_arrive(const Event& e) { return std::holds_alternative<ArriveEvent>(e.body); }
bool is_abort(const Event& e) { return std::holds_alternative<AbortEvent>(e.body); }
bool is_fault(const Event& e) { return std::holds_alternative<FaultEvent>(e.body); }

std::vector<ArriveEvent> arrives(const Trace& t) {
    std::vector<ArriveEvent> out;
    for (const Event& e : events_of(t, is_arrive)) out.push_back(std::get<ArriveEvent>(e.body));
    return out;
}

std::vector<std::vector<std::int32_t>> prompts(const Trace& t) {
    std::vector<std::vector<std::int32_t>> out;
    for (const ArriveEvent& a : arrives(t)) out.push_back(t.prompt_tokens(a));
    return out;
}

std::vector<std::vector<std::int32_t>> stored(const Trace& t) {
    std::vector<std::vector<std::int32_t>> out;
    for (const StoreEntry& e : t.store) out.push_back(t.concat_segments(e.prefix));
    return out;
}

std::vector<std::string> kinds(const Trace& t) {
    std::vector<std::string> out;
    for (const ConnectorSpec& c : t.connectors) out.push_back(c.kind);
    return out;
}

std::vector<KvRole> roles(const Trace& t) {
    std::vector<KvRole> out;
    for (const ConnectorSpec& c : t.connectors) out.push_back(c.role);
    return out;
}

// Whether `after` differs from `before` in the part `m` names.
bool changed_as_named(Mutation m, const Trace& before, const Trace& after) {
    const auto steps = [](const Trace& t) {
        std::vector<std::pair<int, std::string>> out;
        for (const Event& e : t.events) out.emplace_back(e.step, format_line(e));
        return out;
    };
    switch (m) {
        case Mutation::add_request: return arrives(after).size() > arrives(before).size();
        case Mutation::remove_event: return after.events.size() < before.events.size();
        case Mutation::move_event: return steps(after) != steps(before) && after.events.size() == before.events.size();
        case Mutation::add_abort: return events_of(after, is_abort).size() > events_of(before, is_abort).size();
        case Mutation::add_fault: return events_of(after, is_fault).size() > events_of(before, is_fault).size();
        case Mutation::change_fault: {
            const auto a = events_of(after, is_fault);
            const auto b = events_of(before, is_fault);
            return !a.empty() && !(a == b);
        }
        case Mutation::change_max_tokens: {
            const auto a = arrives(after);
            const auto b = arrives(before);
            if (a.size() != b.size()) return false;
            for (std::size_t i = 0; i < a.size(); ++i)
                if (a[i].max_tokens != b[i].max_tokens) return true;
            return false;
        }
        case Mutation::change_prompt:
        case Mutation::share_prefix: return prompts(after) != prompts(before);
        case Mutation::toggle_remote: {
            const auto a = arrives(after);
            const auto b = arrives(before);
            if (a.size() != b.size()) return false;
            for (std::size_t i = 0; i < a.size(); ++i)
                if (a[i].remote_prefill != b[i].remote_prefill || a[i].remote_decode != b[i].remote_decode) return true;
            return false;
        }
        case Mutation::engine_size: {
            EngineConfig a = after.engine, b = before.engine;
            return a.num_blocks != b.num_blocks || a.block_size != b.block_size ||
                   a.max_batched_tokens != b.max_batched_tokens || a.max_running != b.max_running ||
                   a.max_model_len != b.max_model_len || a.long_prefill_threshold != b.long_prefill_threshold;
        }
        case Mutation::engine_flags:
            return after.engine.chunked_prefill != before.engine.chunked_prefill ||
                   after.engine.prefix_caching != before.engine.prefix_caching ||
                   after.engine.reserve_full_isl != before.engine.reserve_full_isl;
        case Mutation::run_seed: return after.run.seed != before.run.seed;
        case Mutation::add_connector: return after.connectors.size() > before.connectors.size() ||
                                             (kinds(after) != kinds(before) && !after.connectors.empty());
        case Mutation::remove_connector: return after.connectors.size() < before.connectors.size();
        case Mutation::swap_connectors: {
            auto a = kinds(after);
            auto b = kinds(before);
            if (a.size() != 2 || a == b) return false;
            std::reverse(b.begin(), b.end());
            return a == b;
        }
        case Mutation::change_role: return kinds(after) == kinds(before) && roles(after) != roles(before);
        case Mutation::connector_option: return kinds(after) == kinds(before) && !(after.connectors == before.connectors);
        case Mutation::workers: return !(after.workers == before.workers);
        case Mutation::segment_size:
        case Mutation::segment_tokens: return !(after.segments == before.segments);
        case Mutation::add_store_entry: return after.store.size() > before.store.size();
        case Mutation::remove_store_entry: return after.store.size() < before.store.size();
        case Mutation::change_store_entry: return stored(after) != stored(before) && after.store.size() == before.store.size();
        case Mutation::load_failure_policy: return after.engine.kv_load_failure_policy != before.engine.kv_load_failure_policy;
        case Mutation::async_scheduling: return after.engine.async_scheduling != before.engine.async_scheduling;
    }
    return false;
}

TEST_CASE("fuzz mutator: every mutation kind changes the structure it names", "[fuzz][mutator]") {
    const auto seeds = corpus_seeds();
    REQUIRE(all_mutations().size() == static_cast<std::size_t>(kMutationCount));
    for (const Mutation m : all_mutations()) {
        INFO(to_string(m));
        int hits = 0;
        int tries = 0;
        for (const Seed& seed : seeds)
            for (std::uint64_t s = 0; s < 12; ++s) {
                const Trace before = repair(seed.text, s);
                Trace after = before;
                Prng rng(s * 31 + seed.text.size());
                if (!apply_mutation(after, m, rng)) continue;
                REQUIRE(normalize(after));
                ++tries;
                hits += changed_as_named(m, before, after) ? 1 : 0;
            }
        CHECK(tries > 0);
        // most applications survive normalize() as the change they name
        CHECK(hits * 2 >= tries);
    }
}

TEST_CASE("fuzz mutator: async_scheduling steps through unset, on and off, and mutants draw both modes",
          "[fuzz][mutator][async]") {
    const Seed& seed = corpus_seeds().front();
    Trace t = repair(seed.text, 0);
    t.engine.async_scheduling.reset();
    Prng rng(1);
    std::vector<std::optional<bool>> steps;
    for (int i = 0; i < 3; ++i) {
        REQUIRE(apply_mutation(t, Mutation::async_scheduling, rng));
        REQUIRE(normalize(t));
        steps.push_back(t.engine.async_scheduling);
    }
    CHECK(steps == std::vector<std::optional<bool>>{true, false, std::nullopt});
    // Through the libFuzzer entry point: chained mutants of one seed reach both stated modes.
    std::set<std::string> modes;
    std::string current = seed.text;
    for (std::uint64_t i = 0; i < 400 && modes.size() < 2; ++i) {
        current = mutate_text(current, i + 1, TextOptions{});
        const auto mode = parse_trace(current, "mutated.trace").engine.async_scheduling;
        if (mode) modes.insert(*mode ? "on" : "off");
    }
    CHECK(modes == std::set<std::string>{"off", "on"});
}

TEST_CASE("fuzz mutator: every mutation kind has a name", "[fuzz][mutator]") {
    std::set<std::string_view> names;
    for (const Mutation m : all_mutations()) names.insert(to_string(m));
    CHECK(names.size() == all_mutations().size());
    CHECK(names.count("?") == 0);
}

}  // namespace
}  // namespace kvsim::fuzz
