// Randomness for draplane: the only source of random numbers (STYLE.md).
//
// Anything whose randomness can reach a result (share IDs, UIDs, tie-breaks, simulator traces)
// takes a `Random&`, so a fixed seed reproduces a run exactly.
//
// Thread-safety: a SeededRandom is not thread-safe (give each thread or loop its own);
// the instance returned by SecureRandom() is safe for concurrent use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace draplane {

class Random {
 public:
  virtual ~Random() = default;
  // 64 uniformly distributed random bits.
  virtual uint64_t Next64() = 0;

  // A uniformly distributed integer in [0, n); precondition n > 0.
  uint64_t Uniform(uint64_t n);
  // A uniformly distributed double in [0, 1).
  double UniformDouble();
  // A random (version 4) UUID in lower-case RFC 4122 form, e.g.
  // "1b4e28ba-2fa1-41d2-883f-0016d3cca427".
  std::string NewUuid();
};

// A deterministic generator (xoshiro256**) seeded from `seed`.
std::unique_ptr<Random> NewSeededRandom(uint64_t seed);

// A process-wide generator seeded from the operating system's entropy source, for values that
// must be unpredictable (UIDs, tokens). Valid for the life of the process.
Random& SecureRandom();

}  // namespace draplane
