// Each fast path's pattern in the compiler: the sites it matches and those
// it must not (the exchange with and without the residual add, the SwiGLU
// MLP and its tile width, causal attention, the RMSNorm folded into the MLP),
// and which one takes nodes that two match.
#include <gtest/gtest.h>

#include "fusion/compile.h"
#include "fusion/passes/lower.h"
#include "tests/unit/fast_path_fixtures.h"

namespace fg {
namespace {
using namespace testing_fast_paths;

// The block's last all-reduce: no norm reads its sum. A summed f32
// all-reduce beside it (a norm's sum of squares) is not the pattern (an
// all-reduce only sums: the op reference allows reduce_op "sum" alone).
const char* kLastAllReduce = R"(
graph g(%h: bf16[8,64], %w: bf16[64,64], %x: bf16[8,64], %v: f32[8,1]) {
  %4 = linear(%h, %w) : bf16[8,64]
  %5 = all_reduce(%4) {reduce_op = "sum"} : bf16[8,64]
  %6 = add(%x, %5) : bf16[8,64]
  %7 = all_reduce(%v) {reduce_op = "sum"} : f32[8,1]
  return %6, %7
}
)";

// A fast path whose kernel takes row-major pointers reads a strided view
// through a copy lowering makes for it alone (a transposed bf16[128,1,2]
// reached allreduce_sum's kernel as is: an internal error at world size 2
// under max-autotune, found by the fuzzer), a pointwise kernel of its own;
// a row-major view is read in place; causal_attention reads its views.
TEST(FastPaths, AStridedViewReachesARowMajorKernelThroughACopy) {
  auto copies_before_fast_path = [](const std::string& view, const Shape& x) {
    const std::string xs = "bf16" + shape_str(x);
    const std::string text = "graph g(%x: " + xs + ") {\n  %t = " + view +
                             "\n  %r = all_reduce(%t) {reduce_op = \"sum\"} : bf16[2,1,128]\n  return %r\n}\n";
    CompileOptions o;
    o.fusion = FusionPolicy::MaxAutotune;
    o.world_size = 2;
    o.fast_paths = parse_fast_paths("allreduce_sum");
    o.proofs.forced = {"allreduce_sum"};
    const CompiledProgram c = compile(parse_graph(text, "t.fg"), o);
    int pointwise = 0, fast = 0;
    for (const SchedNode& sn : c.lowered.nodes) {
      if (sn.kind == SNKind::Pointwise && fast == 0) ++pointwise;
      if (sn.kind == SNKind::Extern && sn.op.op == Op::FastPath) {
        ++fast;
        const Layout& arg = sn.args.at(0).second;
        EXPECT_TRUE(arg.row_major()) << view << ": " << arg.str();
      }
    }
    EXPECT_EQ(fast, 1) << view;
    return pointwise;
  };
  EXPECT_EQ(copies_before_fast_path("transpose(%x) {dim0 = 0, dim1 = 2} : bf16[2,1,128]", {128, 1, 2}), 1);
  EXPECT_EQ(copies_before_fast_path("permute(%x) {dims = [2, 1, 0]} : bf16[2,1,128]", {128, 1, 2}), 1);
  EXPECT_EQ(copies_before_fast_path("reshape(%x) {shape = [2, 1, 128]} : bf16[2,1,128]", {128, 1, 2}), 0);
  // dims of one element take any stride: [2,1,128] from [2,128,1] is row-major
  EXPECT_EQ(copies_before_fast_path("transpose(%x) {dim0 = 1, dim1 = 2} : bf16[2,1,128]", {2, 128, 1}), 0);
  EXPECT_FALSE(find_fast_path("allreduce_sum")->strided_inputs);
  EXPECT_TRUE(find_fast_path("causal_attention")->strided_inputs);
}

// The exchange alone: it runs at world size 2 with its proof (or forced),
// on one rank it has nothing to exchange on any backend, and where a norm
// reads the sum the fused exchange + norm takes the all-reduce.
TEST(FastPaths, TheExchangeAloneRunsOnSeveralRanksOnly) {
  const FastPathProofs p = proven({{"allreduce_sum", "bf16,hidden=64,vec=8"}});
  const FastPathSelection sel = parse_fast_paths("proven");
  for (const FastPathTarget t : {FastPathTarget{Backend::Cuda, 2}, FastPathTarget{Backend::Cpu, 2},
                                 FastPathTarget{Backend::Cuda, 0}}) {
    Applied r = apply_to(kLastAllReduce, sel, p, t);
    EXPECT_EQ(r.status["allreduce_sum"].status, kFastPathUsed) << t.world_size;
    // the bf16 sum only, not the f32 one
    EXPECT_EQ(r.status["allreduce_sum"].shape_classes, std::vector<std::string>{"bf16,hidden=64,vec=8"});
    ASSERT_EQ(count(r.out, Op::FastPath), 1) << print_graph(r.out);
    EXPECT_EQ(count(r.out, Op::AllReduce), 1) << print_graph(r.out);
    for (const Node& n : r.out.nodes)
      if (n.op == Op::FastPath) {
        EXPECT_EQ(attr_str_or(n.attrs, "name", ""), "allreduce_sum");
        EXPECT_EQ(n.type.shape, (Shape{8, 64}));
        EXPECT_EQ(r.out.node(n.inputs[0]).op, Op::Linear);
      }
  }
  for (const Backend b : {Backend::Cuda, Backend::Cpu}) {
    Applied one = apply_to(kLastAllReduce, sel, p, {b, 1});
    expect_refused(one, "allreduce_sum", "not used: cost model (one rank: nothing to exchange)",
                   "fast_path_cost_model");
  }
  Applied unproven = apply_to(kLastAllReduce, sel, {}, {Backend::Cuda, 2});
  expect_refused(unproven, "allreduce_sum", kFastPathUnproven, "fast_path_unproven");
  // a win over the collective Inductor calls: max-autotune's only
  for (const Backend b : {Backend::Cuda, Backend::Cpu}) {
    Applied def = apply_to(kLastAllReduce, sel, p, {b, 2, FusionPolicy::Default});
    expect_refused(def, "allreduce_sum", "not used: max-autotune only", "fast_path_policy");
  }
  FastPathProofs forced;
  forced.forced = {"allreduce_sum"};
  Applied f = apply_to(kLastAllReduce, parse_fast_paths("allreduce_sum"), forced, {Backend::Cuda, 1});
  EXPECT_EQ(f.status["allreduce_sum"].status, kFastPathUsed);

  // kBlock's all-reduce feeds the residual add and the norm: both match it,
  // the fused one takes it
  const FastPathProofs both = proven({{"allreduce_sum", "bf16,hidden=64,vec=8"},
                                      {"allreduce_residual_rmsnorm", "bf16,hidden=64,vec=8"}});
  Applied r = apply(sel, both, {Backend::Cuda, 2});
  EXPECT_EQ(r.status["allreduce_residual_rmsnorm"].status, kFastPathUsed);
  EXPECT_EQ(r.status["allreduce_sum"].status, "not used: lower priority than allreduce_residual_rmsnorm");
}

// The residual add after the block's last all-reduce joins the exchange
// where allreduce_residual is proven (max-autotune, several ranks, cpu or a
// forced run): the linear before it stays a plain GEMM. On cuda the cost
// model refuses it (measured no faster than the exchange alone and the
// hoist) before any proof is read, and forced it runs. Unproven, the
// exchange alone takes the all-reduce, and where a norm reads the sum the
// fused exchange + norm takes both.
TEST(FastPaths, TheResidualAddJoinsTheLastExchangeWhereProven) {
  const FastPathProofs p = proven({{"allreduce_sum", "bf16,hidden=64,vec=8"},
                                   {"allreduce_residual", "bf16,hidden=64,vec=8"}});
  const FastPathSelection sel = parse_fast_paths("proven");
  FastPathProofs forced = p;
  forced.forced = {"allreduce_residual"};
  for (const auto& [t, proofs] : std::vector<std::pair<FastPathTarget, FastPathProofs>>{
           {FastPathTarget{Backend::Cpu, 2}, p}, {FastPathTarget{Backend::Cpu, 4}, p},
           {FastPathTarget{Backend::Cuda, 2}, forced}}) {
    Applied r = apply_to(kLastAllReduce, sel, proofs, t);
    EXPECT_EQ(r.status["allreduce_residual"].status, kFastPathUsed) << t.world_size;
    EXPECT_EQ(r.status["allreduce_residual"].shape_classes, std::vector<std::string>{"bf16,hidden=64,vec=8"});
    EXPECT_EQ(r.status["allreduce_sum"].status, "not used: lower priority than allreduce_residual");
    ASSERT_EQ(count(r.out, Op::FastPath), 1) << print_graph(r.out);
    EXPECT_EQ(count(r.out, Op::Add), 0) << print_graph(r.out);  // the add is in the fast path
    for (const Node& n : r.out.nodes)
      if (n.op == Op::FastPath) {
        EXPECT_EQ(attr_str_or(n.attrs, "name", ""), "allreduce_residual");
        ASSERT_EQ(n.inputs.size(), 2u);
        EXPECT_EQ(r.out.node(n.inputs[0]).op, Op::Linear);
        EXPECT_EQ(r.out.node(n.inputs[1]).op, Op::Input);  // %x, the residual
        EXPECT_EQ(n.type.shape, (Shape{8, 64}));
      }
  }
  // cuda, proven: the cost model's refusal, the exchange alone and the add
  Applied cuda = apply_to(kLastAllReduce, sel, p, {Backend::Cuda, 2});
  expect_refused_but(cuda, "allreduce_residual", "not used: cost model (measured slower: ", "fast_path_cost_model", 1);
  EXPECT_EQ(cuda.status["allreduce_sum"].status, kFastPathUsed);
  EXPECT_EQ(count(cuda.out, Op::Add), 1) << print_graph(cuda.out);
  // one rank: nothing to exchange; default policy: Inductor's collective
  Applied one = apply_to(kLastAllReduce, sel, p, {Backend::Cpu, 1});
  expect_refused(one, "allreduce_residual", "not used: cost model (one rank: nothing to exchange)",
                 "fast_path_cost_model");
  Applied def = apply_to(kLastAllReduce, sel, p, {Backend::Cuda, 2, FusionPolicy::Default});
  expect_refused(def, "allreduce_residual", "not used: max-autotune only", "fast_path_policy");
  // unproven: the exchange alone takes the all-reduce, the add stays
  Applied alone = apply_to(kLastAllReduce, sel, proven({{"allreduce_sum", "bf16,hidden=64,vec=8"}}), {Backend::Cpu, 2});
  expect_refused_but(alone, "allreduce_residual", kFastPathUnproven, "fast_path_unproven", 1);
  EXPECT_EQ(alone.status["allreduce_sum"].status, kFastPathUsed);
  EXPECT_EQ(count(alone.out, Op::Add), 1) << print_graph(alone.out);
  // a norm reads the sum: the fused exchange + norm outranks it
  FastPathProofs all = p;
  all.shape_classes["allreduce_residual_rmsnorm"].insert("bf16,hidden=64,vec=8");
  Applied normed = apply(sel, all, {Backend::Cpu, 2});
  EXPECT_EQ(normed.status["allreduce_residual_rmsnorm"].status, kFastPathUsed);
  EXPECT_EQ(normed.status["allreduce_residual"].status, "not used: lower priority than allreduce_residual_rmsnorm");
  // the sum read by something else too: not the pattern (the add alone
  // cannot stand for it)
  Applied shared = apply_to(R"(
graph g(%h: bf16[8,64], %w: bf16[64,64], %x: bf16[8,64]) {
  %3 = linear(%h, %w) : bf16[8,64]
  %4 = all_reduce(%3) {reduce_op = "sum"} : bf16[8,64]
  %5 = add(%x, %4) : bf16[8,64]
  return %5, %4
}
)",
                            sel, p, {Backend::Cuda, 2});
  EXPECT_EQ(shared.status["allreduce_residual"].status, kFastPathNotMatched);
  EXPECT_EQ(shared.status["allreduce_sum"].status, kFastPathUsed);
  // the sum added to itself: no residual to take (the site would read what
  // it replaces), for neither exchange + add fast path; the exchange alone
  // still takes the all-reduce
  FastPathProofs all3 = all;
  Applied twice = apply_to(R"(
graph g(%h: bf16[8,64], %w: bf16[64,64], %ln: bf16[64]) {
  %3 = linear(%h, %w) : bf16[8,64]
  %4 = all_reduce(%3) {reduce_op = "sum"} : bf16[8,64]
  %5 = add(%4, %4) : bf16[8,64]
  %6 = rms_norm(%5, %ln) {eps = 1e-06} : bf16[8,64]
  return %5, %6
}
)",
                           sel, all3, {Backend::Cuda, 2});
  EXPECT_EQ(twice.status["allreduce_residual"].status, kFastPathNotMatched);
  EXPECT_EQ(twice.status["allreduce_residual_rmsnorm"].status, kFastPathNotMatched);
  EXPECT_EQ(twice.status["allreduce_sum"].status, kFastPathUsed);
}

