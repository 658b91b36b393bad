#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "tests/fuzz/fuzz_target.h"

namespace fg_fuzz {

namespace {
// The one file a fuzzing process writes each input to, removed when the
// process exits (it had been left in $TMPDIR by every run).
struct InputFile {
  std::string path;
  ~InputFile() {
    if (!path.empty()) std::remove(path.c_str());
  }
};
}  // namespace

std::string as_file(const uint8_t* data, size_t size, const char* ext) {
  static InputFile file;
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/fusegate-fuzz-input-" +
                           std::to_string(getpid()) + ext;
  if (file.path != path) {
    if (!file.path.empty()) std::remove(file.path.c_str());
    file.path = path;
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace fg_fuzz
