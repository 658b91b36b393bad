// The options every process edge takes as text (the CLI, the `_worker`
// entry, a test's environment): the backend, the capture mode and the fusion
// policy. Each is parsed by one function, here, into its enum, passed down
// typed, and printed by one function. A bad value is bad input (user_error)
// naming the value and listing the valid ones.
#pragma once
#include <string>

#include "fusion/capture/session.h"
#include "fusion/passes/schedule.h"

namespace fg {

enum class Backend { Cpu, Cuda };
const char* backend_name(Backend b);  // "cpu", "cuda"

Backend parse_backend(const std::string& s);       // cpu | cuda
Mode parse_mode(const std::string& s);             // A | B | C (or eager | compiled-disabled | compiled)
FusionPolicy parse_fusion(const std::string& s);   // default | max-autotune | none
// mode_letter (capture/session.h) and policy_name (passes/schedule.h) print
// the other two.

}  // namespace fg