// The MLP's SwiGLU: gate and up linears over one h, silu of the gate times
// the up, then the down projection.
const char* kMlp = R"(
graph g(%h: bf16[2,40,128], %wg: bf16[256,128], %wu: bf16[256,128], %wd: bf16[128,256]) {
  %4 = linear(%h, %wg) : bf16[2,40,256]
  %5 = linear(%h, %wu) : bf16[2,40,256]
  %6 = silu(%4) : bf16[2,40,256]
  %7 = mul(%6, %5) : bf16[2,40,256]
  %8 = linear(%7, %wd) : bf16[2,40,128]
  return %8
}
)";
// M = 80 rows: no CTA pairs, a partial last row tile; K = 128: no k tail
const char* const kMlpClass = "bf16,tile=128x128x64,cta_pair=no,m_tail=yes,k_tail=no";

// gate_up_swiglu runs where it pays and the policy allows: max-autotune on
// cuda, with a proof. In the default policy it is "not used" (Inductor has
// no such kernel), on cpu the cost model refuses its reference loop, and
// each refusal is a ledger entry with its own code; forced (ab, prove) it
// runs in any policy.
TEST(FastPaths, GateUpSwigluRunsInMaxAutotuneOnCudaWithAProof) {
  const FastPathSelection sel = parse_fast_paths("proven");
  const FastPathProofs p = proven({{"gate_up_swiglu", kMlpClass}});
  const FastPathTarget cuda_ma{Backend::Cuda, 1, FusionPolicy::MaxAutotune};
  Applied used = apply_to(kMlp, sel, p, cuda_ma);
  EXPECT_EQ(used.status["gate_up_swiglu"].status, kFastPathUsed);
  EXPECT_EQ(used.status["gate_up_swiglu"].shape_classes, std::vector<std::string>{kMlpClass});
  EXPECT_EQ(count(used.out, Op::FastPath), 1);
  EXPECT_EQ(count(used.out, Op::Silu), 0);
  EXPECT_EQ(count(used.out, Op::Linear), 1);  // the down projection
  for (const Node& n : used.out.nodes)
    if (n.op == Op::FastPath) {
      EXPECT_EQ(attr_str_or(n.attrs, "name", ""), "gate_up_swiglu");
      EXPECT_EQ(n.type.str(), "bf16[2,40,256]");
      ASSERT_EQ(n.inputs.size(), 3u);
      EXPECT_EQ(used.out.node(n.inputs[0]).op, Op::Input);
    }

  Applied dflt = apply_to(kMlp, sel, p, {Backend::Cuda, 1, FusionPolicy::Default});
  expect_refused(dflt, "gate_up_swiglu", "not used: max-autotune only", "fast_path_policy");

  Applied cpu = apply_to(kMlp, sel, p, {Backend::Cpu, 1, FusionPolicy::MaxAutotune});
  expect_refused(cpu, "gate_up_swiglu", "not used: cost model (its host kernel", "fast_path_cost_model");

  // no proof at world size 2: blocked, and the gate says so
  Applied w2 = apply_to(kMlp, sel, {}, {Backend::Cuda, 2, FusionPolicy::MaxAutotune});
  EXPECT_EQ(w2.status["gate_up_swiglu"].status, kFastPathUnproven);

  FastPathProofs forced;
  forced.forced = {"gate_up_swiglu"};
  Applied f = apply_to(kMlp, parse_fast_paths("gate_up_swiglu"), forced, {Backend::Cpu, 1, FusionPolicy::Default});
  EXPECT_EQ(f.status["gate_up_swiglu"].status, kFastPathUsed);
}

