// Generated kernels compute what ATen computes: each case runs a graph op by
// op through LibTorch (mode A) and compiled (mode C) on the same inputs, and
// compares. The backend is cpu, or the one FUSEGATE_TEST_BACKEND names
// (bench/gpu.sh runs these cases with "cuda" on a GPU machine).
#include <gtest/gtest.h>

#include <cmath>

#include <ATen/ops/equal.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/isfinite.h>

#include "tests/unit/row_invariant_graph.h"
#include "tests/unit/codegen_fixtures.h"

namespace fg {
namespace {
using namespace testing_codegen;

// Found by fusegate fuzz: a negative constant under neg, sigmoid or silu
// printed as "--0.75f" (a decrement), which did not compile.
TEST(Codegen, NegativeConstantUnderNegSigmoidAndSilu) {
  expect_same(R"(
graph g(%x: f32[4,8]) {
  %1 = full() {value = -0.75} : f32[]
  %2 = sigmoid(%1) : f32[]
  %3 = neg(%1) : f32[]
  %4 = silu(%1) : f32[]
  %5 = add(%x, %2) : f32[4,8]
  %6 = mul(%5, %3) : f32[4,8]
  %7 = add(%6, %4) : f32[4,8]
  return %7
}
)");
}

// Found by fusegate fuzz (cuda, --fusion none): var of bf16 decomposed in
// bf16, so that each unfused step rounded its buffer; now in f32, rounded
// once as ATen does: unfused, it equals eager.
TEST(Codegen, Bf16VarAndSoftmaxUnfusedRoundOnce) {
  Result c = expect_same(R"(
graph g(%x: bf16[4,1,31,96]) {
  %1 = var(%x) {correction = 1} : bf16[]
  %2 = cast(%1) {to = "f32"} : f32[]
  %3 = softmax(%x) {dim = -1} : bf16[4,1,31,96]
  return %2, %3
}
)", 1e-6, 1e-6, FusionPolicy::None);
  EXPECT_GT(c.launches.size(), 3u);  // unfused: a kernel a step
}

TEST(Codegen, PointwiseWithBroadcast) {
  expect_same(R"(
graph g(%x: f32[4,8,16], %b: f32[16], %c: f32[4,1,16]) {
  %3 = add(%x, %b) : f32[4,8,16]
  %4 = mul(%3, %c) : f32[4,8,16]
  %5 = gelu(%4) {approximate = "tanh"} : f32[4,8,16]
  %6 = silu(%5) : f32[4,8,16]
  %7 = sigmoid(%3) : f32[4,8,16]
  %8 = sub(%6, %7) : f32[4,8,16]
  return %8
}
)");
}

TEST(Codegen, SoftmaxAndLayerNorm) {
  expect_same(R"(
graph g(%x: f32[8,100], %w: f32[100], %b: f32[100]) {
  %3 = softmax(%x) {dim = -1} : f32[8,100]
  %4 = layer_norm(%x, %w, %b) {eps = 1e-05} : f32[8,100]
  %5 = add(%3, %4) : f32[8,100]
  return %5
}
)", 1e-4, 1e-5);
}

TEST(Codegen, ViewsPermuteSliceReshape) {
  expect_same(R"(
graph g(%x: f32[2,6,8]) {
  %1 = permute(%x) {dims = [2, 0, 1]} : f32[8,2,6]
  %2 = slice(%1) {dim = 2, end = 6, start = 1, step = 2} : f32[8,2,3]
  %3 = exp(%2) : f32[8,2,3]
  %4 = reshape(%3) {shape = [16, 3]} : f32[16,3]
  %5 = transpose(%4) {dim0 = 0, dim1 = 1} : f32[3,16]
  %6 = neg(%5) : f32[3,16]
  return %6
}
)");
}

TEST(Codegen, ReductionsOverInnerAndOuterDims) {
  expect_same(R"(
graph g(%x: f32[16,32,12]) {
  %1 = sum(%x) {dims = [0], keepdim = 0} : f32[32,12]
  %2 = amax(%x) {dims = [1, 2], keepdim = 1} : f32[16,1,1]
  %3 = var(%x) {correction = 1, dims = [2], keepdim = 1} : f32[16,32,1]
  %4 = mean(%x) {dims = [1], keepdim = 0} : f32[16,12]
  return %1, %2, %3, %4
}
)", 1e-4, 1e-4);
}

TEST(Codegen, CatWhereCompare) {
  expect_same(R"(
graph g(%a: f32[4,3], %b: f32[4,5]) {
  %2 = cat(%a, %b) {dim = 1} : f32[4,8]
  %3 = full() {value = 0.0} : f32[]
  %4 = gt(%2, %3) : bool[4,8]
  %5 = relu(%2) : f32[4,8]
  %6 = neg(%2) : f32[4,8]
  %7 = where(%4, %5, %6) : f32[4,8]
  return %7
}
)");
}

// The ops of real blocks (issue 16), each fused as the lit tests show, against ATen.
TEST(Codegen, AbsClampMinimumErfAmin) {
  expect_same(R"(
graph g(%x: f32[8,300], %y: f32[8,300]) {
  %2 = abs(%x) : f32[8,300]
  %3 = clamp(%2) {min = -0.5, max = 0.75} : f32[8,300]
  %4 = minimum(%3, %y) : f32[8,300]
  %5 = erf(%4) : f32[8,300]
  %6 = amin(%5) {dims = [1], keepdim = 1} : f32[8,1]
  %7 = amin(%x) {dims = [0]} : f32[300]
  %8 = clamp(%y) {max = 0.0} : f32[8,300]
  return %5, %6, %7, %8
}
)");
}

TEST(Codegen, LogSoftmaxInRowsAndOverAnOuterDim) {
  expect_same(R"(
graph g(%x: f32[16,100], %b: bf16[4,2000]) {
  %2 = log_softmax(%x) {dim = 1} : f32[16,100]
  %3 = log_softmax(%x) {dim = 0} : f32[16,100]
  %4 = log_softmax(%b) {dim = -1} : bf16[4,2000]
  return %2, %3, %4
}
)", 2e-2, 2e-2);
}

TEST(Codegen, ContiguousFlipPadArange) {
  Result r = expect_same(R"(
graph g(%t: f32[64,8], %x: f32[8,64]) {
  %2 = transpose(%t) {dim0 = 0, dim1 = 1} : f32[8,64]
  %3 = contiguous(%2) : f32[8,64]
  %4 = flip(%3) {dims = [0, 1]} : f32[8,64]
  %5 = pad(%4) {pad = [2, 3, 1, 0], value = 0.5} : f32[9,69]
  %6 = arange() {end = 17.75, dtype = "f32", start = 0.5, step = 0.25} : f32[69]
  %7 = add(%5, %6) : f32[9,69]
  %8 = arange() {end = 20, start = -3, step = 2} : i64[12]
  %9 = contiguous(%x) : f32[8,64]
  return %3, %7, %8, %9
}
)");
  // the copy the output needs, and one kernel for flip, pad, arange and add;
  // contiguous of a contiguous input is that input
  EXPECT_EQ(count_kind(r, "poi"), 3);
}

// arange in bf16 past 256: each value rounded to bf16 as eager's are, not
// the exact index (a fuzz of the new ops found the difference)
TEST(Codegen, Bf16ArangeRoundsEachValue) {
  expect_same(R"(
graph g(%x: bf16[4,600]) {
  %1 = arange() {end = 600, dtype = "bf16"} : bf16[600]
  %2 = add(%x, %1) : bf16[4,600]
  return %2
}
)", 0, 0);
  // a fractional step: computed in f32 and rounded once; ATen may round a
  // value halfway between two bf16 steps the other way (a step is 1 near 147)
  expect_same(R"(
graph g(%x: bf16[590]) {
  %1 = arange() {end = 148.0, start = 0.5, step = 0.25, dtype = "bf16"} : bf16[590]
  %2 = add(%x, %1) : bf16[590]
  return %2
}
)", 0, 1.0);
}

TEST(Codegen, GroupedQueryAttention) {
  Result r = expect_same(R"(
graph g(%q: f32[2,8,16,32], %k: f32[2,2,16,32], %v: f32[2,2,16,32]) {
  %3 = sdpa(%q, %k, %v) : f32[2,8,16,32]
  return %3
}
)", 1e-5, 1e-5);
  EXPECT_EQ(count_kind(r, "extern"), 1);
}

// Reductions with few outputs over many elements: two kernels on cuda
// (split), one on cpu; the same values either way.
TEST(Codegen, LargeFullReductions) {
  expect_same(R"(
graph g(%x: f32[300,257], %b: bf16[12289]) {
  %2 = sum(%x) : f32[]
  %3 = amax(%x) : f32[]
  %4 = amin(%x) {dims = [0]} : f32[257]
  %5 = cast(%b) {to = "f32"} : f32[12289]
  %6 = sum(%5) : f32[]
  %7 = mean(%x) {dims = [1]} : f32[300]
  return %2, %3, %4, %6, %7
}
)", 1e-4, 1e-3);
}

// Variances over few outputs: on cuda split as Welford reductions (block
// means and squares, the blocks combined about the whole mean), blocks of
// unequal length, a 16-bit input, a layer norm over long rows; on cpu one
// pass each. Inputs with a large mean, where a sum of squares less the
// squared sum would lose the digits.
TEST(Codegen, SplitVariancesMatchEager) {
  expect_same(R"(
graph g(%x: f32[8,5,2,129], %b: bf16[12289]) {
  %k = full() {value = 100} : f32[]
  %xs = add(%x, %k) : f32[8,5,2,129]
  %5 = var(%xs) {correction = 0, dims = [-3, 3, 0, 2]} : f32[]
  %6 = var(%b) {correction = 1} : bf16[]
  %7 = var(%xs) {dims = [0, 1, 3], keepdim = 1} : f32[1,1,2,1]
  return %5, %6, %7
}
)", 1e-4, 1e-3);
  expect_same(R"(
graph g(%y: f32[2,65536], %w: f32[65536], %c: f32[65536]) {
  %3 = layer_norm(%y, %w, %c) {eps = 1e-5} : f32[2,65536]
  return %3
}
)", 1e-4, 1e-4);
}

// A full reduction of a value that reads row reductions: on cuda split
// along those rows (Inductor's existing ranges), its first stage in the
// rows' kernel: the RMS norm's sums and the block maxima of its result
// one kernel, the maxima combined, the result less the maximum; the same
// values as eager.
TEST(Codegen, FullReductionSplitAlongTheRowsItReads) {
  Result r = expect_same(R"(
graph g(%x: f32[2,7,1025], %w: f32[1025]) {
  %2 = rms_norm(%x, %w) {eps = 1e-06} : f32[2,7,1025]
  %6 = amax(%2) {keepdim = 1} : f32[1,1,1]
  %7 = sub(%2, %6) : f32[2,7,1025]
  return %7
}
)", 1e-5, 1e-5);
  if (test_backend() == "cuda") {
    EXPECT_EQ(r.launches.size(), 3u);
    EXPECT_EQ(count_kind(r, "red"), 1);
  }
}

// Outputs that are views of values no buffer holds: on cuda the value is
// stored once and each view returned as a strided view of its buffer (a
// step, an offset, a transpose, a broadcast); the same values as eager.
TEST(Codegen, OutputViewsOfOneStoredValue) {
  expect_same(R"(
graph g(%x: bf16[4,7,31,1], %y: f32[8,16]) {
  %1 = sin(%x) : bf16[4,7,31,1]
  %2 = cat(%1, %x, %x) {dim = 0} : bf16[12,7,31,1]
  %3 = reshape(%2) {shape = [12, 217, 1]} : bf16[12,217,1]
  %4 = slice(%3) {dim = 0, end = 12, start = 5, step = 2} : bf16[4,217,1]
  %5 = relu(%y) : f32[8,16]
  %6 = transpose(%5) {dim0 = 0, dim1 = 1} : f32[16,8]
  %7 = reshape(%5) {shape = [8, 1, 16]} : f32[8,1,16]
  %8 = expand(%7) {shape = [8, 3, 16]} : f32[8,3,16]
  return %4, %3, %6, %8
}
)", 1.6e-2, 1e-2);
}

// argmax: the first largest value's index, NaN the largest, over rows,
// over a short dim (unrolled) and over the whole tensor; ties come from
// values rounded to halves, NaN from a mask.
TEST(Codegen, ArgmaxFirstLargestNaNLargest) {
  expect_same(R"(
graph g(%x: f32[16,300], %y: f32[32,5]) {
  %2 = full() {value = 2.0} : f32[]
  %3 = mul(%x, %2) : f32[16,300]
  %4 = cast(%3) {to = "i64"} : i64[16,300]
  %5 = cast(%4) {to = "f32"} : f32[16,300]
  %6 = argmax(%5) {dim = 1} : i64[16]
  %7 = full() {value = 2.2} : f32[]
  %8 = gt(%x, %7) : bool[16,300]
  %9 = full() {value = nan} : f32[]
  %10 = where(%8, %9, %x) : f32[16,300]
  %11 = argmax(%10) {dim = -1, keepdim = 1} : i64[16,1]
  %12 = argmax(%y) {dim = 1} : i64[32]
  %13 = argmax(%5) : i64[]
  %14 = argmax(%x) {dim = 0} : i64[300]
  %15 = sum(%x) {dims = [1]} : f32[16]
  return %6, %11, %12, %13, %14, %15
}
)", 1e-5, 1e-4);
}

// Indirect reads: an embedding row lookup (index_select), a gather along
// rows of a computed value, and a gather of a bf16 tensor along dim 0.
TEST(Codegen, GatherAndIndexSelect) {
  Result r = expect_same(R"(
graph g(%x: f32[16,300], %emb: f32[50,64], %ids: i64[40], %gi: i64[16,20], %b: bf16[32,24], %g0: i64[20,24]) {
  %6 = index_select(%emb, %ids) {dim = 0} : f32[40,64]
  %7 = relu(%6) : f32[40,64]
  %8 = exp(%x) : f32[16,300]
  %9 = gather(%8, %gi) {dim = 1} : f32[16,20]
  %10 = gather(%b, %g0) {dim = 0} : bf16[20,24]
  %11 = index_select(%x, %ids) {dim = 1} : f32[16,40]
  %12 = sum(%11) {dims = [1]} : f32[16]
  return %7, %9, %10, %12
}
)", 1e-5, 1e-5);
  EXPECT_EQ(count_kind(r, "poi") + count_kind(r, "per") + count_kind(r, "red"), 4);
}

// Indirect stores and the MoE ops: scatter_add with repeated positions (an
// index in [0, 16) over rows of 40), index_add of rows, scatter at distinct
// positions (an argsort's), one_hot, topk and sort. Each row of an indirect
// store runs in order, as LibTorch's CPU kernel adds, so on cpu the bits are
// eager's; LibTorch's cuda kernels add with atomics, in any order.
TEST(Codegen, IndirectStoresAndRoutingMatchEager) {
  const char* text = R"(
graph g(%self: f32[16,24], %idx: i64[16,40], %src: f32[16,40], %rows: i64[30], %rsrc: f32[30,24], %x: f32[16,24]) {
  %sa = scatter_add(%self, %idx, %src) {dim = 1} : f32[16,24]
  %ia = index_add(%self, %rows, %rsrc) {dim = 0} : f32[16,24]
  %perm = argsort(%x) {dim = 1} : i64[16,24]
  %ps = slice(%perm) {dim = 1, start = 0, end = 8} : i64[16,8]
  %sv = slice(%src) {dim = 1, start = 0, end = 8} : f32[16,8]
  %sc = scatter(%x, %ps, %sv) {dim = 1} : f32[16,24]
  %r = relu(%sc) : f32[16,24]
  %oh = one_hot(%rows) {num_classes = 16} : i64[30,16]
  %t = topk(%x) {k = 3, dim = 0, largest = 0} : i64[3,24]
  %srt = sort(%x) {dim = 0, descending = 1} : f32[16,24]
  return %sa, %ia, %r, %oh, %t, %srt
}
)";
  Result c = expect_same(text, 1e-5, 1e-5);
  EXPECT_EQ(count_kind(c, "extern"), 1);  // topk (argsort and sort: rows of 24 and 16, generated)
  if (test_backend() == "cpu") {
    const auto in = random_inputs(text);
    Result a = run(text, Mode::Eager, in);
    Result b = run(text, Mode::Compiled, in);
    for (size_t i = 0; i < a.outs.size(); ++i) EXPECT_TRUE(at::equal(a.outs[i], b.outs[i])) << "output " << i;
  }
}

// Eager index_add of 46 bf16 values into one place gives the same bits on
// every run (on cuda LibTorch's atomics added in any order: two ranks of the
// same inputs disagreed, a fuzz finding), and compiled agrees with it.
TEST(Codegen, EagerIndexAddIsTheSameOnEveryRun) {
  const char* text = R"(
graph g(%x: bf16[1,1,1,1], %i: i64[46], %s: bf16[1,1,1,46]) {
  %y = index_add(%x, %i, %s) {dim = 3} : bf16[1,1,1,1]
  return %y
}
)";
  std::map<std::string, at::Tensor> in = random_inputs(text);
  in["i"] = at::zeros({46}, at::TensorOptions().dtype(at::kLong));
  const at::Tensor first = run(text, Mode::Eager, in).outs[0];
  for (int k = 0; k < 5; ++k) EXPECT_TRUE(at::equal(run(text, Mode::Eager, in).outs[0], first)) << "run " << k;
  // compiled rounds each add to bf16, as LibTorch's cpu kernel does (the
  // same bits there: Bf16ScatterAddRoundsEachAdd); LibTorch's deterministic
  // cuda kernel sums in f32 and rounds once: apart by at most 46 roundings,
  // each within 2^-9 of the running sum, which |x| + sum |s| bounds
  const at::Tensor c = run(text, Mode::Compiled, in).outs[0].to(at::kDouble);
  const double bound = 46 * std::ldexp(1.0, -9) *
                       (in["x"].to(at::kDouble).abs().sum().item<double>() + in["s"].to(at::kDouble).abs().sum().item<double>());
  EXPECT_LE(c.sub(first.to(at::kDouble)).abs().max().item<double>(), bound);
  if (test_backend() == "cpu") {
    EXPECT_TRUE(at::equal(c, first.to(at::kDouble)));
  }
}

