// Target: the proof loader (harness/record/proofs.h load_proof) for each backend
// and each fast path name.
#include "harness/record/proofs.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fg_fuzz::as_file(data, size, ".json");
  for (const char* backend : {"cpu", "cuda"})
    for (const char* name : {"allreduce_residual_rmsnorm", "qkv_rmsnorm_tp", "qkv_rmsnorm_local"})
      FG_FUZZ_REFUSALS_OK((void)fg::load_proof(path, backend, name));
  return 0;
}
