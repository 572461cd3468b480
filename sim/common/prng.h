#pragma once
// The one seeded generator of a run. splitmix64 gives the same stream on every
// compiler and standard library; std::*_distribution would not.
#include <cstdint>

namespace kvsim {

class Prng {
public:
    explicit Prng(std::uint64_t seed) : state_(seed) {}

    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }

    // Uniform in [0, bound); bound must be > 0. Rejection sampling keeps it unbiased.
    std::uint64_t below(std::uint64_t bound) {
        const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
        std::uint64_t x = next();
        while (x >= limit) x = next();
        return x % bound;
    }

    // Uniform in [lo, hi], lo <= hi.
    std::int64_t between(std::int64_t lo, std::int64_t hi) {
        return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
    }

    bool chance(std::uint64_t numerator, std::uint64_t denominator) { return below(denominator) < numerator; }

    std::uint64_t state() const { return state_; }

private:
    std::uint64_t state_;
};

}  // namespace kvsim
