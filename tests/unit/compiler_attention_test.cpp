// Which kernel runs an attention on cuda (PyTorch's choice on an H100/H200,
// passes/attention.h), and what the math form and the padded flash call
// compute: the same values as the library call, in the fp64 reference.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "fusion/ir/text.h"
#include "fusion/passes/attention.h"
#include "fusion/passes/decompose.h"

namespace fg {
namespace {

// sdpa(q, k, v) of the types given, k and v alike, its result returned
Graph attention_graph(const std::string& q, const std::string& kv, const std::string& attrs = "") {
  const std::string text = "graph g(%q: " + q + ", %k: " + kv + ", %v: " + kv + ") {\n  %a = sdpa(%q, %k, %v) " +
                           attrs + " : " + q + "\n  return %a\n}\n";
  return parse_graph(text, "attention.fg");
}

AttentionKernel kernel_for(const std::string& q, const std::string& kv, const std::string& attrs = "") {
  const Graph g = attention_graph(q, kv, attrs);
  return choose_attention_kernel(g, g.node(g.outputs[0]));
}

TEST(Attention, KernelChosenAsPyTorchChoosesOnHopper) {
  // cuDNN first: half precision, head dims a multiple of 8, more than one key
  EXPECT_EQ(kernel_for("bf16[2,8,64,128]", "bf16[2,8,64,128]"), AttentionKernel::CuDnn);
  EXPECT_EQ(kernel_for("f16[1,2,16,8]", "f16[1,2,4,8]"), AttentionKernel::CuDnn);
  // one key: not cuDNN; flash then needs as many queries as keys when causal
  EXPECT_EQ(kernel_for("bf16[1,2,1,64]", "bf16[1,2,1,64]"), AttentionKernel::Flash);
  EXPECT_EQ(kernel_for("bf16[1,2,4,64]", "bf16[1,2,1,64]"), AttentionKernel::MemEfficient);
  // a head dim not a multiple of 8: flash (padded) when square or not causal
  EXPECT_EQ(kernel_for("bf16[1,3,8,3]", "bf16[1,3,8,3]"), AttentionKernel::Flash);
  EXPECT_EQ(kernel_for("bf16[1,3,8,3]", "bf16[1,3,5,3]", "{causal = 0}"), AttentionKernel::Flash);
  EXPECT_EQ(kernel_for("bf16[1,3,8,3]", "bf16[1,3,5,3]"), AttentionKernel::Math);
  // f32: memory-efficient at a head dim that is a multiple of 4, else math
  EXPECT_EQ(kernel_for("f32[1,2,9,32]", "f32[1,2,8,32]"), AttentionKernel::MemEfficient);
  EXPECT_EQ(kernel_for("f32[1,3,32,63]", "f32[1,3,4,63]"), AttentionKernel::Math);
  // head dims past 256
  EXPECT_EQ(kernel_for("bf16[1,1,8,264]", "bf16[1,1,8,264]"), AttentionKernel::MemEfficient);
  EXPECT_EQ(kernel_for("bf16[1,1,8,260]", "bf16[1,1,8,260]"), AttentionKernel::Math);
}

int count(const Graph& g, Op op) {
  int n = 0;
  for (const Node& x : g.nodes) n += x.op == op;
  return n;
}

// The graph after the pass, verified, with the one ledger entry it made
Graph rewritten(const Graph& g, Reject expected) {
  std::vector<LedgerEntry> ledger;
  Graph r = lower_attention_choices(g, &ledger);
  verify(r);
  EXPECT_EQ(ledger.size(), 1u);
  if (!ledger.empty()) {
    EXPECT_EQ(ledger[0].reason, expected);
    EXPECT_TRUE(ledger[0].fused);  // applied, as the ledger's other rewrites
  }
  return r;
}

TEST(Attention, MathFormIsTwoGemmsAroundASafeSoftmax) {
  const Graph m = rewritten(attention_graph("bf16[1,4,8,3]", "bf16[1,2,5,3]"), Reject::AttentionMathForm);
  EXPECT_EQ(count(m, Op::Sdpa), 0);
  EXPECT_EQ(count(m, Op::Matmul), 2);
  EXPECT_EQ(count(m, Op::Softmax), 1);
  // grouped-query: each of the 2 k/v heads repeated for its 2 query heads
  EXPECT_EQ(count(m, Op::Expand), 2);
  EXPECT_EQ(m.node(m.outputs[0]).type.dtype, DType::BF16);
  EXPECT_EQ(m.node(m.outputs[0]).type.shape, (Shape{1, 4, 8, 3}));
  // a fused kernel takes the square one as it is
  const Graph f = attention_graph("bf16[1,2,8,16]", "bf16[1,2,8,16]");
  std::vector<LedgerEntry> ledger;
  EXPECT_EQ(count(lower_attention_choices(f, &ledger), Op::Sdpa), 1);
  EXPECT_TRUE(ledger.empty());
}

TEST(Attention, PaddedFlashKeepsTheScaleOfItsHeadDim) {
  const Graph p = rewritten(attention_graph("f16[1,2,8,5]", "f16[1,2,8,5]"), Reject::AttentionHeadDimPadded);
  EXPECT_EQ(count(p, Op::Pad), 3);
  for (const Node& n : p.nodes)
    if (n.op == Op::Sdpa) {
      EXPECT_EQ(n.type.shape, (Shape{1, 2, 8, 8}));
      EXPECT_DOUBLE_EQ(attr_float_or(n.attrs, "scale", 0.0), 1.0 / std::sqrt(5.0));
    }
  EXPECT_EQ(p.node(p.outputs[0]).type.shape, (Shape{1, 2, 8, 5}));
  // applied once: the padded call (its scale given) is left as it is
  std::vector<LedgerEntry> ledger;
  lower_attention_choices(p, &ledger);
  EXPECT_TRUE(ledger.empty());
}

}  // namespace
}  // namespace fg
