#include "daemon/time_limit.h"

#include <gtest/gtest.h>

namespace migsched {
namespace {

// Each case's seconds worked by hand from Slurm's sbatch --time forms.
TEST(ParseSlurmTimeTest, AcceptsEverySlurmForm) {
  const std::pair<const char*, double> cases[] = {
      {"90", 90 * 60},                          // MM (minutes may exceed 59)
      {"5:30", 5 * 60 + 30},                    // MM:SS
      {"1:02:03", 3600 + 2 * 60 + 3},           // HH:MM:SS
      {"2-3", 2 * 86400 + 3 * 3600},            // D-HH
      {"2-03:04", 2 * 86400 + 3 * 3600 + 240},  // D-HH:MM
      {"1-00:00:01", 86400 + 1},                // D-HH:MM:SS
      {"48:00:00", 48 * 3600},                  // hours may exceed 23 without days
  };
  for (const auto& [text, want] : cases) {
    auto got = ParseSlurmTime(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status().message();
    EXPECT_EQ(*got, want) << text;
  }
}

TEST(ParseSlurmTimeTest, RefusesWhatSlurmRefusesWithAClearError) {
  for (const char* text : {"", "0", "0:00", "1h", "-1", "1:2:3:4", "1:60", "1:60:00", "1-24", "a-1",
                           "1-", ":5", "1.5", " 5", "1--2"}) {
    auto got = ParseSlurmTime(text);
    ASSERT_FALSE(got.ok()) << "'" << text << "' was accepted as " << *got;
    EXPECT_NE(got.status().message().find("D-HH:MM:SS"), std::string::npos)
        << got.status().message();
  }
}

// Regression long_time_limit_called_not_a_duration: a field of digits that is too long says so.
TEST(ParseSlurmTimeTest, AFieldOfTooManyDigitsSaysSo) {
  for (const char* text : {"99999999999", "1-99999999999", "1234567890:00"}) {
    auto got = ParseSlurmTime(text);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().message(),
              std::string("time limit '") + text +
                  "' has a field of more than 9 digits: use MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM "
                  "or D-HH:MM:SS (Slurm's --time)");
  }
  EXPECT_NE(ParseSlurmTime("9999999999a").status().message().find("is not a duration"),
            std::string::npos);
}

TEST(FormatSlurmTimeTest, PrintsAsSqueueDoes) {
  EXPECT_EQ(FormatSlurmTime(0), "0:00");
  EXPECT_EQ(FormatSlurmTime(59.9), "0:59");  // the fraction is dropped
  EXPECT_EQ(FormatSlurmTime(61), "1:01");
  EXPECT_EQ(FormatSlurmTime(3600 + 2 * 60 + 3), "1:02:03");
  EXPECT_EQ(FormatSlurmTime(86400 + 3 * 3600 + 4 * 60 + 5), "1-03:04:05");
  EXPECT_EQ(FormatSlurmTime(-5), "0:00");
}

// Regression: a time_limit_s of 1e300 (the API takes any finite number) was cast to int64
// (undefined) and the jobs table showed a garbage limit. By hand: 9.2e18 s is 106481481481481
// days (x 86400 = 9199999999999958400) and 41600 s = 11:33:20.
TEST(FormatSlurmTimeTest, ALimitTooLargeToCountIsUnlimited) {
  EXPECT_EQ(FormatSlurmTime(9.2e18), "106481481481481-11:33:20");
  EXPECT_EQ(FormatSlurmTime(9223372036854775808.0), "UNLIMITED");
  EXPECT_EQ(FormatSlurmTime(1e300), "UNLIMITED");
}

TEST(FormatSlurmTimeTest, RoundTripsThroughTheParser) {
  for (double s : {61.0, 3723.0, 97445.0}) {
    auto back = ParseSlurmTime(FormatSlurmTime(s));
    ASSERT_TRUE(back.ok()) << FormatSlurmTime(s);
    EXPECT_EQ(*back, s);
  }
}

}  // namespace
}  // namespace migsched
