#include "fusion/errors.h"

#include <algorithm>
#include <cstring>

namespace fg {
void user_error(const std::string& msg) { throw UserError(msg); }
void cannot_test(const std::string& msg) { throw CannotTest(msg); }
void internal_error(const std::string& msg) {
  throw InternalError("internal compiler error: " + msg +
                      " (a fusegate bug: please report it with the repro)");
}

namespace {
// Written by one thread at a time (the JIT compiles under its lock), read
// by the fatal-signal handler: a plain buffer, always NUL-terminated.
char g_fatal_note[512];
}  // namespace

void fatal_note_set(const std::string& what) {
  const size_t n = std::min(what.size(), sizeof g_fatal_note - 1);
  g_fatal_note[0] = '\0';
  std::memcpy(g_fatal_note + 1, what.data() + (n ? 1 : 0), n ? n - 1 : 0);
  g_fatal_note[n] = '\0';
  if (n) g_fatal_note[0] = what[0];
}

const char* fatal_note() { return g_fatal_note; }
}  // namespace fg
