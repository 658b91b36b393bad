#include "harness/run/scratch.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <vector>

#include "fusion/errors.h"
#include "harness/record/files.h"

namespace fg {

namespace {

constexpr const char* kLock = "owner.lock";

// Whether the folder's owner is gone: its lock can be taken. Taken, the
// lock is let go again at once (the caller removes the folder).
bool owner_gone(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir + "/" + kLock, ec)) {
    const int fd = ::open((dir + "/" + kLock).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    return free;
  }
  // an older fusegate's folder: its launcher's pid
  std::ifstream in(dir + "/launcher.pid");
  long pid = 0;
  if (in >> pid && pid > 0) return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
  // neither: being made now, or its owner died between making it and
  // locking it (a moment); after ten minutes, the latter
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 && std::time(nullptr) - st.st_mtime > 600;
}

}  // namespace

std::string scratch_root() {
  const char* t = std::getenv("TMPDIR");
  std::error_code ec;
  if (t && *t && std::filesystem::is_directory(t, ec)) {
    std::string r = t;
    while (r.size() > 1 && r.back() == '/') r.pop_back();
    return r;
  }
  return "/tmp";
}

Scratch::Scratch(const std::string& prefix) {
  std::string tmpl = scratch_root() + "/" + prefix + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    cannot_test("cannot make a scratch folder under " + scratch_root() + ": " + std::strerror(errno) +
                " (set TMPDIR to a writable folder)");
  dir_ = buf.data();
  // locked under another name, then named: a sweep never finds owner.lock
  // before its owner holds it
  const std::string fresh = dir_ + "/.owner.lock.new";
  lock_fd_ = ::open(fresh.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0 ||
      ::rename(fresh.c_str(), (dir_ + "/" + kLock).c_str()) != 0) {
    const std::string why = std::strerror(errno);
    remove_tree(dir_);
    cannot_test("cannot lock the scratch folder " + dir_ + ": " + why);
  }
}

Scratch::~Scratch() {
  remove_tree(dir_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void sweep_scratch(const std::string& prefix) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(scratch_root(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || !e.is_directory(ec)) continue;
    if (owner_gone(e.path().string())) remove_tree(e.path().string());
  }
}

}  // namespace fg
