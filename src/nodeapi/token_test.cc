#include "nodeapi/token.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace migsched {
namespace {

class TokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "migsched-token-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  static void Write(const std::string& path, const std::string& text, mode_t mode) {
    std::ofstream(path) << text;
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
  }
  std::filesystem::path dir_;
};

TEST_F(TokenTest, CreatesA0600FileWith64HexCharactersAndReadsItBack) {
  const std::string path = Path("token");
  const mode_t old = ::umask(0);  // even with a permissive umask the file is 0600
  auto t = LoadOrCreateTokenFile(path);
  ::umask(old);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->size(), 64u);  // 32 bytes, 2 hex digits each
  EXPECT_EQ(t->find_first_not_of("0123456789abcdef"), std::string::npos) << *t;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  auto again = LoadOrCreateTokenFile(path);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *t);  // not regenerated
  auto read = ReadTokenFile(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, *t);
}

TEST_F(TokenTest, NewTokensDiffer) {
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    auto t = NewRandomToken();
    ASSERT_TRUE(t.ok());
    seen.insert(*t);
  }
  EXPECT_EQ(seen.size(), 20u);  // 256-bit random values: a repeat means a broken source
}

TEST_F(TokenTest, RefusesFilesOthersCanRead) {
  struct Case {
    mode_t mode;
    std::string want;
  } cases[] = {
      {0644, "has mode 0644: group or others may access it; run `chmod 600 "},
      {0640, "has mode 0640: group or others may access it; run `chmod 600 "},
      {0602, "has mode 0602: group or others may access it; run `chmod 600 "},
  };
  for (const Case& k : cases) {
    const std::string path = Path("t" + std::to_string(k.mode));
    Write(path, "secret\n", k.mode);
    auto t = LoadOrCreateTokenFile(path);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(t.status().message(), "token file " + path + " " + k.want + path + "`")
        << t.status().message();
  }
}

// Regression (group_readable_secret_refused): the extender runs as a non-root user that reads the
// node token from a Secret volume with fsGroup (mode 0440, root:fsGroup), and every read was
// refused. A client reads a file its group may read; never one others may read or its group
// write; the daemon's own stays 0600 (RefusesFilesOthersCanRead).
TEST_F(TokenTest, AClientReadsATokenItsGroupMayRead) {
  const std::string token(40, 'c');
  for (mode_t mode : {0440, 0640}) {
    const std::string path = Path("g" + std::to_string(mode));
    Write(path, token + "\n", mode);
    auto t = ReadTokenFile(path);
    ASSERT_TRUE(t.ok()) << std::oct << mode << ": " << t.status().ToString();
    EXPECT_EQ(*t, token);
  }
  for (mode_t mode : {0660, 0604, 0444}) {
    const std::string path = Path("o" + std::to_string(mode));
    Write(path, token + "\n", mode);
    auto t = ReadTokenFile(path);
    ASSERT_FALSE(t.ok()) << std::oct << mode;
    EXPECT_EQ(t.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(t.status().message(), ::testing::HasSubstr("others may access it, or its group "
                                                           "write it; run `chmod 600 "));
  }
}

// Regression: a token file mounted from a Kubernetes Secret volume (the node agent's manifest) is
// a symbolic link, token -> ..data/token, and was refused ("Too many levels of symbolic links").
// The link is followed and the file it names is checked: a 0400 file is read, a 0644 one refused
// with the link's path in the message, and a link to a FIFO is refused without blocking.
// Regression (token_file_of_another_user): the daemon served the token of a file another user
// owned (mode 0600): that user could read and change it. Refused, naming the owner; a client may
// still read such a file (ReadTokenFile): it only learns what it is given.
TEST_F(TokenTest, TheDaemonsTokenFileMustBeItsUsers) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the file to another user";
  const std::string token(40, 'b');
  Write(Path("theirs"), token + "\n", 0600);
  ASSERT_EQ(::chown(Path("theirs").c_str(), 65534, 65534), 0);
  auto refused = LoadOrCreateTokenFile(Path("theirs"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "token file " + Path("theirs") +
                " is owned by uid 65534, not by the daemon's user (uid 0): its owner can read and "
                "change the token; run `chown 0 " +
                Path("theirs") + "`");
  auto read = ReadTokenFile(Path("theirs"));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, token);
}

