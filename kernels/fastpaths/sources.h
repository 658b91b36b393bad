// The fast paths' kernel files as text, embedded at build time (the CMake
// code next to fusegate_fastpath_sources writes the definition from
// kernels/fastpaths/host/*.cpp and kernels/fastpaths/cuda/*.cu), and the
// source each fast path compiles, with its hash (what a proof records).
#pragma once
#include <string>

#include "fusion/options.h"

namespace fg {

// The text of kernels/fastpaths/<dir>/<name>.<ext> (dir "host" or "cuda");
// empty when there is no such file.
std::string embedded_fast_path_source(const std::string& name, const std::string& dir);

// The source that is compiled for fast path `name` on `backend` (host: the
// generated kernels' prelude and the fast path's file; cuda: its file), and
// its hash. FUSEGATE_FAULT=fastpath_edit:NAME appends a line to the source
// of NAME's file (so of every fast path that shares it), as an edit of the
// file would (the proof-invalidation test).
std::string fast_path_source(const std::string& name, Backend backend);
std::string fast_path_source_hash(const std::string& name, Backend backend);

}  // namespace fg
