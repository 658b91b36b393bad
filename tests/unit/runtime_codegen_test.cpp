// Generated kernels compute what ATen computes: each case runs a graph op by
// op through LibTorch (mode A) and compiled (mode C) on the same inputs, and
// compares. The backend is cpu, or the one FUSEGATE_TEST_BACKEND names
// (bench/gpu.sh runs these cases with "cuda" on a GPU machine).
#include <gtest/gtest.h>

#include <torch/version.h>

#include "fusion/errors.h"
#include "fusion/ir/text.h"
#include "kernels/cpu/aten_ops.h"
#include "kernels/cpu/gemm_choice.h"
#include "kernels/cpu/runtime.h"
#include "repros/registry.h"
#include "tests/unit/row_invariant_graph.h"

namespace fg {
namespace {

struct Result {
  std::vector<at::Tensor> outs;
  std::vector<LaunchRecord> launches;
  int graphs = 0;
  int recompiles = 0;
};

std::string test_backend() {
  const char* b = std::getenv("FUSEGATE_TEST_BACKEND");
  return b && *b ? b : "cpu";
}

// Inputs are copied to the backend's device, into fresh storage; with
// `offset` elements in front of each, so that no input starts 16-byte aligned.
Result run(const std::string& text, Mode mode, const std::map<std::string, at::Tensor>& inputs,
           FusionPolicy policy = FusionPolicy::Default, int64_t offset = 0, LaunchProbe* probe = nullptr,
           const std::optional<std::set<std::string>>& template_gemms = std::nullopt) {
  Graph g = parse_graph(text, "case.fg");
  const std::string backend = test_backend();
  AtenExecutor ex(nullptr, 0, 1, policy, false, parse_backend(backend));
  ex.set_probe(probe);
  if (template_gemms) ex.set_template_gemms(*template_gemms);
  Session s(mode, &ex);
  Inputs in;
  for (const auto& [k, v] : inputs) {
    const auto dev = v.options().device(backend == "cuda" ? at::kCUDA : at::kCPU);
    at::Tensor t;
    if (!v.is_contiguous()) {
      t = at::empty_strided(v.sizes(), v.strides(), dev);  // a strided input keeps its strides
    } else {
      at::Tensor flat = at::zeros({v.numel() + offset}, dev);
      t = flat.narrow(0, offset, v.numel()).view(v.sizes());
    }
    t.copy_(v);
    in[k] = s.wrap(wrap_aten(t));
  }
  ex.begin_forward();
  auto outs = run_fg(s, g, in);
  Result r;
  for (const auto& c : s.finish(outs)) r.outs.push_back(unwrap(c).to(at::kCPU).contiguous());
  r.launches = ex.launches();
  r.graphs = s.graph_count();
  return r;
}

std::map<std::string, at::Tensor> random_inputs(const std::string& text) {
  Graph g = parse_graph(text, "case.fg");
  std::map<std::string, at::Tensor> m;
  at::manual_seed(7);
  for (int id : g.input_ids()) {
    const Node& n = g.node(id);
    // integers: indices in [0, 16) (cases index dims of at least 16)
    m[n.name] = is_floating(n.type.dtype)
                    ? at::randn(n.type.shape, at::TensorOptions().dtype(to_aten(n.type.dtype)))
                    : at::randint(0, 16, n.type.shape, at::TensorOptions().dtype(to_aten(n.type.dtype)));
  }
  return m;
}

Result expect_same(const std::string& text, double rtol = 1e-5, double atol = 1e-5,
                   FusionPolicy policy = FusionPolicy::Default, int64_t offset = 0) {
  auto in = random_inputs(text);
  Result a = run(text, Mode::Eager, in);
  Result c = run(text, Mode::Compiled, in, policy, offset);
  EXPECT_EQ(a.outs.size(), c.outs.size());
  EXPECT_FALSE(c.outs.empty());
  for (size_t i = 0; i < std::min(a.outs.size(), c.outs.size()); ++i) {
    EXPECT_EQ(a.outs[i].sizes(), c.outs[i].sizes());
    if (a.outs[i].sizes() != c.outs[i].sizes()) continue;
    double err = (a.outs[i].to(at::kDouble) - c.outs[i].to(at::kDouble)).abs().max().item<double>();
    EXPECT_TRUE(at::allclose(a.outs[i].to(at::kDouble), c.outs[i].to(at::kDouble), rtol, atol))
        << "output " << i << " max abs error " << err << "\n" << text;
  }
  EXPECT_EQ(c.graphs, 1);
  return c;
}

int count_kind(const Result& r, const std::string& kind) {
  int n = 0;
  for (const auto& l : r.launches) n += l.kind == kind;
  return n;
}

// max-autotune: GEMM templates with a norm prologue, sibling GEMMs merged,
// an epilogue, and a bias; all against ATen.
#define SKIP_ON_CUDA_TEMPLATES() \
  if (test_backend() == "cuda") GTEST_SKIP() << "GEMM templates are generated on the cpu backend only"

TEST(Codegen, GemmTemplateWithPrologueSiblingsAndEpilogue) {
  SKIP_ON_CUDA_TEMPLATES();
  Result c = expect_same(R"(
graph g(%x: f32[2,24,64], %w: f32[64], %wg: f32[96,64], %wu: f32[96,64], %wd: f32[64,96], %bd: f32[64]) {
  %6 = rms_norm(%x, %w) {eps = 1e-06} : f32[2,24,64]
  %7 = linear(%6, %wg) : f32[2,24,96]
  %8 = linear(%6, %wu) : f32[2,24,96]
  %9 = silu(%7) : f32[2,24,96]
  %10 = mul(%9, %8) : f32[2,24,96]
  %11 = linear(%10, %wd, %bd) : f32[2,24,64]
  %12 = add(%11, %x) : f32[2,24,64]
  return %12
}
)", 1e-4, 5e-3, FusionPolicy::MaxAutotune);  // sums of 96 products of magnitude ~10 in f32
  // norm + both GEMMs + silu*mul in one kernel; the down GEMM with its bias
  // and the residual add in another
  EXPECT_EQ(c.launches.size(), 2u);
  EXPECT_EQ(count_kind(c, "tem"), 2);
}

// cpu max-autotune's choice per GEMM shape (kernels/cpu/gemm_choice.h): the
// probe times each template launch under its shape, a shape given to the
// library runs as the extern and the chosen ones stay templates, same
// outputs; merged siblings are one launch naming both shapes.
TEST(Codegen, GemmTemplateShapesTimedAndChosenShapesRunAsLibraryCalls) {
  SKIP_ON_CUDA_TEMPLATES();
  const std::string text = R"(
graph g(%x: f32[2,24,64], %wg: f32[96,64], %wd: f32[64,96], %bd: f32[64]) {
  %a = linear(%x, %wg) : f32[2,24,96]
  %b = silu(%a) : f32[2,24,96]
  %c = linear(%b, %wd, %bd) : f32[2,24,64]
  return %c
}
)";
  const auto in = random_inputs(text);
  GemmTimingProbe probe;
  Result t = run(text, Mode::Compiled, in, FusionPolicy::MaxAutotune, 0, &probe);
  EXPECT_EQ(count_kind(t, "tem"), 2);
  const std::map<std::string, double> us = probe.medians();
  ASSERT_EQ(us.size(), 2u);
  EXPECT_GT(us.at("f32 m48 n96 k64"), 0);
  EXPECT_GT(us.at("f32 m48 n64 k96 bias"), 0);