// The tile width follows the rounds of tiles on 132 SMs: 112 columns where
// 128 leave a last round mostly empty and 112 divide N, else 128 (a tie
// keeps 128). The width is in the fast path's node (the runtime launches by
// it) and in its shape class (a proof of one width does not cover the other).
TEST(FastPaths, GateUpSwigluTileWidthFillsRounds) {
  // M 1024 (CTA pairs: 4 row groups on 66 pairs)
  EXPECT_EQ(swiglu_tile_n(1024, 7168), 112);   // 224 tiles: 4 rounds x 128 = 512; 256: 4 x 112 = 448
  EXPECT_EQ(swiglu_tile_n(1024, 14336), 128);  // 7 x 128 = 896 = 8 x 112: a tie
  EXPECT_EQ(swiglu_tile_n(1024, 8192), 128);   // 112 does not divide 8192
  EXPECT_EQ(swiglu_tile_n(1024, 4096), 128);
  EXPECT_EQ(swiglu_tile_n(4096, 7168), 128);   // 14 rounds x 128 = 1792 = 16 x 112: a tie
  // M 80: single CTAs, one row group on 132 SMs: 56 tiles of 128 or 64 of
  // 112, one round either way, and the narrower round is shorter
  EXPECT_EQ(swiglu_tile_n(80, 7168), 112);

  const std::string wide = R"(
graph g(%h: bf16[1024,256], %wg: bf16[7168,256], %wu: bf16[7168,256]) {
  %3 = linear(%h, %wg) : bf16[1024,7168]
  %4 = linear(%h, %wu) : bf16[1024,7168]
  %5 = silu(%3) : bf16[1024,7168]
  %6 = mul(%5, %4) : bf16[1024,7168]
  return %6
}
)";
  const char* const cls = "bf16,tile=128x112x64,cta_pair=yes,m_tail=no,k_tail=no";
  const FastPathSelection sel = parse_fast_paths("proven");
  Applied used = apply_to(wide, sel, proven({{"gate_up_swiglu", cls}}), {Backend::Cuda, 1, FusionPolicy::MaxAutotune});
  EXPECT_EQ(used.status["gate_up_swiglu"].status, kFastPathUsed);
  EXPECT_EQ(used.status["gate_up_swiglu"].shape_classes, std::vector<std::string>{cls});
  int seen = 0;
  for (const Node& n : used.out.nodes)
    if (n.op == Op::FastPath) {
      EXPECT_EQ(attr_int(n.attrs, "tile_n", n.op), 112);
      ++seen;
    }
  EXPECT_EQ(seen, 1);
  // a proof of the 128-column class does not cover the 112-column tiles
  const char* const cls128 = "bf16,tile=128x128x64,cta_pair=yes,m_tail=no,k_tail=no";
  Applied other =
      apply_to(wide, sel, proven({{"gate_up_swiglu", cls128}}), {Backend::Cuda, 1, FusionPolicy::MaxAutotune});
  // and says so, naming what its proof covers (not "unproven", which says
  // there is no proof here)
  EXPECT_EQ(other.status["gate_up_swiglu"].status,
            std::string(kFastPathOtherShapeClass) + " (its proof covers " + cls128 + ")");
  // and the narrow graph's node carries 128
  Applied narrow =
      apply_to(kMlp, sel, proven({{"gate_up_swiglu", kMlpClass}}), {Backend::Cuda, 1, FusionPolicy::MaxAutotune});
  for (const Node& n : narrow.out.nodes) {
    if (n.op == Op::FastPath) {
      EXPECT_EQ(attr_int(n.attrs, "tile_n", n.op), 128);
    }
  }
}

