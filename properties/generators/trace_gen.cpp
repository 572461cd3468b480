#include "properties/generators/trace_gen.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "sim/trace/trace_printer.h"

namespace kvsim {

void showValue(const Trace& trace, std::ostream& os) { os << "\n" << print_trace(trace); }

namespace propgen {

void showValue(const TraceSpec& spec, std::ostream& os) { kvsim::showValue(build_trace(spec), os); }

namespace {

constexpr auto kAllFaultKinds = enum_values(kFaultKindNames);  // store_delay, store_fail, load_fail, lookup_pending

// Uniform in [lo, hi) whatever RapidCheck's size (inRange narrows the range at small
// sizes); shrinks towards lo. Sizes still scale the vector lengths (vector_upto).
rc::Gen<int> uniform(int lo, int hi) {
    return rc::Gen<int>([lo, hi](const rc::Random& random, int /*size*/) {
        const auto span = static_cast<std::uint64_t>(hi - lo);
        const int v = lo + static_cast<int>(rc::Random(random).next() % span);
        return rc::shrinkable::shrinkRecur(v, [lo](int x) { return rc::shrink::towards(x, lo); });
    });
}

// A weighted choice that shrinks towards the first entry (gen::weightedElement does not shrink).
template <class T>
rc::Gen<T> choice(std::vector<std::pair<int, T>> weighted) {
    const int total = std::accumulate(weighted.begin(), weighted.end(), 0,
                                      [](int sum, const auto& p) { return sum + p.first; });
    return rc::gen::map(uniform(0, total), [weighted](int x) {
        for (const auto& [weight, value] : weighted) {
            if (x < weight) return value;
            x -= weight;
        }
        return weighted.back().second;
    });
}

// true with probability num/den; shrinks to false.
rc::Gen<bool> flag(int num, int den) {
    return rc::gen::map(uniform(0, den), [num, den](int x) { return x >= den - num; });
}

template <class T>
rc::Gen<T> one_of_list(const std::vector<T>& values) {
    std::vector<std::pair<int, T>> weighted;
    for (const T& v : values) weighted.emplace_back(1, v);
    return choice(std::move(weighted));
}

}  // namespace

rc::Gen<EngineRec> gen_engine() {
    return rc::gen::build<EngineRec>(
        rc::gen::set(&EngineRec::block_size_index, uniform(0, 3)),
        rc::gen::set(&EngineRec::pressure, uniform(0, 4)),
        rc::gen::set(&EngineRec::slack, choice<int>({{3, 0}, {2, 1}, {1, 2}, {1, 5}})),
        rc::gen::set(&EngineRec::budget_index, choice<int>({{3, 0}, {2, 1}, {2, 2}, {1, 3}})),
        rc::gen::set(&EngineRec::max_running_index, choice<int>({{4, 0}, {1, 1}, {1, 2}, {1, 3}})),
        rc::gen::set(&EngineRec::long_prefill_index, choice<int>({{5, 0}, {1, 1}, {1, 2}, {1, 3}})),
        rc::gen::set(&EngineRec::model_len_slack, choice<int>({{5, 0}, {1, 1}, {1, 3}, {1, 9}})),
        rc::gen::set(&EngineRec::no_chunked_prefill, flag(1, 6)),
        rc::gen::set(&EngineRec::no_prefix_caching, flag(1, 6)),
        rc::gen::set(&EngineRec::no_reserve_full_isl, flag(1, 4)),
        rc::gen::set(&EngineRec::load_failure_policy, choice<int>({{2, 0}, {1, 1}, {1, 2}})),
        rc::gen::set(&EngineRec::async_scheduling, choice<int>({{1, 0}, {1, 1}, {2, 2}})));
}

rc::Gen<KvRole> gen_role(const std::vector<KvRole>& roles) { return one_of_list(roles); }

rc::Gen<StoreOptionsRec> gen_store_options() {
    return rc::gen::build<StoreOptionsRec>(rc::gen::set(&StoreOptionsRec::lookup_async, flag(1, 3)),
                                           rc::gen::set(&StoreOptionsRec::no_lookup, flag(1, 8)),
                                           rc::gen::set(&StoreOptionsRec::save_decode_cache, flag(1, 3)));
}

rc::Gen<StackRec> gen_stack(const GenOptions& options) {
    return rc::gen::build<StackRec>(rc::gen::set(&StackRec::kind, one_of_list(options.stacks)),
                                    rc::gen::set(&StackRec::p2p_role, gen_role(options.roles)),
                                    rc::gen::set(&StackRec::store_role, gen_role(options.roles)),
                                    rc::gen::set(&StackRec::multi_role, gen_role(options.roles)),
                                    rc::gen::set(&StackRec::store, gen_store_options()));
}

rc::Gen<WorkersRec> gen_workers() {
    return rc::gen::build<WorkersRec>(
        rc::gen::set(&WorkersRec::extra_ranks, choice<int>({{2, 0}, {2, 1}, {1, 2}, {1, 3}})),
        rc::gen::set(&WorkersRec::store_min, uniform(0, 3)),
        rc::gen::set(&WorkersRec::store_spread, choice<int>({{2, 0}, {2, 1}, {2, 3}, {1, 6}, {1, 12}})),
        rc::gen::set(&WorkersRec::load_min, uniform(0, 3)),
        rc::gen::set(&WorkersRec::load_spread, uniform(0, 5)),
        rc::gen::set(&WorkersRec::pull_delay, uniform(0, 4)),
        rc::gen::set(&WorkersRec::loads_in_step, flag(1, 2)),
        rc::gen::set(&WorkersRec::stores_in_step, flag(1, 3)),
        rc::gen::set(&WorkersRec::pulls_in_step, flag(1, 3)));
}

rc::Gen<std::vector<SegmentRec>> gen_segments(int max_segments) {
    const auto segment = rc::gen::build<SegmentRec>(
        rc::gen::set(&SegmentRec::blocks, choice<int>({{1, 0}, {3, 1}, {2, 2}, {1, 3}})),
        // Mostly whole blocks, so prompts built from shared segments share full (cacheable) blocks.
        rc::gen::set(&SegmentRec::extra, choice<int>({{3, 0}, {1, 1}, {1, 3}, {1, 7}})));
    return vector_upto(max_segments, segment);
}

rc::Gen<std::vector<int>> gen_prompt() {
    // The first segment is mostly one of the first two, so prompts share prefixes.
    return rc::gen::mapcat(choice<int>({{3, 0}, {2, 1}, {1, 2}, {1, 3}}), [](int first) {
        return rc::gen::map(vector_upto(3, uniform(0, 4)), [first](std::vector<int> rest) {
            rest.insert(rest.begin(), first);
            return rest;
        });
    });
}

rc::Gen<RequestRec> gen_request(bool aborts) {
    return rc::gen::build<RequestRec>(
        rc::gen::set(&RequestRec::gap, choice<int>({{3, 0}, {3, 1}, {2, 2}, {1, 4}, {1, 9}})),
        rc::gen::set(&RequestRec::prompt, gen_prompt()),
        rc::gen::set(&RequestRec::max_tokens, choice<int>({{2, 0}, {3, 3}, {3, 8}, {2, 20}})),
        rc::gen::set(&RequestRec::remote_prefill, flag(1, 3)),
        rc::gen::set(&RequestRec::remote_decode, flag(1, 4)),
        rc::gen::set(&RequestRec::abort, aborts ? flag(1, 4) : rc::gen::just(false)),
        rc::gen::set(&RequestRec::abort_after,
                     choice<int>({{3, 0}, {2, 1}, {2, 2}, {2, 3}, {1, 5}, {1, 8}, {1, 13}, {1, 30}})),
        rc::gen::set(&RequestRec::abort_twice, flag(1, 8)));
}

rc::Gen<std::vector<RequestRec>> gen_requests(int max_requests, bool aborts) {
    return vector_upto(max_requests, gen_request(aborts));
}

rc::Gen<std::vector<StoreRec>> gen_store_contents(int max_lines) {
    return vector_upto(max_lines, rc::gen::build<StoreRec>(rc::gen::set(&StoreRec::request, uniform(0, 6)),
                                                           rc::gen::set(&StoreRec::take, uniform(0, 4))));
}

rc::Gen<FaultRec> gen_fault() {
    return rc::gen::build<FaultRec>(
        rc::gen::set(&FaultRec::kind, one_of_list(std::vector<FaultKind>(kAllFaultKinds.begin(), kAllFaultKinds.end()))),
        rc::gen::set(&FaultRec::at, uniform(0, 9)), rc::gen::set(&FaultRec::rank, uniform(0, 4)),
        rc::gen::set(&FaultRec::steps, choice<int>({{3, 0}, {2, 2}, {2, 5}, {1, 12}})),
        rc::gen::set(&FaultRec::request, uniform(0, 6)));
}

rc::Gen<std::vector<FaultRec>> gen_faults(int max_faults) { return vector_upto(max_faults, gen_fault()); }

rc::Gen<std::uint64_t> gen_seed() {
    return rc::gen::map(uniform(0, 1 << 20), [](int x) { return static_cast<std::uint64_t>(x); });
}

rc::Gen<TraceSpec> gen_trace_spec(const GenOptions& options) {
    return rc::gen::build<TraceSpec>(
        rc::gen::set(&TraceSpec::engine, gen_engine()), rc::gen::set(&TraceSpec::stack, gen_stack(options)),
        rc::gen::set(&TraceSpec::workers, gen_workers()),
        rc::gen::set(&TraceSpec::segments, gen_segments(options.max_segments)),
        rc::gen::set(&TraceSpec::requests, gen_requests(options.max_requests, options.aborts)),
        rc::gen::set(&TraceSpec::store, gen_store_contents(options.max_store_lines)),
        rc::gen::set(&TraceSpec::faults, options.faults ? gen_faults(options.max_faults)
                                                        : rc::gen::just(std::vector<FaultRec>{})),
        rc::gen::set(&TraceSpec::seed, gen_seed()));
}

rc::Gen<Trace> gen_trace(const GenOptions& options) { return rc::gen::map(gen_trace_spec(options), build_trace); }

}  // namespace propgen
}  // namespace kvsim
