// FUSEGATE_LOGS=graph_breaks,fusion,output_code,recompiles,graph (like
// TORCH_LOGS): named views printed on stderr as the compiler works.
#pragma once
#include <string>

namespace fg {
bool log_enabled(const std::string& channel);
// Throws user_error naming an unknown view in FUSEGATE_LOGS and listing the
// known ones (a misspelt view would print nothing, silently).
void check_log_views();
void log_write(const std::string& channel, const std::string& text);
}  // namespace fg
