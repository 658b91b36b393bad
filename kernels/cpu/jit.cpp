#include "kernels/cpu/jit.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fusion/errors.h"

namespace fg {

namespace {
const char* kFlags = "-O2 -std=c++17 -shared -fPIC -fno-math-errno -fopenmp-simd";

std::string compiler() {
  const char* c = std::getenv("FUSEGATE_CXX");
  return c && *c ? c : "c++";
}

std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 512> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), p)) out += buf.data();
  pclose(p);
  return out;
}
}  // namespace

std::string jit_cache_dir() {
  if (const char* d = std::getenv("FUSEGATE_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/fusegate";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/fusegate";
  return "/tmp/fusegate-cache";
}

std::string jit_compiler_version() {
  static std::string v = [] {
    std::string out = run_capture(compiler() + " --version 2>/dev/null");
    return out.substr(0, out.find('\n'));
  }();
  return v;
}

JitModule::~JitModule() {
  if (handle_) dlclose(handle_);
}

void* JitModule::symbol(const std::string& name) const {
  void* s = dlsym(handle_, name.c_str());
  FG_CHECK(s != nullptr, "kernel " + name + " missing from " + path_);
  return s;
}

std::shared_ptr<JitModule> jit_compile(const std::string& source) {
  std::string key = source + "\n// " + compiler() + " " + kFlags + " " + jit_compiler_version();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH64(key.data(), key.size(), 0)));
  std::string dir = jit_cache_dir();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) user_error("cannot create the kernel cache " + dir + ": " + ec.message() + " (set FUSEGATE_CACHE_DIR)");
  std::string base = dir + "/" + hex;
  auto mod = std::shared_ptr<JitModule>(new JitModule());
  mod->path_ = base + ".so";
  if (!std::filesystem::exists(mod->path_)) {
    int lock = open((base + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
    if (lock < 0) user_error("cannot lock " + base + ".lock in the kernel cache");
    flock(lock, LOCK_EX);
    if (!std::filesystem::exists(mod->path_)) {
      std::string src = base + ".cpp";
      std::string tmp = base + ".so.tmp" + std::to_string(getpid());
      {
        std::ofstream f(src + ".tmp" + std::to_string(getpid()));
        f << source;
      }
      std::filesystem::rename(src + ".tmp" + std::to_string(getpid()), src);
      std::string cmd = compiler() + " " + kFlags + " -o " + tmp + " " + src + " 2>" + base + ".log";
      int rc = std::system(cmd.c_str());
      if (rc != 0) {
        flock(lock, LOCK_UN);
        close(lock);
        internal_error("generated code did not compile: " + cmd + " (see " + base + ".log)");
      }
      std::filesystem::rename(tmp, mod->path_);
    }
    flock(lock, LOCK_UN);
    close(lock);
  }
  mod->handle_ = dlopen(mod->path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!mod->handle_) internal_error(std::string("cannot load ") + mod->path_ + ": " + dlerror());
  return mod;
}

}  // namespace fg
