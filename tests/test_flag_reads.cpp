// Engine::flags_read (sim/variant/flag_reads.h): the variant flags a run's decisions read. The
// classifier skips a counterfactual that edits only flags the run never read, on the premise that
// such a variant makes the same run; here the premise is checked on the corpus: every flag a run did
// not read, set to each of its other values, gives the same log, verdict and reads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "properties/findings/registry.h"
#include "properties/harness/run_trace.h"
#include "sim/trace/trace_parser.h"
#include "sim/variant/variant.h"

namespace kvsim {
namespace {

const std::string kRepo = KVSIM_SOURCE_DIR;

bool has_bit(std::uint32_t bits, int bit) { return (bits >> bit & 1u) != 0; }

// The (trace, variant) pairs: every registry witness, where its finding's flags decide, and every
// corpus trace under the default preset.
std::set<std::pair<std::string, std::string>> corpus_runs() {
    std::set<std::pair<std::string, std::string>> runs;
    for (const KnownEntry& entry : builtin_registry().entries)
        for (const Witness& w : entry.witnesses) runs.insert({w.trace, w.variant});
    for (const auto& e : std::filesystem::recursive_directory_iterator(kRepo + "/corpus"))
        if (e.path().extension() == ".trace")
            runs.insert({std::filesystem::relative(e.path(), kRepo).string(), std::string(default_variant())});
    return runs;
}

RunResult logged_run(const Trace& trace, const Variant& variant) {
    return run_trace(trace, variant, RunOptions{.text_log = true, .events = false});
}

}  // namespace

TEST_CASE("flag reads: each flag row has its own FlagReads bit", "[variant][flag_reads]") {
    const std::vector<int> bits = variant_flag_bits();
    REQUIRE(bits.size() == variant_flags().size());
    for (std::size_t row = 0; row < bits.size(); ++row) CHECK(bits[row] == static_cast<int>(row));
    CHECK(bits.size() <= 32);
}

TEST_CASE("flag reads: differing_flag_bits names exactly the flags that differ", "[variant][flag_reads]") {
    const Variant release = require_variant("v0.30.0");
    CHECK(differing_flag_bits(release, release) == 0);
    Variant edited = release;
    REQUIRE(set_variant_flag(edited, "pinned_victim", "stops_retry"));
    REQUIRE(set_variant_flag(edited, "blocked_head", "skipped_for_holders"));
    const std::uint32_t bits = differing_flag_bits(release, edited);
    CHECK(bits == ((std::uint32_t{1} << FlagBit<&Variant::pinned_victim>::value) |
                   (std::uint32_t{1} << FlagBit<&Variant::blocked_head>::value)));
    CHECK(differing_flag_bits(edited, release) == bits);
}

TEST_CASE("flag reads: the engine line's async_scheduling spares the variant's default", "[variant][flag_reads]") {
    Trace trace = parse_trace_file(kRepo + "/corpus/upstream/pr45357_inflight_write_after_abort.trace");
    const Variant release = require_variant("v0.30.0");
    const int bit = FlagBit<&Variant::async_scheduling_default>::value;
    trace.engine.async_scheduling.reset();
    CHECK(has_bit(run_trace(trace, release, RunOptions{.text_log = false}).flags_read, bit));
    trace.engine.async_scheduling = true;
    const RunResult stated = run_trace(trace, release, RunOptions{.text_log = false});
    CHECK_FALSE(has_bit(stated.flags_read, bit));
    CHECK(stated.flags_read != 0);  // the fenced free and the connector's flags are still read
}

TEST_CASE("flag reads: a flag the run never read changes nothing when set otherwise", "[variant][flag_reads][corpus]") {
    const auto runs = corpus_runs();
    REQUIRE(runs.size() > 60);
    int flipped = 0, unread_somewhere = 0, read_somewhere = 0;
    for (const auto& [path, variant_name] : runs) {
        INFO(path << " under " << variant_name);
        const Trace trace = parse_trace_file(kRepo + "/" + path);
        const Variant variant = require_variant(variant_name);
        const RunResult first = logged_run(trace, variant);
        REQUIRE(first.flags_read != ~std::uint32_t{0});
        const std::vector<int> bits = variant_flag_bits();
        for (std::size_t row = 0; row < bits.size(); ++row) {
            const FlagDescription& flag = variant_flags()[row];
            if (has_bit(first.flags_read, bits[row])) {
                ++read_somewhere;
                continue;
            }
            ++unread_somewhere;
            for (const std::string_view value : flag.value_names) {
                if (value == variant_flag_value(variant, flag.flag)) continue;
                INFO(flag.flag << "=" << value);
                Variant edited = variant;
                REQUIRE(set_variant_flag(edited, flag.flag, value));
                const RunResult again = logged_run(trace, edited);
                CHECK(again.digest == first.digest);
                CHECK(again.signature == first.signature);
                CHECK(again.steps == first.steps);
                CHECK(again.flags_read == first.flags_read);
                ++flipped;
            }
        }
    }
    // Both branches are exercised: runs read some flags and leave others alone.
    CHECK(read_somewhere > 100);
    CHECK(unread_somewhere > 500);
    CHECK(flipped > 500);
}

}  // namespace kvsim