  Result l = run(text, Mode::Compiled, in, FusionPolicy::MaxAutotune, 0, nullptr,
                 std::set<std::string>{"f32 m48 n64 k96 bias"});
  EXPECT_EQ(count_kind(l, "tem"), 1);
  EXPECT_EQ(count_kind(l, "extern"), 1);
  for (const auto& r : l.launches) EXPECT_EQ(r.gemm.empty(), r.kind != "tem") << r.name;
  Result a = run(text, Mode::Eager, in);
  ASSERT_EQ(l.outs.size(), 1u);
  EXPECT_TRUE(at::allclose(a.outs[0], l.outs[0], 1e-4, 1e-4));

  EXPECT_GT(library_gemm_us("f32 m48 n96 k64", 3), 0);
  EXPECT_GT(library_gemm_us("bf16 m48 n64 k96 bias", 3), 0);
  EXPECT_GT(library_gemm_us("bf16 m48 n64 k96 + bf16 m48 n64 k96", 3), 0);  // siblings: one batched call
  EXPECT_GT(library_gemm_us("bf16 m48 n64 k96 + f32 m8 n8 k8 bias", 3), 0);  // two calls
  EXPECT_EQ(gemm_group_shapes("a b + c d"), (std::vector<std::string>{"a b", "c d"}));
  EXPECT_EQ(gemm_group_shapes("a b"), (std::vector<std::string>{"a b"}));

