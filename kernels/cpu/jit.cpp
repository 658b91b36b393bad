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
#include <cstring>
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

// The standard headers every generated host module starts with. They take
// most of a small module's compile (0.28 s of 0.36 s measured with g++ 12
// -O2): a module that starts with them is compiled with them precompiled
// (a .gch built once a cache, compiler and flags), the same code at about a
// third of the time. A .gch g++ cannot use falls back to the text.
const char* kHeaderLines = "#include <cmath>\n#include <cstdint>\n#include <cstring>\n#include <algorithm>\n";

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

std::string jit_compiler_flags() { return kFlags; }

std::string jit_compiler_version() {
  static std::string v = [] {
    std::string out = run_capture(compiler() + " --version 2>/dev/null");
    return out.substr(0, out.find('\n'));
  }();
  return v;
}

namespace {

// The precompiled headers' folder ("" where they cannot be built: then
// modules include the headers as text).
std::string precompiled_headers(const std::string& dir) {
  static std::string made;
  static bool tried = false;
  if (tried) return made;
  tried = true;
  const std::string key = std::string(kHeaderLines) + compiler() + " " + kFlags + " " + jit_compiler_version();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH64(key.data(), key.size(), 0)));
  const std::string pch = dir + "/pch-" + hex;
  std::error_code ec;
  std::filesystem::create_directories(pch, ec);
  if (ec) return made;
  if (!std::filesystem::exists(pch + "/fg_headers.h.gch")) {
    int lock = open((pch + "/lock").c_str(), O_CREAT | O_RDWR, 0644);
    if (lock < 0) return made;
    flock(lock, LOCK_EX);
    if (!std::filesystem::exists(pch + "/fg_headers.h.gch")) {
      {
        std::ofstream f(pch + "/fg_headers.h");
        f << kHeaderLines;
      }
      const std::string tmp = pch + "/fg_headers.h.gch.tmp" + std::to_string(getpid());
      const std::string cmd = compiler() + " " + kFlags + " -x c++-header " + pch + "/fg_headers.h -o " + tmp +
                              " 2>" + pch + "/log";
      if (std::system(cmd.c_str()) == 0) std::filesystem::rename(tmp, pch + "/fg_headers.h.gch", ec);
    }
    flock(lock, LOCK_UN);
    close(lock);
  }
  if (std::filesystem::exists(pch + "/fg_headers.h.gch")) made = pch;
  return made;
}

}  // namespace

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
      // the headers precompiled where the module starts with them (the
      // first line is a comment); the .cpp in the cache keeps the whole text
      const size_t nl = source.find('\n') + 1;
      const bool headers = nl > 0 && source.compare(nl, std::strlen(kHeaderLines), kHeaderLines) == 0;
      const std::string pch = headers ? precompiled_headers(dir) : "";
      {
        std::ofstream f(src + ".tmp" + std::to_string(getpid()));
        f << source;
      }
      std::filesystem::rename(src + ".tmp" + std::to_string(getpid()), src);
      std::string input = src;
      if (!pch.empty()) {
        input = base + ".body.cpp";
        std::ofstream f(input);
        f << "#line 1 \"" << src << "\"\n" << source.substr(0, nl) << "\n\n\n\n" << source.substr(nl + std::strlen(kHeaderLines));
      }
      std::string cmd = compiler() + " " + kFlags + (pch.empty() ? "" : " -include " + pch + "/fg_headers.h") + " -o " +
                        tmp + " " + input + " 2>" + base + ".log";
      int rc = std::system(cmd.c_str());
      if (rc != 0) {
        flock(lock, LOCK_UN);
        close(lock);
        internal_error("generated code did not compile: " + cmd + " (see " + base + ".log)");
      }
      if (!pch.empty()) std::filesystem::remove(input);
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
