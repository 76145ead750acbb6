#include "core/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace migsched {
namespace {

// Expected values in this file were computed by an independent Python
// re-implementation of the published reference algorithms (splitmix64.c,
// xoshiro256starstar.c): tests/data/reference/rng_reference.py. The SplitMix64
// values for seed 1234567 also match the Rosetta Code task
// "Pseudo-random numbers/Splitmix64".

TEST(SplitMix64Test, KnownOutputs) {
  struct Case {
    uint64_t seed;
    std::vector<uint64_t> expected;
  };
  const std::vector<Case> cases = {
      {0,
       {16294208416658607535ULL, 7960286522194355700ULL, 487617019471545679ULL,
        17909611376780542444ULL, 1961750202426094747ULL}},
      {1234567,
       {6457827717110365317ULL, 3203168211198807973ULL, 9817491932198370423ULL,
        4593380528125082431ULL, 16408922859458223821ULL}},
  };
  for (const Case& c : cases) {
    SplitMix64 sm(c.seed);
    for (size_t i = 0; i < c.expected.size(); ++i) {
      EXPECT_EQ(sm.Next(), c.expected[i]) << "seed " << c.seed << " output " << i;
    }
  }
}

TEST(RngTest, XoshiroKnownOutputs) {
  struct Case {
    uint64_t seed;
    std::vector<uint64_t> expected;
  };
  const std::vector<Case> cases = {
      {0,
       {11091344671253066420ULL, 13793997310169335082ULL, 1900383378846508768ULL,
        7684712102626143532ULL, 13521403990117723737ULL}},
      {42,
       {1546998764402558742ULL, 6990951692964543102ULL, 12544586762248559009ULL,
        17057574109182124193ULL, 18295552978065317476ULL}},
  };
  for (const Case& c : cases) {
    Rng rng(c.seed);
    for (size_t i = 0; i < c.expected.size(); ++i) {
      EXPECT_EQ(rng.Next(), c.expected[i]) << "seed " << c.seed << " output " << i;
    }
  }
}

TEST(RngTest, Uniform01KnownOutputs) {
  // (x >> 11) * 2^-53 of the first xoshiro outputs for seed 42 (Python reference).
  Rng rng(42);
  EXPECT_EQ(rng.Uniform01(), 0.08386297105988216);
  EXPECT_EQ(rng.Uniform01(), 0.3789802506626686);
  EXPECT_EQ(rng.Uniform01(), 0.6800434110281394);
}

TEST(RngTest, UniformIntKnownOutputs) {
  // x % 6 + 1 for the first five outputs of seed 42 (none is in the rejected
  // top block, whose size is 2^64 mod 6 = 4).
  Rng rng(42);
  const std::vector<int64_t> expected = {1, 1, 6, 6, 5};
  for (int64_t e : expected) EXPECT_EQ(rng.UniformInt(1, 6), e);
}

TEST(RngTest, UniformIntEdges) {
  Rng rng(7);
  EXPECT_EQ(rng.UniformInt(5, 5), 5);
  EXPECT_EQ(rng.UniformInt(5, 3), 5);  // empty range: lo
  for (int i = 0; i < 1000; ++i) {
    int64_t v = rng.UniformInt(-2, 2);
    EXPECT_GE(v, -2);
    EXPECT_LE(v, 2);
  }
  // Full int64 range does not overflow.
  (void)rng.UniformInt(INT64_MIN, INT64_MAX);
}

TEST(RngTest, ExponentialKnownOutputs) {
  // -10 * log(1 - u) for the three Uniform01 values above (Python reference;
  // allow 4 ulps for the C library's log).
  Rng rng(42);
  EXPECT_DOUBLE_EQ(rng.Exponential(10), 0.8758933058341757);
  EXPECT_DOUBLE_EQ(rng.Exponential(10), 4.763923950787724);
  EXPECT_DOUBLE_EQ(rng.Exponential(10), 11.395699518538775);
  EXPECT_EQ(rng.Exponential(0), 0);
  EXPECT_EQ(rng.Exponential(-1), 0);
}

TEST(RngTest, ExponentialMeanStatistically) {
  const uint64_t seed = 2024;
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  Rng rng(seed);
  const int n = 200000;
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += rng.Exponential(3.0);
  // Standard error of the mean = 3 / sqrt(n) = 0.0067; allow ~5 sigma.
  EXPECT_NEAR(sum / n, 3.0, 0.035);
}

TEST(RngTest, ChoiceKnownOutputs) {
  // Weights {1, 2, 1}: u * 4 falls in [0,1) -> 0, [1,3) -> 1, [3,4) -> 2.
  // u = 0.0839, 0.379, 0.680, ... (Python reference) -> 0, 1, 1, 2, 2.
  Rng rng(42);
  const std::vector<int> expected = {0, 1, 1, 2, 2};
  for (int e : expected) EXPECT_EQ(rng.Choice({1, 2, 1}), e);
}

TEST(RngTest, ChoiceInvalidWeights) {
  Rng rng(1);
  EXPECT_EQ(rng.Choice({}), -1);
  EXPECT_EQ(rng.Choice({0, 0}), -1);
  EXPECT_EQ(rng.Choice({1, -1}), -1);
  EXPECT_EQ(rng.Choice({1, NAN}), -1);
  EXPECT_EQ(rng.Choice({1, INFINITY}), -1);
  // A zero weight is never chosen.
  for (int i = 0; i < 1000; ++i) EXPECT_NE(rng.Choice({0, 1, 0, 1}) % 2, 0);
}

TEST(RngTest, ChoiceSharesStatistically) {
  const uint64_t seed = 99;
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  Rng rng(seed);
  const std::vector<double> w = {0.25, 0.1, 0.25, 0.2, 0.1, 0.1};
  std::vector<int> hits(w.size(), 0);
  const int n = 100000;
  for (int i = 0; i < n; ++i) ++hits[rng.Choice(w)];
  for (size_t i = 0; i < w.size(); ++i) {
    // sigma = sqrt(p(1-p)/n) <= 0.0016; allow 0.008 (5 sigma).
    EXPECT_NEAR(static_cast<double>(hits[i]) / n, w[i], 0.008) << "index " << i;
  }
}

// Values of the standard normal quantile from published tables (Abramowitz & Stegun 26.2, and
// Phi(1) = 0.8413447460685429): 0.975 -> 1.959963984540054, 0.995 -> 2.5758293035489004, 0.999 ->
// 3.090232306167813, 0.05 -> -1.6448536269514722, 1e-10 -> -6.361340902404056 (the far tail, the
// third branch of AS 241).
TEST(RngTest, StandardNormalQuantileKnownValues) {
  EXPECT_EQ(Rng::StandardNormalQuantile(0.5), 0.0);
  EXPECT_NEAR(Rng::StandardNormalQuantile(0.975), 1.959963984540054, 1e-14);
  EXPECT_NEAR(Rng::StandardNormalQuantile(0.995), 2.5758293035489004, 1e-14);
  EXPECT_NEAR(Rng::StandardNormalQuantile(0.999), 3.090232306167813, 1e-13);
  EXPECT_NEAR(Rng::StandardNormalQuantile(0.8413447460685429), 1.0, 1e-14);
  EXPECT_NEAR(Rng::StandardNormalQuantile(0.05), -1.6448536269514722, 1e-14);
  EXPECT_NEAR(Rng::StandardNormalQuantile(1e-10), -6.361340902404056, 1e-12);
  EXPECT_NEAR(Rng::StandardNormalQuantile(0.25), -Rng::StandardNormalQuantile(0.75), 1e-15);
  EXPECT_EQ(Rng::StandardNormalQuantile(0), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(Rng::StandardNormalQuantile(1), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(Rng::StandardNormalQuantile(std::nan(""))));
}

// StandardNormal uses exactly one Next() (so streams stay aligned) and is the quantile of it.
TEST(RngTest, StandardNormalDrawsOneUniform) {
  Rng a(31), b(31);
  for (int i = 0; i < 5; ++i) {
    const double z = a.StandardNormal();
    EXPECT_EQ(z, Rng::StandardNormalQuantile(b.Uniform01() + 0x1.0p-54));
    EXPECT_TRUE(std::isfinite(z));
  }
  EXPECT_EQ(a.Next(), b.Next());
}

TEST(RngTest, SameSeedSameSequenceDifferentSeedDiffers) {
  Rng a(5), b(5), c(6);
  bool differs = false;
  for (int i = 0; i < 10; ++i) {
    uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs |= x != c.Next();
  }
  EXPECT_TRUE(differs);
  EXPECT_NE(Rng::DeriveSeed(5, 0), Rng::DeriveSeed(5, 1));
  EXPECT_EQ(Rng::DeriveSeed(5, 1), Rng::DeriveSeed(5, 1));
}

}  // namespace
}  // namespace migsched
