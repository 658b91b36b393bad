// FUSEGATE_LOGS=graph_breaks,fusion,output_code,recompiles,graph (like
// TORCH_LOGS): named views printed on stderr as the compiler works.
#pragma once
#include <string>

namespace fg {
bool log_enabled(const std::string& channel);
void log_write(const std::string& channel, const std::string& text);
}  // namespace fg
