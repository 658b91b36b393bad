// The options every process edge takes as text (the CLI, the `_worker`
// entry, a test's environment): the backend, the capture mode and the fusion
// policy. Each is parsed by one function, here, into its enum, passed down
// typed, and printed by one function. A bad value is bad input (user_error)
// naming the value and listing the valid ones.
#pragma once
#include <string>
#include <vector>

#include "fusion/capture/session.h"
#include "fusion/passes/schedule.h"

namespace fg {

enum class Backend { Cpu, Cuda };
const char* backend_name(Backend b);  // "cpu", "cuda"

Backend parse_backend(const std::string& s);       // cpu | cuda
Mode parse_mode(const std::string& s);             // A | B | C (or eager | compiled-disabled | compiled)
FusionPolicy parse_fusion(const std::string& s);   // default | max-autotune | none
// Which fast paths (kernels/fastpaths/) a run asks for: none; proven (the
// default: each one whose proof covers the run); all (every one, the
// unproven still blocked: the same kernels as proven today, a selection
// that says so in its golden's name); or named ones. A fast path asked for
// runs only with a valid proof covering the world size, backend and shape
// class (passes/fast_paths.h); `ab` and `prove` force it instead.
struct FastPathSelection {
  enum class Kind { None, Proven, All, Named };
  Kind kind = Kind::Proven;
  std::vector<std::string> names;  // Named: sorted, unique, known
  bool asks(const std::string& name) const;
  bool is_default() const { return kind == Kind::Proven; }
  std::string text() const;  // "proven", "none", "all", "a,b"
};
// none | proven | all | NAME[,NAME...]; an unknown name is bad input
// listing the known ones.
FastPathSelection parse_fast_paths(const std::string& s);

// mode_letter (capture/session.h) and policy_name (passes/schedule.h) print
// the other two.

}  // namespace fg
