#include "nodeapi/token.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace migsched {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

bool TokenChar(char ch) {
  return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         ch == '.' || ch == '_' || ch == '~' || ch == '+' || ch == '/' || ch == '=' || ch == '-';
}

// Writes all of `data` to `fd`; false on error (errno set).
bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

StatusOr<std::string> NewRandomToken() {
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return UnavailableError("cannot open /dev/urandom: " + ErrnoText(errno));
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::read(fd, bytes + got, sizeof bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return UnavailableError("cannot read /dev/urandom: " + ErrnoText(err));
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  token.reserve(2 * sizeof bytes);
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 0xf];
  }
  return token;
}

Status CheckClientTokenMode(const std::string& path, unsigned mode) {
  // A client may share its token with a group (a Kubernetes Secret volume with fsGroup gives a
  // non-root container its files as 0440 root:fsGroup: the extender's manifest does); nobody else
  // may read it, and the group may not write it (regression: group_readable_secret_refused: the
  // extender's token file was refused at every call to a node daemon).
  if ((mode & 037) != 0) {
    return FailedPreconditionError(fmt::format(
        "token file {} has mode {:04o}: others may access it, or its group write it; run `chmod "
        "600 {}` (or 440 to share it with the file's group)",
        path, mode & 07777, path));
  }
  return Status::Ok();
}

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  // A symbolic link is followed: a Kubernetes Secret volume's files are links into its ..data
  // directory. What is checked is the file it names. O_NONBLOCK: a FIFO is refused below (not a
  // regular file) instead of blocking the open until a writer comes.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFoundError(fmt::format("token file {} does not exist", path));
    return FailedPreconditionError(
        fmt::format("cannot open token file {}: {}", path, ErrnoText(err)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return FailedPreconditionError(fmt::format("token file {} is not a regular file", path));
  }
  if (Status mode = CheckClientTokenMode(path, static_cast<unsigned>(st.st_mode)); !mode.ok()) {
    ::close(fd);
    return mode;
  }
  std::string text;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return FailedPreconditionError(
          fmt::format("cannot read token file {}: {}", path, ErrnoText(err)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > 4096) {
      ::close(fd);
      return InvalidArgumentError(fmt::format("token file {} is larger than 4096 bytes", path));
    }
  }
  ::close(fd);
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) {
    return InvalidArgumentError(fmt::format("token file {} is empty", path));
  }
  text = text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
  RETURN_IF_ERROR(ValidateToken(text, "token file " + path));
  return text;
}

Status ValidateToken(std::string_view token, std::string_view origin) {
  for (char ch : token) {
    if (!TokenChar(ch)) {
      return InvalidArgumentError(fmt::format(
          "{} holds a character not allowed in a bearer token (allowed: letters, digits, . _ ~ + "
          "/ = -)",
          origin));
    }
  }
  if (token.size() < kMinTokenLength) {
    return InvalidArgumentError(fmt::format(
        "{} is {} characters long; a token needs at least {} (e.g. `openssl rand -hex 32`)", origin,
        token.size(), kMinTokenLength));
  }
  return Status();
}

StatusOr<std::string> LoadOrCreateTokenFile(const std::string& path) {
  // The server's own secret (the file a link names): no group may read it either (a client may
  // share one, ReadTokenFile), and no other user may own it: its owner can read and change it
  // (regression: token_file_of_another_user: a root daemon served the token of a file `nobody`
  // owned, mode 0600).
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    if ((st.st_mode & 077) != 0) {
      return FailedPreconditionError(fmt::format(
          "token file {} has mode {:04o}: group or others may access it; run `chmod 600 {}`", path,
          st.st_mode & 07777, path));
    }
    if (st.st_uid != ::geteuid()) {
      return FailedPreconditionError(fmt::format(
          "token file {} is owned by uid {}, not by the daemon's user (uid {}): its owner can read "
          "and change the token; run `chown {} {}`",
          path, st.st_uid, ::geteuid(), ::geteuid(), path));
    }
  }
  auto existing = ReadTokenFile(path);
  if (existing.ok()) return existing;
  if (existing.status().code() != StatusCode::kNotFound) return existing;
  ASSIGN_OR_RETURN(std::string token, NewRandomToken());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST) return ReadTokenFile(path);  // another process created it meanwhile
    return UnavailableError(fmt::format("cannot create token file {}: {}", path, ErrnoText(err)));
  }
  // The umask can only remove bits; make sure it is exactly 0600.
  if (::fchmod(fd, 0600) != 0 || !WriteAll(fd, token + "\n") || ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return UnavailableError(fmt::format("cannot write token file {}: {}", path, ErrnoText(err)));
  }
  if (::close(fd) != 0) {
    return UnavailableError(fmt::format("cannot write token file {}: {}", path, ErrnoText(errno)));
  }
  return token;
}

bool TokensEqual(std::string_view a, std::string_view b) {
  // Compare every byte of the longer string (the shorter one padded by 0)
  // and fold the length difference into the same accumulator.
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = diff | static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

}  // namespace migsched
