// What a rank tells its launcher while it runs: the step it is at
// (`<out>.progress`, named when the rank dies or hangs) and that it is alive
// (`<out>.heartbeat`).
#pragma once
#include <atomic>
#include <string>
#include <thread>

namespace fg {

// Writes `step` to `<out_path>.progress`.
void progress(const std::string& out_path, const std::string& step);

// Touches `<out>.heartbeat` every 100 ms from its own thread, so the
// launcher can tell a rank that stopped answering (stopped, swapped out,
// wedged in the kernel: no heartbeat) from ranks that are only waiting on it
// in a collective (their threads still beat).
class Heartbeat {
 public:
  explicit Heartbeat(std::string path);
  ~Heartbeat();

 private:
  void beat();
  std::string path_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace fg
