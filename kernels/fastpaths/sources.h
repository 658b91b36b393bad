// The fast paths' kernel files as text, embedded at build time (the CMake
// code next to fusegate_compiler writes the definition from
// kernels/fastpaths/host/*.cpp and kernels/fastpaths/cuda/*.cu).
#pragma once
#include <string>

namespace fg {

// The text of kernels/fastpaths/<dir>/<name>.<ext> (dir "host" or "cuda");
// empty when there is no such file.
std::string embedded_fast_path_source(const std::string& name, const std::string& dir);

}  // namespace fg
