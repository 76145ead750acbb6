#include "nodeapi/node_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace migsched {
namespace {

using ::testing::HasSubstr;

TEST(CheckDaemonUrlTest, AddressesOfADaemonAreTaken) {
  for (const char* url :
       {"http://127.0.0.1:7070", "http://127.0.0.1:7070/", "https://gpu-node-3:443",
        "http://localhost", "http://[::1]:7070", "http://[fe80::1]"}) {
    SCOPED_TRACE(url);
    EXPECT_TRUE(CheckDaemonUrl(url).ok()) << CheckDaemonUrl(url).message();
  }
}

// Regression: `--server http://127.0.0.1:47060/v1` (a path) and `--server notaurl` were taken,
// and every call then failed with "connection refused or timed out (is migsched serve running
// there?)", which sends the user looking at the daemon instead of at the flag.
TEST(CheckDaemonUrlTest, OtherTextsSayWhatIsWrongWithThem) {
  struct Case {
    std::string url;
    std::string why;
  };
  const std::vector<Case> cases = {
      {"notaurl", "it does not start with http:// or https://"},
      {"127.0.0.1:7070", "it does not start with http:// or https://"},
      {"ftp://host:21", "it does not start with http:// or https://"},
      {"http://127.0.0.1:47060/v1",
       "it has a path or query ('/v1'): the client adds the API's paths"},
      {"http://host:7070/?x=1", "it has a path or query ('/?x=1')"},
      {"http://", "it names no host"},
      {"http://:7070", "it names no host"},
      {"http://host:0", "port '0' is not a number from 1 to 65535"},
      {"http://host:65536", "port '65536' is not a number from 1 to 65535"},
      {"http://host:80a", "port '80a' is not a number from 1 to 65535"},
      {"http://host:", "port '' is not a number from 1 to 65535"},
      {"http://[::1", "an unclosed or empty ["},
      {"http://user@host:7070", "user information (before '@') is not taken"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.url);
    const Status st = CheckDaemonUrl(c.url);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(st.message(), HasSubstr("'" + c.url + "' is not a daemon address: " + c.why));
    EXPECT_THAT(st.message(), HasSubstr("expected http://HOST:PORT, e.g. http://127.0.0.1:7070"));
  }
}

}  // namespace
}  // namespace migsched