// bf16 scatter_add rounds after every add, as LibTorch's CPU kernel does.
TEST(Codegen, Bf16ScatterAddRoundsEachAdd) {
  const char* text = R"(
graph g(%b: bf16[16,20], %idx: i64[16,64], %src: bf16[16,64]) {
  %s = scatter_add(%b, %idx, %src) {dim = 1} : bf16[16,20]
  return %s
}
)";
  expect_same(text, 2e-2, 2e-2);
  if (test_backend() == "cpu") {
    const auto in = random_inputs(text);
    EXPECT_TRUE(at::equal(run(text, Mode::Eager, in).outs[0], run(text, Mode::Compiled, in).outs[0]));
  }
}

// A row element the same for every r, read in two loops of one row kernel
// and loaded before them by a fused neighbour (found by the fuzzer on an
// H100: the second loop read a row cache never written, non-finite output).
// Index 0 into a dim of 1, so eager is defined.
TEST(Codegen, RowInvariantLoadReadInTwoLoopsMatchesEager) {
  const char* text = row_invariant_load_graph();
  at::manual_seed(11);
  std::map<std::string, at::Tensor> in = {{"x1", at::randn({8, 1})},
                                          {"x2", at::randn({1, 1})},
                                          {"i3", at::zeros({46}, at::TensorOptions().dtype(at::kLong))},
                                          {"w4", at::randn({1, 1})},
                                          {"w6", at::randn({46})}};
  Result a = run(text, Mode::Eager, in);
  Result c = run(text, Mode::Compiled, in);
  ASSERT_EQ(a.outs.size(), 2u);
  ASSERT_EQ(c.outs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(at::isfinite(c.outs[i]).all().item<bool>()) << "output " << i;
    EXPECT_TRUE(at::allclose(a.outs[i], c.outs[i], 1e-5, 1e-5)) << "output " << i;
  }
}

