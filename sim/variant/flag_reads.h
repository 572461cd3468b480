#pragma once
// The variant flags a run's decisions read. The model is deterministic, so a run under a variant that
// differs only in flags this run never read is the same run: the classifier skips such counterfactuals
// (properties/findings/classify.cpp), and tests/test_flag_reads.cpp checks the premise on the corpus.
#include <cstdint>

namespace kvsim {

class FlagReads {
public:
    void note(int bit) { bits_ |= std::uint32_t{1} << bit; }
    std::uint32_t bits() const { return bits_; }

private:
    std::uint32_t bits_ = 0;
};

}  // namespace kvsim
