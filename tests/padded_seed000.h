#pragma once
// Seed 000 (corpus/upstream/seed000_multiconnector_consumer.trace) buried in bystander requests,
// aborts, faults, an unused segment, an extra store line, long names and big numbers: what a fuzzer
// crash artifact of that bug looks like before minimisation.
#include <string>

namespace kvsim::testing {

// run_variant: the variant named on the trace's run line.
inline std::string padded_seed000_trace(const std::string& run_variant) {
    std::string text = R"(kvsim-trace 1
# seed 000 with noise
engine block_size=16 num_blocks=64 max_batched_tokens=2048 max_running=16 max_model_len=1008
run seed=7 max_steps=300 variant=v0.29.0
multi role=kv_consumer
connector p2p role=kv_consumer
connector store role=kv_consumer
workers ranks=2 store_delay_min=1 store_delay_max=3 load_delay_min=2 load_delay_max=4
segment sys len=32
segment noise_segment_with_a_long_name len=100
segment prompt len=48
segment unused len=10
segment tok tokens=5,6,7,8
store prefix=prompt
store prefix=sys+tok
expect v0.30.0 pass
@0 arrive bystander_request_number_one prompt=sys+noise_segment_with_a_long_name max_tokens=20
@0 arrive b2 prompt=sys+tok max_tokens=7
@1 arrive b3 prompt=noise_segment_with_a_long_name max_tokens=3
@2 abort b2
@3 fault load_fail request=b3
@5 arrive r1 prompt=prompt max_tokens=9 remote_prefill=on
@5 fault store_delay rank=1 steps=3
@6 arrive b4 prompt=tok max_tokens=2
@8 abort bystander_request_number_one
)";
    const std::string marker = "variant=v0.29.0";
    text.replace(text.find(marker), marker.size(), "variant=" + run_variant);
    return text;
}

}  // namespace kvsim::testing
