// GEMMs in generated code against ATen: max-autotune's templates (a norm
// prologue, sibling GEMMs merged, epilogues, a bias, K of one, strided
// inputs), the shapes timed and chosen, and the rank-0 bias of a TP linear.
#include <gtest/gtest.h>

#include <ATen/ops/allclose.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/linear.h>

#include "fusion/errors.h"
#include "kernels/cpu/gemm_choice.h"
#include "tests/unit/codegen_fixtures.h"

namespace fg {
namespace {
using namespace testing_codegen;

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
  for (const auto& r : sib.launches) {
    if (r.kind == "tem") {
      EXPECT_EQ(r.gemm, "f32 m48 n96 k64 + f32 m48 n96 k64");
    }
  }
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
    EXPECT_TRUE(at::allclose(y, rank == 0 ? plain.add(r) : plain, 1e-5, 1e-5)) << "rank " << rank;
  }
}

// A GEMM of one row or one column under max-autotune: on cuda its operands'
// product summed over K in generated code (Inductor's mm and bmm
// decompositions under coordinate-descent tuning), the producers and
// readers in the sum's kernel; every GEMM here is one: a linear to one
// feature, a 1-D input with an f32 bias read by a relu (the bias add taken
// apart), a batched GEMM of one row, a GEMM of one column in bf16. On the
// cpu backend they stay GEMMs (templates or library calls).
TEST(Codegen, GemmsOfOneRowOrColumnAreSumsOnCudaUnderMaxAutotune) {
  Result c = expect_same(R"(
graph g(%x: bf16[8,1,64], %w1: bf16[1,64], %v: f32[257], %w2: f32[33,257], %b2: f32[33], %a: f32[4,1,24], %m: f32[4,24,9], %p: bf16[6,40], %q: bf16[40,1]) {
  %1 = sin(%x) : bf16[8,1,64]
  %2 = linear(%1, %w1) : bf16[8,1,1]
  %3 = abs(%2) : bf16[8,1,1]
  %4 = linear(%v, %w2, %b2) : f32[33]
  %5 = relu(%4) : f32[33]
  %6 = matmul(%a, %m) : f32[4,1,9]
  %7 = matmul(%p, %q) : bf16[6,1]
  return %3, %5, %6, %7
}
)", 1e-2, 1e-2, FusionPolicy::MaxAutotune);  // bf16 results: a rounding apart at most
  if (test_backend() == "cuda") {
    EXPECT_EQ(count_kind(c, "extern"), 0);
    EXPECT_EQ(static_cast<int>(c.launches.size()), count_kind(c, "per") + count_kind(c, "red"));
  } else {
    EXPECT_EQ(count_kind(c, "extern") + count_kind(c, "tem"), 4);
  }
}

// A bias added to a 2-D GEMM's returned result: on cuda the GEMM's own
// bias (addmm, no kernel of fusegate's), a matmul's too; read by a
// pointwise op the add stays with it. Against eager on either backend.
TEST(Codegen, BiasAddsFoldIntoTheirGemmsOnCuda) {
  Result c = expect_same(R"(
graph g(%x: f32[64,32], %w: f32[48,32], %b: f32[48], %m: f32[32,40], %c: f32[1,40], %d: f32[48]) {
  %1 = linear(%x, %w) : f32[64,48]
  %2 = add(%1, %b) : f32[64,48]
  %3 = matmul(%x, %m) : f32[64,40]
  %4 = add(%c, %3) : f32[64,40]
  %5 = linear(%x, %w) : f32[64,48]
  %6 = add(%5, %d) : f32[64,48]
  %7 = relu(%6) : f32[64,48]
  return %2, %4, %7
}
)", 1e-4, 1e-4);
  if (test_backend() == "cuda") {
    EXPECT_EQ(count_kind(c, "extern"), 3);
    EXPECT_EQ(c.launches.size(), 4u);  // the third add stays with its relu
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

}  // namespace
}  // namespace fg
