// Fixtures of the text-format tests.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "fusion/errors.h"

namespace fg::testing_ir {

// Returns the UserError message of `f`, or fails the test if it throws none.
template <typename F>
std::string user_error_of(F f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UserError";
  return "";
}

inline bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace fg::testing_ir
