#include "slurm/command_runner.h"

#include <gtest/gtest.h>

namespace migsched::slurm {
namespace {

TEST(CommandRunnerTest, CapturesOutputAndExitCode) {
  auto r = NewSubprocessRunner();
  auto res = r->Run({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->exit_code, 3);
  EXPECT_EQ(res->out, "out\n");
  EXPECT_EQ(res->err, "err\n");
}

TEST(CommandRunnerTest, StdinIsEmpty) {
  auto res = NewSubprocessRunner()->Run({"cat"}, 10);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->exit_code, 0);
  EXPECT_EQ(res->out, "");
}

TEST(CommandRunnerTest, KilledBySignalIs128PlusN) {
  auto res = NewSubprocessRunner()->Run({"sh", "-c", "kill -TERM $$"}, 10);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->exit_code, 128 + 15);
}

TEST(CommandRunnerTest, MissingCommandAndTimeoutAreUnavailable) {
  auto missing = NewSubprocessRunner()->Run({"no-such-command-migsched"}, 10);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("cannot run no-such-command-migsched"),
            std::string::npos)
      << missing.status().message();
  auto slow = NewSubprocessRunner()->Run({"sleep", "5"}, 0.2);
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.status().message(), "sleep 5 did not finish within 0.2 s (killed)");
}

TEST(CommandRunnerTest, BinDirReplacesPathForBareNames) {
  auto res = NewSubprocessRunner("/bin")->Run({"sh", "-c", "echo $0"}, 10);
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->out, "/bin/sh\n");
}

TEST(CommandRunnerTest, CommandLineQuotesWordsWithSpaces) {
  EXPECT_EQ(CommandLine({"scontrol", "update", "AdminComment=a b"}),
            "scontrol update 'AdminComment=a b'");
}

}  // namespace
}  // namespace migsched::slurm