// causal_attention: a causal SDPA of bf16 q, k, v with head dim 128 becomes
// the kernel's [B, S, H, 128] result and the [B, H, S, 128] view the graph
// reads, in max-autotune on cuda with a proof; refused by the policy and on
// cpu like the other Hopper kernels.
const char* kAttn = R"(
graph g(%q: bf16[2,4,256,128], %k: bf16[2,2,256,128], %v: bf16[2,2,256,128]) {
  %3 = sdpa(%q, %k, %v) : bf16[2,4,256,128]
  %4 = transpose(%3) {dim0 = 1, dim1 = 2} : bf16[2,256,4,128]
  return %4
}
)";
const char* const kAttnClass = "bf16,head_dim=128,tile=128x128,s_tail=no,gqa=yes";

TEST(FastPaths, CausalAttentionRunsInMaxAutotuneOnCudaWithAProof) {
  const FastPathSelection sel = parse_fast_paths("proven");
  const FastPathProofs p = proven({{"causal_attention", kAttnClass}});
  Applied used = apply_to(kAttn, sel, p, {Backend::Cuda, 1, FusionPolicy::MaxAutotune});
  EXPECT_EQ(used.status["causal_attention"].status, kFastPathUsed);
  EXPECT_EQ(used.status["causal_attention"].shape_classes, std::vector<std::string>{kAttnClass});
  EXPECT_EQ(count(used.out, Op::Sdpa), 0);
  ASSERT_EQ(count(used.out, Op::FastPath), 1);
  for (const Node& n : used.out.nodes) {
    if (n.op == Op::FastPath) {
      EXPECT_EQ(attr_str_or(n.attrs, "name", ""), "causal_attention");
      EXPECT_EQ(n.type.str(), "bf16[2,256,4,128]");
      ASSERT_EQ(n.inputs.size(), 3u);
    }
    // the graph's own transpose reads the view that stands for the SDPA
    if (n.op == Op::Transpose && used.out.node(n.inputs[0]).op == Op::Transpose) {
      EXPECT_EQ(used.out.node(used.out.node(n.inputs[0]).inputs[0]).op, Op::FastPath);
    }
  }
  EXPECT_EQ(count(used.out, Op::Transpose), 2);
  const std::string out_type = used.out.node(used.out.outputs[0]).type.str();
  EXPECT_EQ(out_type, "bf16[2,256,4,128]");

  Applied dflt = apply_to(kAttn, sel, p, {Backend::Cuda, 1, FusionPolicy::Default});
  expect_refused(dflt, "causal_attention", "not used: max-autotune only", "fast_path_policy");
  Applied cpu = apply_to(kAttn, sel, p, {Backend::Cpu, 1, FusionPolicy::MaxAutotune});
  expect_refused(cpu, "causal_attention", "not used: cost model (its host kernel", "fast_path_cost_model");
  // a partial last tile is another shape class: this proof does not cover it
  std::string tail = kAttn;
  for (size_t at; (at = tail.find("256")) != std::string::npos;) tail.replace(at, 3, "200");
  Applied t = apply_to(tail, sel, p, {Backend::Cuda, 1, FusionPolicy::MaxAutotune});
  EXPECT_EQ(t.status["causal_attention"].status.rfind(kFastPathOtherShapeClass, 0), 0u) << t.status["causal_attention"].status;
  EXPECT_EQ(t.status["causal_attention"].shape_classes,
            std::vector<std::string>{"bf16,head_dim=128,tile=128x128,s_tail=yes,gqa=yes"});
}

