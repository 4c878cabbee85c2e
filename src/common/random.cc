#include "common/random.h"

#include <random>

#include "common/check.h"
#include "common/mutex.h"

namespace draplane {
namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t RotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// xoshiro256** by Blackman and Vigna; state seeded through SplitMix64 as they recommend.
class Xoshiro256 final : public Random {
 public:
  explicit Xoshiro256(uint64_t seed) {
    for (uint64_t& word : state_) word = SplitMix64(seed);
  }
  uint64_t Next64() override {
    const uint64_t result = RotateLeft(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = RotateLeft(state_[3], 45);
    return result;
  }

 private:
  uint64_t state_[4];
};

class LockedSecureRandom final : public Random {
 public:
  LockedSecureRandom() : engine_(SeedFromDevice()) {}
  uint64_t Next64() override {
    MutexLock lock(mu_);
    return engine_.Next64();
  }

 private:
  static uint64_t SeedFromDevice() {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }
  Mutex mu_;
  Xoshiro256 engine_ DRAPLANE_GUARDED_BY(mu_);
};

}  // namespace

uint64_t Random::Uniform(uint64_t n) {
  DRAPLANE_CHECK(n > 0);
  // Rejection sampling removes the modulo bias.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = Next64();
  } while (x >= limit);
  return x % n;
}

double Random::UniformDouble() { return static_cast<double>(Next64() >> 11) * 0x1.0p-53; }

std::string Random::NewUuid() {
  uint64_t hi = Next64();
  uint64_t lo = Next64();
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  // 8-4-4-4-12 hex digits, written into a buffer (a string's push_back checks its capacity per
  // character; every object the in-memory API creates gets a uid).
  char out[36];
  char* p = out;
  for (int i = 15; i >= 0; --i) {
    *p++ = kHex[(hi >> (i * 4)) & 0xf];
    if (i == 8 || i == 4) *p++ = '-';
  }
  *p++ = '-';
  for (int i = 15; i >= 0; --i) {
    *p++ = kHex[(lo >> (i * 4)) & 0xf];
    if (i == 12) *p++ = '-';
  }
  return std::string(out, sizeof(out));
}

std::unique_ptr<Random> NewSeededRandom(uint64_t seed) {
  return std::make_unique<Xoshiro256>(seed);
}

Random& SecureRandom() {
  static LockedSecureRandom* random = new LockedSecureRandom();  // Never destroyed.
  return *random;
}

}  // namespace draplane
