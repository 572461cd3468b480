#pragma once
// Traces several test files plant.
#include <string>

namespace kvsim::testing {

// A liveness finding no registry entry explains, under any variant: r1's store lookup stays
// pending past max_steps.
inline const std::string kPendingLookupLiveness = R"(kvsim-trace 1
engine block_size=16 num_blocks=64 max_model_len=1008
run seed=1 max_steps=60
connector store role=kv_both lookup_async=on
segment p len=40
store prefix=p
@0 arrive r1 prompt=p max_tokens=3
@0 fault lookup_pending request=r1 steps=5000
)";

}  // namespace kvsim::testing