// Not its pattern: attention that is not causal, of another head dim, in
// f32, or with keys of another length (sdpa's scale is always 1 / sqrt(D)).
TEST(FastPaths, CausalAttentionMatchesOnlyItsPattern) {
  auto sites = [](const std::string& text) { return forced_sites("causal_attention", text); };
  auto graph = [](const std::string& q, const std::string& kv, const std::string& attrs, const std::string& out) {
    return "graph g(%q: " + q + ", %k: " + kv + ", %v: " + kv + ") {\n  %3 = sdpa(%q, %k, %v)" + attrs + " : " + out +
           "\n  return %3\n}\n";
  };
  const std::string q = "bf16[1,2,64,128]";
  EXPECT_EQ(sites(graph(q, q, "", q)), 1);
  EXPECT_EQ(sites(graph(q, q, " {causal = 1}", q)), 1);
  EXPECT_EQ(sites(graph(q, q, " {causal = 0}", q)), 0);
  EXPECT_EQ(sites(graph("bf16[1,2,64,64]", "bf16[1,2,64,64]", "", "bf16[1,2,64,64]")), 0);
  EXPECT_EQ(sites(graph("f32[1,2,64,128]", "f32[1,2,64,128]", "", "f32[1,2,64,128]")), 0);
  EXPECT_EQ(sites(graph(q, "bf16[1,2,32,128]", "", q)), 0);
}