// A copy into an input of a value that reads that input elsewhere (the
// input flipped): the flip is whole before the copy writes (two kernels),
// not read back half overwritten.
TEST(Codegen, CopyIntoAnInputOfItsOwnFlip) {
  Result r = expect_same(R"(
graph g(%a: f32[4096]) {
  %1 = flip(%a) {dims = [0]} : f32[4096]
  %2 = copy_(%a, %1) : f32[4096]
  %3 = neg(%a) : f32[4096]
  %4 = copy_(%a, %3) : f32[4096]
  return %2
}
)");
  EXPECT_EQ(count_kind(r, "poi"), 2);
}

// sort and argsort as generated kernels: along the last and an outer dim,
// ascending and descending, of rows with ties (relu's zeros: stable, as
// ATen's stable sort keeps them) and NaN (sqrt of negatives: last
// ascending, first descending), of integers, of bf16; a dim of one element
// (a copy, positions 0) and one past 512 (the library call); an argsort
// read by a gather and by a scatter along its dim in the sort's own kernel.
TEST(Codegen, SortAndArgsortAlongEachDim) {
  Result r = expect_same(R"(
graph g(%x: f32[16,40], %y: f32[6,5,7], %i: i64[4,33] {high = 5}, %b: bf16[8,64], %one: f32[3,1], %long: f32[2,600], %s: f32[16,40], %d: f32[9]) {
  %1 = relu(%x) : f32[16,40]
  %2 = sort(%1) {dim = 1} : f32[16,40]
  %3 = argsort(%1) {dim = 1, descending = 1} : i64[16,40]
  %4 = sqrt(%x) : f32[16,40]
  %5 = argsort(%4) {dim = 1} : i64[16,40]
  %6 = argsort(%4) {dim = 1, descending = 1} : i64[16,40]
  %7 = argsort(%y) {dim = 0} : i64[6,5,7]
  %8 = sort(%y) {dim = 1, descending = 1} : f32[6,5,7]
  %9 = argsort(%i) {dim = 1} : i64[4,33]
  %10 = sort(%b) {dim = -1} : bf16[8,64]
  %11 = argsort(%one) {dim = 1} : i64[3,1]
  %12 = sort(%one) {dim = 1} : f32[3,1]
  %13 = argsort(%long) {dim = 1} : i64[2,600]
  %14 = gather(%s, %3) {dim = 1} : f32[16,40]
  %15 = argsort(%d) {dim = 0} : i64[9]
  %16 = scatter(%d, %15, %d) {dim = 0} : f32[9]
  return %2, %3, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %16
}
)", 0.0, 0.0);
  EXPECT_EQ(count_kind(r, "extern"), 1);  // the 600-element rows
  EXPECT_GE(count_kind(r, "per"), 5);
}

