#include "cli/hangup.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <csignal>

namespace migsched::cli {
namespace {

std::atomic<int> g_hangups{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler must not lock");

extern "C" void OnHangup(int) { g_hangups.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

void KeepRunningOnHangup() {
  struct sigaction sa {};
  sa.sa_handler = OnHangup;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGHUP, &sa, nullptr);
}

int LogHangups() {
  const int n = g_hangups.exchange(0, std::memory_order_relaxed);
  if (n > 0) {
    spdlog::warn(
        "SIGHUP: running on (the terminal that started this command may have closed); nothing "
        "is reloaded on SIGHUP: restart to apply a config change, SIGTERM to stop");
  }
  return n;
}

}  // namespace migsched::cli