// What the pattern does not take: the mul's operands either way round are
// one site; a biased linear, a gate that is not a multiple of 128 wide, a
// silu read by another node, gate and up over different inputs, or a weight
// computed in the graph (the runtime interleaves the weights once) are none.
TEST(FastPaths, GateUpSwigluMatchesOnlyItsPattern) {
  auto sites = [](const std::string& text) { return forced_sites("gate_up_swiglu", text); };
  const std::string head =
      "graph g(%h: bf16[4,128], %h2: bf16[4,128], %wg: bf16[256,128], %wu: bf16[256,128], %b: bf16[256]) {\n";
  EXPECT_EQ(sites(head + "  %1 = linear(%h, %wg) : bf16[4,256]\n  %2 = linear(%h, %wu) : bf16[4,256]\n"
                         "  %3 = silu(%1) : bf16[4,256]\n  %4 = mul(%2, %3) : bf16[4,256]\n  return %4\n}\n"),
            1);
  EXPECT_EQ(sites(head + "  %1 = linear(%h, %wg, %b) : bf16[4,256]\n  %2 = linear(%h, %wu) : bf16[4,256]\n"
                         "  %3 = silu(%1) : bf16[4,256]\n  %4 = mul(%3, %2) : bf16[4,256]\n  return %4\n}\n"),
            0);
  EXPECT_EQ(sites(head + "  %1 = linear(%h, %wg) : bf16[4,256]\n  %2 = linear(%h, %wu) : bf16[4,256]\n"
                         "  %3 = silu(%1) : bf16[4,256]\n  %4 = mul(%3, %2) : bf16[4,256]\n  return %4, %3\n}\n"),
            0);
  EXPECT_EQ(sites(head + "  %1 = linear(%h, %wg) : bf16[4,256]\n  %2 = linear(%h2, %wu) : bf16[4,256]\n"
                         "  %3 = silu(%1) : bf16[4,256]\n  %4 = mul(%3, %2) : bf16[4,256]\n  return %4\n}\n"),
            0);
  EXPECT_EQ(sites(head + "  %0 = neg(%wg) : bf16[256,128]\n  %1 = linear(%h, %0) : bf16[4,256]\n"
                         "  %2 = linear(%h, %wu) : bf16[4,256]\n  %3 = silu(%1) : bf16[4,256]\n"
                         "  %4 = mul(%3, %2) : bf16[4,256]\n  return %4\n}\n"),
            0);
  EXPECT_EQ(sites("graph g(%h: bf16[4,128], %wg: bf16[192,128], %wu: bf16[192,128]) {\n"
                  "  %1 = linear(%h, %wg) : bf16[4,192]\n  %2 = linear(%h, %wu) : bf16[4,192]\n"
                  "  %3 = silu(%1) : bf16[4,192]\n  %4 = mul(%3, %2) : bf16[4,192]\n  return %4\n}\n"),
            0);
}

// The MLP of a llama block at world size 1: the RMSNorm of the residual
// stream, then the SwiGLU over it and the down projection; the norm's input
// is an output too (the residual the down projection adds to).
const char* kNormMlp = R"(
graph g(%x: bf16[2,128,128], %ln: bf16[128], %wg: bf16[256,128], %wu: bf16[256,128], %wd: bf16[128,256]) {
  %5 = rms_norm(%x, %ln) {eps = 1e-05} : bf16[2,128,128]
  %6 = linear(%5, %wg) : bf16[2,128,256]
  %7 = linear(%5, %wu) : bf16[2,128,256]
  %8 = silu(%6) : bf16[2,128,256]
  %9 = mul(%8, %7) : bf16[2,128,256]
  %10 = linear(%9, %wd) : bf16[2,128,128]
  %11 = add(%x, %10) : bf16[2,128,128]
  return %11
}
)";
// M = 256: CTA pairs, no partial tiles
const char* const kNormMlpClass = "bf16,tile=128x128x64,cta_pair=yes,m_tail=no,k_tail=no";