// cumsum: along rows (with a prologue, an epilogue and a sum of the scan
// in the same kernel), along an outer dim, over a long row, of bf16 and of
// integers (i64 result).
TEST(Codegen, CumsumAlongEachDim) {
  expect_same(R"(
graph g(%x: f32[32,200], %y: f32[16,8,12], %l: f32[2,5000], %i: i64[4,50]) {
  %4 = exp(%x) : f32[32,200]
  %5 = cumsum(%4) {dim = 1} : f32[32,200]
  %6 = mul(%5, %x) : f32[32,200]
  %7 = sum(%5) {dims = [1]} : f32[32]
  %8 = cumsum(%y) {dim = 0} : f32[16,8,12]
  %9 = cumsum(%l) {dim = -1} : f32[2,5000]
  %10 = cumsum(%i) {dim = 1} : i64[4,50]
  return %6, %7, %8, %9, %10
}
)", 1e-4, 1e-3);
  // bf16: each running sum rounded to bf16, as ATen rounds it; a GPU scan
  // adds in another order (a tree), so the two may round a partial sum of
  // 64 unit normals (up to about 16, where a bf16 step is 0.125) one step
  // apart
  expect_same(R"(
graph g(%b: bf16[8,64]) {
  %1 = cumsum(%b) {dim = 1} : bf16[8,64]
  return %1
}
)", 2e-2, 0.13);
}

