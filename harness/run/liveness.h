// What a rank tells its launcher while it runs: the step it is at
// (`<out>.progress`, named when the rank dies or hangs) and that it is alive
// (`<out>.heartbeat`).
#pragma once
#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace fg {

// Writes `step` to `<out_path>.progress`.
void progress(const std::string& out_path, const std::string& step);

// Writes `<out>.heartbeat` every 100 ms from its own thread, so the
// launcher can tell a rank that stopped answering (stopped, swapped out,
// wedged in the kernel: no heartbeat) from ranks that are only waiting on it
// in a collective (their threads still beat). The file says how far the
// rank got through its collectives ("3 waiting": it entered three and waits
// in the third; "2 working": it entered two and is in none), so a rank
// whose compute thread hangs while its heartbeat beats is told from the
// ranks waiting on it (kernels/collectives: collective_progress).
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

struct HeartbeatState {
  int64_t entered = 0;
  bool inside = false;
};
bool read_heartbeat(const std::string& text, HeartbeatState* out);
// Of ranks that all beat, the one whose own work stopped: the only one
// behind the others in collectives entered, or, all level, the only one in
// none while others wait in one. -1 when the states do not say; `why` says
// how it was told.
int rank_behind(const std::vector<std::pair<int, HeartbeatState>>& ranks, std::string* why);

}  // namespace fg