// The norm before the MLP folded into the SwiGLU kernel: one fast_path node
// reads x, gamma and the two weights, the norm's chain is gone (no
// normalized copy is computed), and the plain kernel, which matches the
// same gate/up nodes, is outranked. Same policy and cpu cost-model rules as
// gate_up_swiglu; on cuda the cost model refuses it as measured slower, and
// the plain kernel runs after the generic norm. Forced (ab, prove), it runs.
TEST(FastPaths, RmsnormGateUpSwigluFoldsTheNormIntoTheMlpKernel) {
  const FastPathSelection sel = parse_fast_paths("proven");
  const FastPathProofs p = proven({{"rmsnorm_gate_up_swiglu", kNormMlpClass}, {"gate_up_swiglu", kNormMlpClass}});
  Applied refused = apply_to(kNormMlp, sel, p, {Backend::Cuda, 1, FusionPolicy::MaxAutotune});
  expect_refused_but(refused, "rmsnorm_gate_up_swiglu", "not used: cost model (measured slower: ", "fast_path_cost_model",
                     1);
  EXPECT_EQ(refused.status["gate_up_swiglu"].status, kFastPathUsed);
  EXPECT_EQ(count(refused.out, Op::Rsqrt), 1);  // the generic norm runs before it

  FastPathProofs forced = p;
  forced.forced = {"rmsnorm_gate_up_swiglu"};
  Applied used = apply_to(kNormMlp, sel, forced, {Backend::Cuda, 1, FusionPolicy::MaxAutotune});
  EXPECT_EQ(used.status["rmsnorm_gate_up_swiglu"].status, kFastPathUsed);
  EXPECT_EQ(used.status["gate_up_swiglu"].status, "not used: lower priority than rmsnorm_gate_up_swiglu");
  EXPECT_EQ(std::string(reject_code(entry(used, "gate_up_swiglu")->reason)), "fast_path_lower_priority");
  EXPECT_EQ(count(used.out, Op::FastPath), 1);
  EXPECT_EQ(count(used.out, Op::Rsqrt), 0);
  EXPECT_EQ(count(used.out, Op::Sum), 0);
  EXPECT_EQ(count(used.out, Op::Linear), 1);  // the down projection
  for (const Node& n : used.out.nodes)
    if (n.op == Op::FastPath) {
      EXPECT_EQ(attr_str_or(n.attrs, "name", ""), "rmsnorm_gate_up_swiglu");
      EXPECT_EQ(n.type.str(), "bf16[2,128,256]");
      EXPECT_DOUBLE_EQ(attr_float(n.attrs, "eps", n.op), 1e-05);
      EXPECT_DOUBLE_EQ(attr_float(n.attrs, "divisor", n.op), 128.0);
      ASSERT_EQ(n.inputs.size(), 4u);
      const std::vector<std::string> want = {"bf16[2,128,128]", "bf16[128]", "bf16[256,128]", "bf16[256,128]"};
      for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(used.out.node(n.inputs[i]).op, Op::Input) << i;
        EXPECT_EQ(used.out.node(n.inputs[i]).type.str(), want[i]) << i;
      }
    }

  Applied dflt = apply_to(kNormMlp, sel, p, {Backend::Cuda, 1, FusionPolicy::Default});
  expect_refused(dflt, "rmsnorm_gate_up_swiglu", "not used: max-autotune only", "fast_path_policy");
  Applied cpu = apply_to(kNormMlp, sel, p, {Backend::Cpu, 1, FusionPolicy::MaxAutotune});
  expect_refused(cpu, "rmsnorm_gate_up_swiglu", "not used: cost model (its host kernel", "fast_path_cost_model");

  // a proof for the plain kernel alone: it runs, and the fold reads its
  // cost-model refusal, which is decided before any proof is looked at
  Applied plain = apply_to(kNormMlp, sel, proven({{"gate_up_swiglu", kNormMlpClass}}), {Backend::Cuda, 1,
                                                                                        FusionPolicy::MaxAutotune});
  EXPECT_EQ(plain.status["gate_up_swiglu"].status, kFastPathUsed);
  EXPECT_EQ(plain.status["rmsnorm_gate_up_swiglu"].status.rfind("not used: cost model (measured slower", 0), 0u);
}

// What the fold does not take: a normalized h that something else reads
// too, a norm whose sum of squares is all-reduced (a distributed norm: the
// row scale needs the other ranks' sums), a norm weight computed in the
// graph (folded into the weights once, it must be a parameter), and an MLP
// over a plain input. Forced, so that only the pattern decides.
TEST(FastPaths, RmsnormGateUpSwigluMatchesOnlyItsPattern) {
  auto sites = [](const std::string& text) { return forced_sites("rmsnorm_gate_up_swiglu", text); };
  EXPECT_EQ(sites(kNormMlp), 1);
  std::string shared = kNormMlp;
  shared.replace(shared.find("return %11"), 10, "return %11, %5");
  EXPECT_EQ(sites(shared), 0);
  const std::string mlp =
      "  %6 = linear(%5, %wg) : bf16[4,128]\n  %7 = linear(%5, %wu) : bf16[4,128]\n"
      "  %8 = silu(%6) : bf16[4,128]\n  %9 = mul(%8, %7) : bf16[4,128]\n  return %9\n}\n";
  const std::string head = "graph g(%x: bf16[4,64], %ln: bf16[64], %wg: bf16[128,64], %wu: bf16[128,64]) {\n";
  const std::string chain =
      "  %1 = cast(%x) {to = \"f32\"} : f32[4,64]\n  %2 = mul(%1, %1) : f32[4,64]\n"
      "  %3 = sum(%2) {dims = [-1], keepdim = 1} : f32[4,1]\n";
  const std::string tail =
      "  %20 = full() {value = 64.0} : f32[]\n  %21 = div(%3x, %20) : f32[4,1]\n"
      "  %22 = full() {value = 1e-06} : f32[]\n  %23 = add(%21, %22) : f32[4,1]\n  %24 = rsqrt(%23) : f32[4,1]\n"
      "  %25 = mul(%1, %24) : f32[4,64]\n  %26 = cast(%25) {to = \"bf16\"} : bf16[4,64]\n"
      "  %5 = mul(%26, %ln) : bf16[4,64]\n";
  auto with = [&](const std::string& sum_node, const std::string& sum_id) {
    std::string t = tail;
    t.replace(t.find("%3x"), 3, sum_id);
    return head + chain + sum_node + t + mlp;
  };
  EXPECT_EQ(sites(with("", "%3")), 1);  // the decomposed chain as written out
  EXPECT_EQ(sites(with("  %4 = all_reduce(%3) {reduce_op = \"sum\"} : f32[4,1]\n", "%4")), 0);
  std::string computed = with("", "%3");
  computed.replace(computed.find("%5 = mul(%26, %ln)"), 18, "%5 = mul(%26, %27)");
  computed.replace(computed.find("  %5 = "), 0, "  %27 = neg(%ln) : bf16[64]\n");
  EXPECT_EQ(sites(computed), 0);
  EXPECT_EQ(sites("graph g(%h: bf16[4,64], %wg: bf16[128,64], %wu: bf16[128,64]) {\n  %5 = neg(%h) : bf16[4,64]\n" +
                  mlp),
            0);
}