  // gate and up merged into one template kernel: one launch, both shapes
  const std::string siblings = R"(
graph g(%x: f32[2,24,64], %wg: f32[96,64], %wu: f32[96,64]) {
  %a = linear(%x, %wg) : f32[2,24,96]
  %b = linear(%x, %wu) : f32[2,24,96]
  %c = mul(%a, %b) : f32[2,24,96]
  return %c
}
)";
  Result sib = run(siblings, Mode::Compiled, random_inputs(siblings), FusionPolicy::MaxAutotune);
  ASSERT_EQ(count_kind(sib, "tem"), 1);
  for (const auto& r : sib.launches)
    if (r.kind == "tem") EXPECT_EQ(r.gemm, "f32 m48 n96 k64 + f32 m48 n96 k64");
  EXPECT_THROW(library_gemm_us("f32 m48 n96"), InternalError);
  EXPECT_THROW(library_gemm_us("f32 m48 n96 k64 gelu"), InternalError);
  EXPECT_EQ(choose_gemm("s", 10, 20).choice, "template");
  EXPECT_EQ(choose_gemm("s", 20, 10).choice, "library");
  EXPECT_EQ(choose_gemm("s", 10, 10).choice, "library");  // a tie keeps the library call
}

TEST(Codegen, GemmTemplateOverStridedInput) {
  SKIP_ON_CUDA_TEMPLATES();
  Result c = expect_same(R"(
graph g(%x: f32[16,8,12], %w: f32[20,16]) {
  %2 = permute(%x) {dims = [1, 2, 0]} : f32[8,12,16]
  %3 = linear(%2, %w) : f32[8,12,20]
  return %3
}
)", 1e-4, 1e-4, FusionPolicy::MaxAutotune);
  EXPECT_EQ(count_kind(c, "tem"), 1);
}

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