// i32 and u8: arithmetic that wraps as torch's does (u8 - u8), casts both
// ways, comparisons, sums (to i64), max, a running sum and an i32 index.
TEST(Codegen, Int32AndUint8) {
  expect_same(R"(
graph g(%a: i32[64,40], %b: i32[64,40], %p: u8[64,40], %q: u8[64,40], %t: f32[20,16], %ix: i32[30]) {
  %6 = mul(%a, %b) : i32[64,40]
  %7 = add(%6, %a) : i32[64,40]
  %8 = sub(%p, %q) : u8[64,40]
  %9 = cast(%8) {to = "f32"} : f32[64,40]
  %10 = full() {value = 255.0} : f32[]
  %11 = div(%9, %10) : f32[64,40]
  %12 = gt(%p, %q) : bool[64,40]
  %13 = where(%12, %a, %b) : i32[64,40]
  %14 = sum(%7) {dims = [1]} : i64[64]
  %15 = amax(%p) {dims = [0]} : u8[40]
  %16 = cumsum(%q) {dim = 1} : i64[64,40]
  %17 = index_select(%t, %ix) {dim = 1} : f32[20,30]
  %18 = cast(%11) {to = "u8"} : u8[64,40]
  return %7, %11, %13, %14, %15, %16, %17, %18
}
)");
}