// At world size 2 the norm before the MLP also ends the O projection's
// all-reduce + residual: the exchange fast path takes it (it saves the
// all-reduce, more than the fold's normalized copy) and the plain SwiGLU
// kernel runs after it.
TEST(FastPaths, TheExchangeFastPathOutranksTheFoldAndThePlainKernelRunsAfterIt) {
  const char* g = R"(
graph g(%p: bf16[2,128,128], %x: bf16[2,128,128], %ln: bf16[128], %wg: bf16[256,128], %wu: bf16[256,128]) {
  %5 = all_reduce(%p) {reduce_op = "sum"} : bf16[2,128,128]
  %6 = add(%x, %5) : bf16[2,128,128]
  %7 = rms_norm(%6, %ln) {eps = 1e-05} : bf16[2,128,128]
  %8 = linear(%7, %wg) : bf16[2,128,256]
  %9 = linear(%7, %wu) : bf16[2,128,256]
  %10 = silu(%8) : bf16[2,128,256]
  %11 = mul(%10, %9) : bf16[2,128,256]
  return %6, %11
}
)";
  const FastPathProofs p = proven({{"allreduce_residual_rmsnorm", "bf16,hidden=128,vec=8"},
                                   {"rmsnorm_gate_up_swiglu", kNormMlpClass},
                                   {"gate_up_swiglu", kNormMlpClass}});
  // the fold eligible (forced: on cuda the cost model refuses it first)
  FastPathProofs fold = p;
  fold.forced = {"rmsnorm_gate_up_swiglu"};
  Applied r = apply_to(g, parse_fast_paths("proven"), fold, {Backend::Cuda, 2, FusionPolicy::MaxAutotune});
  EXPECT_EQ(r.status["allreduce_residual_rmsnorm"].status, kFastPathUsed);
  EXPECT_EQ(r.status["rmsnorm_gate_up_swiglu"].status, "not used: lower priority than allreduce_residual_rmsnorm");
  EXPECT_EQ(r.status["gate_up_swiglu"].status, kFastPathUsed);
  EXPECT_EQ(count(r.out, Op::FastPath), 2);
  EXPECT_EQ(count(r.out, Op::AllReduce), 0);
  // on one rank the cost model refuses the exchange fast path, and the
  // fold takes the norm
  Applied one = apply_to(g, parse_fast_paths("proven"), fold, {Backend::Cuda, 1, FusionPolicy::MaxAutotune});
  EXPECT_EQ(one.status["allreduce_residual_rmsnorm"].status.rfind("not used: cost model", 0), 0u);
  EXPECT_EQ(one.status["rmsnorm_gate_up_swiglu"].status, kFastPathUsed);
  EXPECT_EQ(one.status["gate_up_swiglu"].status, "not used: lower priority than rmsnorm_gate_up_swiglu");
}

// Sites that cannot be moved as a whole are not sites.
TEST(FastPaths, ASiteReadingAnInputThatACopyWritesIsNotMatched) {
  const char* g = R"(
graph g(%p: bf16[8,64], %x: bf16[8,64], %z: bf16[8,64], %ln: bf16[64]) {
  %4 = all_reduce(%p) {reduce_op = "sum"} : bf16[8,64]
  %5 = copy_(%x, %z) : bf16[8,64]
  %6 = add(%x, %4) : bf16[8,64]
  %7 = rms_norm(%6, %ln) {eps = 1e-06} : bf16[8,64]
  return %6, %7
}
)";
  CompileOptions o;
  o.fast_paths = parse_fast_paths("all");
  o.proofs.forced = {"allreduce_residual_rmsnorm"};
  CompiledProgram c = compile(parse_graph(g, "t.fg"), o);
  EXPECT_EQ(c.fast_paths.at("allreduce_residual_rmsnorm").status, kFastPathNotMatched);
}

TEST(FastPaths, ANegativeSliceStartIsTheColumnItCountsTo) {
  std::string text = kBlock;
  // k as the last 64 of the first 128 columns counted from the end of 192
  const std::string from = "%19 = slice(%qkv) {dim = -1, end = 128, start = 64, step = 1}";
  text.replace(text.find(from), from.size(), "%19 = slice(%qkv) {dim = -1, end = -64, start = -128, step = 1}");
  CompileOptions o;
  o.fast_paths = parse_fast_paths("qkv_rmsnorm_tp");
  o.proofs.forced = {"qkv_rmsnorm_tp"};
  CompiledProgram c = compile(parse_graph(text, "t.fg"), o);
  ASSERT_EQ(c.fast_paths.at("qkv_rmsnorm_tp").status, kFastPathUsed);
  for (const auto& n : c.decomposed.nodes)
    if (n.op == Op::FastPath) {
      EXPECT_EQ(attr_int(n.attrs, "k_start", n.op), 64);
    }
}

}  // namespace
}  // namespace fg
