#include "fusion/errors.h"

namespace fg {
void user_error(const std::string& msg) { throw UserError(msg); }
void cannot_test(const std::string& msg) { throw CannotTest(msg); }
void internal_error(const std::string& msg) {
  throw InternalError("internal compiler error: " + msg +
                      " (a fusegate bug: please report it with the repro)");
}
}  // namespace fg
