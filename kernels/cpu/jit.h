// Host-compiler JIT: builds a generated C++ module into a shared object with
// the system compiler, cached on disk by the hash of source and flags, and
// loads it. Safe when several rank processes ask for the same module at
// once (a lock file per entry; the object appears by rename).
#pragma once
#include <memory>
#include <string>

namespace fg {

class JitModule {
 public:
  ~JitModule();
  void* symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  friend std::shared_ptr<JitModule> jit_compile(const std::string& source);
  void* handle_ = nullptr;
  std::string path_;
};

std::shared_ptr<JitModule> jit_compile(const std::string& source);
// The cache folder: $FUSEGATE_CACHE_DIR, else $XDG_CACHE_HOME/fusegate, else ~/.cache/fusegate.
std::string jit_cache_dir();
// "g++ (Debian 12.2.0-14) 12.2.0": the first line of `$CXX --version`.
std::string jit_compiler_version();
// The flags every generated host module is compiled with.
std::string jit_compiler_flags();

}  // namespace fg
