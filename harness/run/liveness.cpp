#include "harness/run/liveness.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <fstream>
#include <utility>

#include "kernels/collectives/collectives.h"

namespace fg {

void progress(const std::string& out_path, const std::string& step) {
  std::ofstream f(out_path + ".progress", std::ios::trunc);
  f << step << "\n";
}

Heartbeat::Heartbeat(std::string path) : path_(std::move(path)) {
  beat();
  thread_ = std::thread([this] {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      beat();
    }
  });
}

Heartbeat::~Heartbeat() {
  stop_ = true;
  thread_.join();
}

void Heartbeat::beat() {
  const CollectiveProgress p = collective_progress();
  const std::string text = std::to_string(p.entered) + (p.inside ? " waiting\n" : " working\n");
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (::write(fd, text.data(), text.size()) < 0) {
    // the time stamp below still says the rank is alive
  }
  ::futimens(fd, nullptr);  // now
  ::close(fd);
}

bool read_heartbeat(const std::string& text, HeartbeatState* out) {
  std::istringstream in(text);
  std::string how;
  if (!(in >> out->entered >> how) || (how != "waiting" && how != "working")) return false;
  out->inside = how == "waiting";
  return true;
}

int rank_behind(const std::vector<std::pair<int, HeartbeatState>>& ranks, std::string* why) {
  if (ranks.size() < 2) return -1;
  int64_t least = ranks[0].second.entered, most = least;
  for (const auto& [r, h] : ranks) {
    least = std::min(least, h.entered);
    most = std::max(most, h.entered);
  }
  std::vector<int> at_least, working;
  bool someone_waits = false;
  for (const auto& [r, h] : ranks) {
    if (h.entered == least) at_least.push_back(r);
    if (h.entered == least && !h.inside) working.push_back(r);
    someone_waits = someone_waits || h.inside;
  }
  if (least < most && at_least.size() == 1) {
    *why = "its work stopped after " + std::to_string(least) + (least == 1 ? " collective" : " collectives") +
           ", while the others entered up to " + std::to_string(most);
    return at_least[0];
  }
  if (least == most && working.size() == 1 && someone_waits) {
    *why = "its work stopped before collective " + std::to_string(least + 1) + ", which the others wait in";
    return working[0];
  }
  return -1;
}

}  // namespace fg
