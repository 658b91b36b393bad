// Mistakes put into valid graphs: the fuzzer's half of the malformed corpus.
// A graph the generator made is printed, and one node's line gets one
// mistake a user makes (an unknown attribute, a value outside an
// attribute's choices or of the wrong kind, an undefined value, a misspelt
// op or dtype, a declared type the op does not give, an operand too few, a
// name defined twice, a missing parenthesis). Each mutant says the line its
// mistake is on and what the message must contain; fusegate must refuse it
// there with exit 2 (tests/malformed/, `fg.mutated_corpus`).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"

namespace fg {

struct Mutant {
  std::string kind;    // one of mutation_kinds()
  std::string text;    // the whole .fg text, the mistake in it
  int line = 0;        // 1-based line of the mistake in `text`
  std::string expect;  // what the message must contain
};

const std::vector<std::string>& mutation_kinds();

// `kind` put into the printed `g` at a node chosen by `seed`; nullopt where
// no node of `g` can take that mistake (no attribute of a kind, ...).
std::optional<Mutant> mutate(const Graph& g, const std::string& kind, uint64_t seed);

}  // namespace fg