// Found by fusegate fuzz: a GEMM template whose A is computed outside the
// loop over K (K = 1 here) wrote arow[i][r] with no r in scope.
TEST(Codegen, GemmTemplateWithKOfOne) {
  SKIP_ON_CUDA_TEMPLATES();
  Result c = expect_same(R"(
graph g(%x: f32[5,1], %w: f32[3,1], %b: f32[3]) {
  %3 = sigmoid(%x) : f32[5,1]
  %4 = linear(%3, %w, %b) : f32[5,3]
  return %4
}
)", 1e-5, 1e-5, FusionPolicy::MaxAutotune);
  EXPECT_EQ(count_kind(c, "tem"), 1);
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

// Sibling GEMMs in max-autotune: one template on cpu; one batched cuBLASLt
// GEMM over stacked weights on cuda. Same values as ATen either way.
TEST(Codegen, MaxAutotuneSiblingGemmsMatchEager) {
  Result c = expect_same(R"(
graph g(%x: f32[48,64], %wg: f32[96,64], %wu: f32[96,64]) {
  %3 = linear(%x, %wg) : f32[48,96]
  %4 = linear(%x, %wu) : f32[48,96]
  %5 = silu(%3) : f32[48,96]
  %6 = mul(%5, %4) : f32[48,96]
  return %6, %4
}
)", 1e-3, 2e-3, FusionPolicy::MaxAutotune);  // f32 sums of 64 products, in another order
  if (test_backend() == "cuda") {
    ASSERT_EQ(c.launches.size(), 2u);
    EXPECT_EQ(c.launches[0].name, "extern_mm_x2");
  } else {
    EXPECT_EQ(count_kind(c, "tem"), 1);
  }
}

// linear_add_rank0 adds its addend on rank 0 only: summed over ranks, the
// addend counts once.
// A GEMM template's epilogue that reads an earlier epilogue's row anywhere
// but at its own element (an RMSNorm over 5 columns, unrolled into
// pointwise code, of a where that another GEMM also reads, so realized)
// must not join the template: the row is written element
// by element there (a fuzz finding: max error 0.70 before).
TEST(Codegen, TemplateEpilogueReadsOnlyWhatIsWritten) {
  SKIP_ON_CUDA_TEMPLATES();
  expect_same(R"(
graph g(%x: bf16[4,8], %w1: bf16[5,8], %g: bf16[5], %w2: bf16[3,5]) {
  %4 = linear(%x, %w1) : bf16[4,5]
  %5 = full() {value = 0.0} : bf16[]
  %6 = gt(%4, %5) : bool[4,5]
  %7 = full() {value = 0.5} : bf16[]
  %8 = where(%6, %4, %7) : bf16[4,5]
  %9 = linear(%8, %w2) : bf16[4,3]
  %10 = rms_norm(%8, %g) {eps = 1e-06} : bf16[4,5]
  %11 = add(%10, %4) : bf16[4,5]
  return %11, %9
}
)", 2e-2, 2e-2, FusionPolicy::MaxAutotune);
}

TEST(Eager, LinearAddRank0AddsOnRankZeroOnly) {
  Graph g = parse_graph(R"(
graph g(%a: f32[4,8], %w: f32[6,8], %r: f32[4,6]) {
  %3 = linear_add_rank0(%a, %w, %r) : f32[4,6]
  return %3
}
)", "case.fg");
  at::manual_seed(3);
  at::Tensor a = at::randn({4, 8}), w = at::randn({6, 8}), r = at::randn({4, 6});
  at::Tensor plain = at::linear(a, w);
  for (int rank : {0, 1}) {
    EagerContext ctx;
    ctx.rank = rank;
    at::Tensor y = aten_op(g.node(3), {a, w, r}, ctx);
    EXPECT_TRUE(at::allclose(y, rank == 0 ? plain + r : plain, 1e-5, 1e-5)) << "rank " << rank;
  }
}

// {epilogue = "gelu_tanh"} on a linear is GELU-tanh of its result (on cuda,
// cuBLASLt's epilogue, before the one rounding).
TEST(Codegen, LinearWithGeluEpilogueMatchesGeluOfLinear) {
  expect_same(R"(
graph g(%x: f32[32,64], %w: f32[48,64], %b: f32[48]) {
  %3 = linear(%x, %w, %b) {epilogue = "gelu_tanh"} : f32[32,48]
  %4 = linear(%x, %w) {epilogue = "gelu_tanh"} : f32[32,48]
  return %3, %4
}
)", 1e-4, 1e-4);
  Graph g = parse_graph(R"(
graph g(%x: f32[4,8], %w: f32[6,8]) {
  %2 = linear(%x, %w) {epilogue = "gelu_tanh"} : f32[4,6]
  return %2
}
)", "case.fg");
  at::Tensor x = at::randn({4, 8}), w = at::randn({6, 8});
  EagerContext ctx;
  EXPECT_TRUE(at::allclose(aten_op(g.node(2), {x, w}, ctx), at::gelu(at::linear(x, w), "tanh"), 1e-5, 1e-5));
}

TEST(Codegen, CompiledLaunchesFewerKernelsThanEager) {
  std::string text = R"(
graph g(%x: f32[64,32], %y: f32[64,32]) {
  %2 = add(%x, %y) : f32[64,32]
  %3 = relu(%2) : f32[64,32]
  %4 = full() {value = 0.5} : f32[]
  %5 = mul(%3, %4) : f32[64,32]
  return %5
}
)";
  auto in = random_inputs(text);
  Result a = run(text, Mode::Eager, in);
  Result c = run(text, Mode::Compiled, in);
  EXPECT_EQ(c.launches.size(), 1u);
  EXPECT_GE(a.launches.size(), 3u);
}

