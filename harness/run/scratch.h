// Scratch folders: where a run's ranks (fusegate-run-*) and a fuzz run's
// jobs (fusegate-fuzz-*) write what they hand back. Under $TMPDIR (else
// /tmp). The owner holds an exclusive lock on the folder's owner.lock for
// its life; the kernel lets go of it however the owner ends (SIGKILL, a
// crash), in whatever PID namespace it ran. The owner removes its folder on
// every exit path it lives through; any later fusegate removes one whose
// lock is free (its owner is gone), never one whose owner lives.
#pragma once
#include <string>

namespace fg {

// $TMPDIR when it names a folder, else /tmp.
std::string scratch_root();

class Scratch {
 public:
  // A new folder scratch_root()/<prefix>XXXXXX, locked; CannotTest when it
  // cannot be made.
  explicit Scratch(const std::string& prefix);
  ~Scratch();  // removes the folder
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int lock_fd_ = -1;
};

// Removes every scratch_root()/<prefix>* folder whose owner is gone: its
// owner.lock can be taken (a folder of an older fusegate: its
// launcher.pid names no live process). A folder with neither is being made
// and is left alone for ten minutes (its owner died before it locked it).
void sweep_scratch(const std::string& prefix);

}  // namespace fg
