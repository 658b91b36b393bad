#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "tests/fuzz/fuzz_target.h"

namespace fg_fuzz {

std::string as_file(const uint8_t* data, size_t size, const char* ext) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/fusegate-fuzz-input-" +
                           std::to_string(getpid()) + ext;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace fg_fuzz