// -- what really runs -----------------------------------------------------------

// The probe of the backend: device kernels on cuda, ATen operators on cpu.
std::unique_ptr<LaunchProbe> backend_probe() {
  if (test_backend() != "cuda") return make_aten_op_probe();
  std::string why;
  auto p = make_device_kernel_probe(&why);
  EXPECT_TRUE(p) << "cannot count device kernels: " << why;
  return p;
}

const LaunchRecord* find_launch(const Result& r, const std::string& part) {
  for (const auto& l : r.launches)
    if (l.name.find(part) != std::string::npos) return &l;
  return nullptr;
}

// Attention as the TP blocks write it: q, k and v are head-split views of
// one projection, and the heads are merged again after it.
const char* kAttention = R"(
graph g(%qkv: bf16[2,128,768]) {
  %1 = slice(%qkv) {dim = 2, end = 256, start = 0, step = 1} : bf16[2,128,256]
  %2 = reshape(%1) {shape = [2, 128, 4, 64]} : bf16[2,128,4,64]
  %3 = transpose(%2) {dim0 = 1, dim1 = 2} : bf16[2,4,128,64]
  %4 = slice(%qkv) {dim = 2, end = 512, start = 256, step = 1} : bf16[2,128,256]
  %5 = reshape(%4) {shape = [2, 128, 4, 64]} : bf16[2,128,4,64]
  %6 = transpose(%5) {dim0 = 1, dim1 = 2} : bf16[2,4,128,64]
  %7 = slice(%qkv) {dim = 2, end = 768, start = 512, step = 1} : bf16[2,128,256]
  %8 = reshape(%7) {shape = [2, 128, 4, 64]} : bf16[2,128,4,64]
  %9 = transpose(%8) {dim0 = 1, dim1 = 2} : bf16[2,4,128,64]
  %10 = sdpa(%3, %6, %9) {causal = 1} : bf16[2,4,128,64]
  %11 = transpose(%10) {dim0 = 1, dim1 = 2} : bf16[2,128,4,64]
  %12 = reshape(%11) {shape = [2, 128, 256]} : bf16[2,128,256]
  return %12
}
)";

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// LibTorch 2 has fused attention and the extern must run it: on cuda one
// device kernel (flash or cuDNN), on cpu the fused operator. LibTorch 1.x
// has none and runs the composite. This file includes <torch/version.h>
// itself, so a runtime that lost the version macros disagrees with it here.
TEST(RealWork, AttentionRunsTheFusedKernelWhereLibTorchHasOne) {
  auto probe = backend_probe();
  ASSERT_TRUE(probe);
  Result c = run(kAttention, Mode::Compiled, random_inputs(kAttention), FusionPolicy::Default, 0, probe.get());
  const LaunchRecord* a = find_launch(c, "scaled_dot_product_attention");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->probed);
  if (test_backend() == "cuda") {
    ASSERT_EQ(a->device_kernels.size(), 1u) << "attention ran " << joined(a->device_kernels);
    const std::string& k = a->device_kernels[0];
    EXPECT_TRUE(k.find("flash") != std::string::npos || k.find("fmha") != std::string::npos ||
                k.find("cudnn") != std::string::npos || k.find("attention") != std::string::npos)
        << "not a fused attention kernel: " << k;
    return;
  }
