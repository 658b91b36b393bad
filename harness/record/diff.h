// The diff `bless` shows between a golden's old and new text.
#pragma once
#include <string>

namespace fg {

// Line-based unified diff (3 lines of context); empty when equal.
std::string unified_diff(const std::string& old_text, const std::string& new_text,
                         const std::string& old_name, const std::string& new_name);

}  // namespace fg
