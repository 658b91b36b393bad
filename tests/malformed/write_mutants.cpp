// Writes the fuzzer's mutants (harness/tools/fuzz_mutate.h) as malformed
// .fg files, each headed by the line and message check_malformed.py wants:
//   write_mutants DIR COUNT [SEED]
// Graph i comes from the generator's seed SEED + i and takes mutation kind
// i mod the kinds' count (a graph that cannot take it is skipped).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "harness/tools/fuzz_gen.h"
#include "harness/tools/fuzz_mutate.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: write_mutants DIR COUNT [SEED]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const long count = std::strtol(argv[2], nullptr, 10);
  const unsigned long long seed = argc == 4 ? std::strtoull(argv[3], nullptr, 10) : 1;
  std::filesystem::create_directories(dir);
  const auto& kinds = fg::mutation_kinds();
  long written = 0;
  for (long i = 0; written < count && i < 20 * count; ++i) {
    const fg::Graph g = fg::generate_graph(seed + static_cast<unsigned long long>(i), fg::FuzzGenOptions{}).graph;
    const std::string& kind = kinds[static_cast<size_t>(i) % kinds.size()];
    const auto m = fg::mutate(g, kind, seed + static_cast<unsigned long long>(i));
    if (!m) continue;
    char name[64];
    std::snprintf(name, sizeof name, "/%04ld_%s.fg", written, kind.c_str());
    std::ofstream(dir + name) << "# error: " << m->line + 1 << ": " << m->expect << "\n" << m->text;
    ++written;
  }
  std::printf("wrote %ld mutants to %s\n", written, dir.c_str());
  return written == count ? 0 : 1;
}