TEST_F(TokenTest, ASecretVolumesLinkIsFollowedAndItsFileChecked) {
  const std::string token(40, 'a');
  std::filesystem::create_directory(dir_ / "..data");
  Write(Path("..data/token"), token + "\n", 0400);
  std::filesystem::create_symlink("..data/token", dir_ / "token");
  auto t = ReadTokenFile(Path("token"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, token);
  auto loaded = LoadOrCreateTokenFile(Path("token"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(*loaded, token);

  Write(Path("..data/open"), token + "\n", 0644);
  std::filesystem::create_symlink("..data/open", dir_ / "open");
  auto open = ReadTokenFile(Path("open"));
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().message(),
            "token file " + Path("open") +
                " has mode 0644: others may access it, or its group write it; run `chmod 600 " +
                Path("open") + "` (or 440 to share it with the file's group)");

  ASSERT_EQ(::mkfifo(Path("..data/fifo").c_str(), 0600), 0);
  std::filesystem::create_symlink("..data/fifo", dir_ / "fifo");
  auto fifo = ReadTokenFile(Path("fifo"));
  ASSERT_FALSE(fifo.ok());
  EXPECT_EQ(fifo.status().message(), "token file " + Path("fifo") + " is not a regular file");
}

TEST_F(TokenTest, ReadsAHandWrittenTokenAndRejectsBadContent) {
  const std::string ok = Path("ok");
  Write(ok, "  my-Token_1.2~+/=my-Token_1.2~+/=\n\n", 0600);
  auto t = ReadTokenFile(ok);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, "my-Token_1.2~+/=my-Token_1.2~+/=");  // surrounding whitespace stripped

  // Regression (short_tokens_accepted): a token must be long enough not to be guessed.
  const std::string short_token = Path("short");
  Write(short_token, "my-Token_1.2~+/=\n", 0600);
  EXPECT_EQ(ReadTokenFile(short_token).status().message(),
            "token file " + short_token +
                " is 16 characters long; a token needs at least 32 (e.g. `openssl rand -hex 32`)");

  const std::string empty = Path("empty");
  Write(empty, " \n", 0600);
  EXPECT_EQ(ReadTokenFile(empty).status().message(), "token file " + empty + " is empty");

  const std::string spaced = Path("spaced");
  Write(spaced, "two words\n", 0600);
  auto s = ReadTokenFile(spaced);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("holds a character not allowed in a bearer token"),
            std::string::npos);

  auto missing = ReadTokenFile(Path("missing"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "token file " + Path("missing") + " does not exist");
}

TEST_F(TokenTest, UncreatableFileIsUnavailable) {
  auto t = LoadOrCreateTokenFile(Path("no/such/dir/token"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(t.status().message(), "cannot create token file " + Path("no/such/dir/token") +
                                      ": No such file or directory");
}

TEST(TokensEqualTest, ComparesWholeStrings) {
  struct Case {
    std::string a, b;
    bool want;
  } cases[] = {
      {"abc", "abc", true},
      {"abc", "abd", false},
      {"abc", "ab", false},
      {"ab", "abc", false},
      {"", "", true},
      {"", "a", false},
      {"xbc", "abc", false},  // differs in the first byte
      {std::string("a\0b", 3), std::string("a\0c", 3), false},
  };
  for (const Case& k : cases) EXPECT_EQ(TokensEqual(k.a, k.b), k.want) << k.a << " vs " << k.b;
}

}  // namespace
}  // namespace migsched