// Inputs stored transposed and permuted (as x.t() and a permute of a
// row-major tensor reach a compiled function): read through their strides.
TEST(Codegen, StridedAndTransposedInputs) {
  const std::string text = R"(
graph g(%x: f32[48,64], %y: f32[48,64], %z: f32[4,6,8]) {
  %3 = add(%x, %y) : f32[48,64]
  %4 = sum(%x) {dims = [1]} : f32[48]
  %5 = exp(%z) : f32[4,6,8]
  %6 = amax(%z) {dims = [0]} : f32[6,8]
  return %3, %4, %5, %6
}
)";
  auto in = random_inputs(text);
  in["x"] = in["x"].t().contiguous().t();              // dim_order [1, 0]
  in["z"] = in["z"].permute({2, 0, 1}).contiguous().permute({1, 2, 0});  // dim_order [2, 0, 1]
  ASSERT_FALSE(in["x"].is_contiguous());
  Result a = run(text, Mode::Eager, in);
  Result c = run(text, Mode::Compiled, in);
  ASSERT_EQ(a.outs.size(), c.outs.size());
  for (size_t i = 0; i < a.outs.size(); ++i)
    EXPECT_TRUE(at::allclose(a.outs[i], c.outs[i], 1e-5, 1e-5)) << "output " << i;
  // a compiled input layout is part of the guard: the strided x compiles
  // its own kernels (one graph either way)
  EXPECT_EQ(c.graphs, 1);
}

