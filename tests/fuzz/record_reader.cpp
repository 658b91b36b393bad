// Target: the record reader: what `check` does with a golden once it loads
// (harness/record/compare.h) - compared with itself and with the same record at
// another world size, and checked across its ranks. A golden that loads
// must compare without failing.
#include "harness/record/compare.h"
#include "harness/record/golden.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fg_fuzz::as_file(data, size, ".json");
  std::optional<fg::record::RunRecord> g;
  FG_FUZZ_REFUSALS_OK(g = fg::load_golden(path));
  if (!g) return 0;
  (void)fg::compare_with_golden(*g, &*g, path, "fuzz", "fusegate bless");
  (void)fg::compare_with_golden(*g, nullptr, path, "fuzz", "fusegate bless");
  (void)fg::cross_rank_findings(*g);
  (void)fg::compare_across_worlds(*g, *g, "fuzz");
  return 0;
}
