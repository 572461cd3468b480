// kvsim_fuzz_empty: a fuzz target that does nothing, built with the same flags as the others, so
// that scripts/bench can put the trace target's exec/s beside libFuzzer's own ceiling.
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* /*data*/, std::size_t /*size*/) { return 0; }