TEST(Codegen, Bf16RmsNormMatchesEagerWithinBf16Tolerance) {
  expect_same(R"(
graph g(%x: bf16[4,64,256], %w: bf16[256]) {
  %2 = rms_norm(%x, %w) {eps = 1e-06} : bf16[4,64,256]
  return %2
}
)", 1.6e-2, 1e-2);
}

// Shapes that take the cuda dialect's chunks of 8 (wide loads and stores):
// broadcast and contiguous reads, a transposed read that stays scalar, f32
// chunks, a row of two chunks a thread with a value stored from inside the
// row loop, and a row length that is no multiple of 8.
const char* kChunkCase = R"(
graph g(%x: bf16[16,2048], %y: bf16[16,2048], %w: bf16[2048], %b: bf16[2048], %z: f32[32,64], %u: f32[8,100]) {
  %6 = add(%x, %y) : bf16[16,2048]
  %7 = rms_norm(%6, %w) {eps = 1e-06} : bf16[16,2048]
  %8 = add(%7, %b) : bf16[16,2048]
  %9 = gelu(%8) {approximate = "tanh"} : bf16[16,2048]
  %10 = transpose(%9) {dim0 = 0, dim1 = 1} : bf16[2048,16]
  %11 = neg(%10) : bf16[2048,16]
  %12 = softmax(%z) {dim = -1} : f32[32,64]
  %13 = softmax(%u) {dim = -1} : f32[8,100]
  %14 = slice(%z) {dim = 1, end = 17, start = 1, step = 1} : f32[32,16]
  %15 = exp(%14) : f32[32,16]
  return %6, %9, %11, %12, %13, %15
}
)";

// bf16 values of up to ~4 after a norm and three rounded steps: a few bf16
// ulps apart from eager's rounding after every op; a misplaced element is off
// by O(1).
constexpr double kChunkRtol = 2e-2, kChunkAtol = 7e-2;

TEST(Codegen, ChunkedAccessesMatchEager) { expect_same(kChunkCase, kChunkRtol, kChunkAtol); }

// The same with every input pointer off 16-byte alignment: the chunks fall
// back to scalar accesses at run time and give the same values.
TEST(Codegen, ChunkedAccessesOnUnalignedInputsMatchEager) {
  expect_same(kChunkCase, kChunkRtol, kChunkAtol, FusionPolicy::Default, 1);
}

}  // namespace
}  // namespace fg
