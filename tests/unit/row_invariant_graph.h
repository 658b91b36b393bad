// A graph found by the fuzzer on an H100 (graph seed 20261397), shared by the
// cuda codegen test (every row cache read is written) and the runtime test
// (compiled against eager): a row kernel whose rows read one element the
// same for every r (x1[x], its dim of size 1 indexed by index_select) in two
// loops, loaded once before them by a fused neighbour (the minimum).
#pragma once

namespace fg {

inline const char* row_invariant_load_graph() {
  return R"(
graph g(%x1: f32[8,1], %x2: f32[1,1], %i3: i64[46], %w4: f32[1,1], %w6: f32[46]) {
  %5 = index_select(%x1, %i3) {dim = 1} : f32[8,46]
  %6 = minimum(%x2, %x1) : f32[8,1]
  %7 = linear(%6, %w4) : f32[8,1]
  %8 = rms_norm(%5, %w6) {eps = 1e-06} : f32[8,46]
  return %8, %7
}
)";
}

}  // namespace fg
