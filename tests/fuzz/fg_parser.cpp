// Target: the .fg text parser and the verifier behind it (fusion/ir/text.h).
// What parses must verify and print back to text that parses to the same
// text again.
#include <string>

#include "fusion/ir/text.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  FG_FUZZ_REFUSALS_OK({
    for (const fg::Graph& g : fg::parse_graphs(text, "fuzz.fg")) {
      const std::string printed = fg::print_graph(g);
      const std::string again = fg::print_graph(fg::parse_graph(printed, "printed.fg"));
      if (again != printed) {
        std::fprintf(stderr, "printed text does not round-trip:\n%s\n---\n%s\n", printed.c_str(), again.c_str());
        __builtin_trap();
      }
    }
  });
  return 0;
}
