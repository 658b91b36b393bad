// Target: the golden loader (harness/record/golden.h load_golden): a file that
// loads is canonical JSON with the keys `check` relies on, or a UserError.
#include "harness/record/golden.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fg_fuzz::as_file(data, size, ".json");
  FG_FUZZ_REFUSALS_OK({
    auto g = fg::load_golden(path);
    if (g) (void)fg::dump_record(*g);
  });
  return 0;
}
