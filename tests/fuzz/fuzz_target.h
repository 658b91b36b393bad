// A coverage-guided fuzz target of what fusegate reads from users: the .fg
// parser, the golden and proof loaders, the record reader. Each target's
// .cpp defines LLVMFuzzerTestOneInput; built with -DFUSEGATE_LIBFUZZER=ON
// (clang) it links libFuzzer's main (tests/fuzz/run.sh runs it), otherwise
// replay_main.cpp's, which feeds it every file of the folders it is given:
// the seeds and what fuzzing found (tests/fuzz/found/), a test in CTest.
//
// A target's contract: any input either loads or is refused with a
// UserError (a message naming the file and what to do). Any other exception,
// a crash or a sanitizer report is a finding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "fusion/errors.h"

namespace fg_fuzz {

// The input as a file (the loaders read paths): one a process, rewritten.
std::string as_file(const uint8_t* data, size_t size, const char* ext);

}  // namespace fg_fuzz

// The refusals the contract allows; anything else leaves.
#define FG_FUZZ_REFUSALS_OK(body) \
  try {                           \
    body;                         \
  } catch (const fg::UserError&) { \
  }