#if TORCH_VERSION_MAJOR >= 2
  EXPECT_STREQ(attention_kernel(), "fused");
  EXPECT_TRUE(a->aten_ops.count("aten::scaled_dot_product_attention"));
  EXPECT_FALSE(a->aten_ops.count("aten::softmax")) << "the composite ran";
#else
  EXPECT_STREQ(attention_kernel(), "composite");
  EXPECT_TRUE(a->aten_ops.count("aten::softmax"));
  EXPECT_TRUE(a->aten_ops.count("aten::triu"));
#endif
}

// Every launch of a compiled graph gets what it ran: a generated kernel is
// one device kernel of its own name; a GEMM extern dispatches a matrix
// product on cpu.
TEST(RealWork, EveryLaunchIsProbed) {
  const char* text = R"(
graph g(%x: f32[32,64], %w: f32[48,64]) {
  %2 = linear(%x, %w) : f32[32,48]
  %3 = relu(%2) : f32[32,48]
  return %3
}
)";
  auto probe = backend_probe();
  ASSERT_TRUE(probe);
  Result c = run(text, Mode::Compiled, random_inputs(text), FusionPolicy::Default, 0, probe.get());
  ASSERT_EQ(c.launches.size(), 2u);
  for (const auto& l : c.launches) EXPECT_TRUE(l.probed) << l.name;
  const LaunchRecord* gemm = find_launch(c, "extern");
  const LaunchRecord* relu = find_launch(c, "relu");
  ASSERT_TRUE(gemm && relu);
  EXPECT_GT(gemm->flops, 0);
  EXPECT_DOUBLE_EQ(relu->bytes, 2.0 * 32 * 48 * 4);
  if (test_backend() == "cuda") {
    EXPECT_GE(gemm->device_kernels.size(), 1u);
    ASSERT_EQ(relu->device_kernels.size(), 1u);
    EXPECT_EQ(relu->device_kernels[0], relu->name);
  } else {
    EXPECT_TRUE(gemm->aten_ops.count("aten::mm") || gemm->aten_ops.count("aten::addmm")) << "no matrix product";
    EXPECT_TRUE(relu->aten_ops.empty() || relu->aten_ops.size() == 1);  // only its output's allocation
  }
}

TEST(Capture, ShapeChangeRecompiles) {
  AtenExecutor ex(nullptr, 0, 1, FusionPolicy::Default);
  for (int64_t n : {8, 8, 16}) {
    Session s(Mode::Compiled, &ex);
    Tensor x = s.wrap(wrap_aten(at::randn({n, 4})));
    s.finish({relu(x) * 2.0});
  }
  EXPECT_EQ(ex.recompile_count(), 1);
}

TEST(Capture, ItemAndDisabledRegionBreakTheGraph) {
  AtenExecutor ex(nullptr, 0, 1, FusionPolicy::Default);
  Session s(Mode::Compiled, &ex);
  Tensor x = s.wrap(wrap_aten(at::ones({4})));
  Tensor y = exp(x);
  double v = s.item(sum(y, {}));
  Tensor z;
  s.disabled("helper", [&] { z = y * v; });
  auto outs = s.finish({z + 1.0});
  EXPECT_EQ(s.breaks().size(), 2u);
  EXPECT_EQ(s.graph_count(), 2);  // before item(); after the region (the region itself runs eagerly)
  EXPECT_NE(s.breaks()[0].reason.find("item()"), std::string::npos);
  EXPECT_NE(s.breaks()[0].loc.file.find("runtime_codegen_test.cpp"), std::string::npos);
  EXPECT_NE(s.breaks()[1].reason.find("disabled function helper"), std::string::npos);
  double expect = std::exp(1.0) * 4 * std::exp(1.0) + 1.0;
  EXPECT_NEAR(unwrap(outs[0])[0].item<double>(), expect, 1e-4);
}

}  // namespace
}  // namespace fg
