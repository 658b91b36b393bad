// Error channels (STYLE 8): UserError for bad input (a malformed .fg, an
// unknown repro, a bad flag: exit 2), InternalError for compiler bugs, and
// CannotTest for a machine that cannot run what was asked (no GPU, no CUDA
// build: exit 125, which `git bisect run` reads as "skip", not "bad").
// Messages start lower-case, name the thing, and say what to do.
#pragma once
#include <stdexcept>
#include <string>

namespace fg {

struct UserError : std::runtime_error {
  explicit UserError(const std::string& m) : std::runtime_error(m) {}
};
struct InternalError : std::logic_error {
  explicit InternalError(const std::string& m) : std::logic_error(m) {}
};
struct CannotTest : std::runtime_error {
  explicit CannotTest(const std::string& m) : std::runtime_error(m) {}
};
// Ranks that compiled differently (exit 1: a regression the gate found,
// caught before a collective could hang on it).
struct RanksDisagree : std::runtime_error {
  explicit RanksDisagree(const std::string& m) : std::runtime_error(m) {}
};

[[noreturn]] void user_error(const std::string& msg);
[[noreturn]] void internal_error(const std::string& msg);
[[noreturn]] void cannot_test(const std::string& msg);

// What the process is doing that another program could crash in (a JIT
// compile): the fatal-signal handler prints it, so a crash inside NVRTC or
// the host compiler names the source it was given. Set it for the span of
// the call (FatalNote); a fixed buffer, read from a signal handler.
void fatal_note_set(const std::string& what);
const char* fatal_note();
struct FatalNote {
  explicit FatalNote(const std::string& what) { fatal_note_set(what); }
  ~FatalNote() { fatal_note_set(""); }
  FatalNote(const FatalNote&) = delete;
  FatalNote& operator=(const FatalNote&) = delete;
};

#define FG_CHECK(cond, msg)                                                   \
  do {                                                                        \
    if (!(cond)) ::fg::internal_error(std::string(__FILE__) + ":" +           \
                                      std::to_string(__LINE__) + ": " + (msg)); \
  } while (0)

}  // namespace fg
