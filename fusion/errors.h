// Two error channels (STYLE 8): UserError for bad input (a malformed .fg, an
// unknown repro, a bad flag), InternalError for compiler bugs. Messages start
// lower-case, name the thing, and say what to do.
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

[[noreturn]] void user_error(const std::string& msg);
[[noreturn]] void internal_error(const std::string& msg);

#define FG_CHECK(cond, msg)                                                   \
  do {                                                                        \
    if (!(cond)) ::fg::internal_error(std::string(__FILE__) + ":" +           \
                                      std::to_string(__LINE__) + ": " + (msg)); \
  } while (0)

}  // namespace fg
