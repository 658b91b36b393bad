// Fixtures of the compiler's fast-path tests: a block with every exchange
// site, the fast paths applied to a graph, and what the ledger says of them.
#pragma once
#include <gtest/gtest.h>

#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fusion/compile.h"
#include "fusion/fastpaths/catalog.h"
#include "fusion/ir/text.h"
#include "fusion/passes/fast_paths.h"

namespace fg::testing_fast_paths {

// A Wan-style attention prologue at world size 2 (q/k of 64 columns each on
// this rank, normalized over 128), then an O projection whose all-reduce
// feeds a residual add and the next RMSNorm.
inline const char* const kBlock = R"(
graph g(%qkv: bf16[8,192], %qw: bf16[64], %kw: bf16[64], %x: bf16[8,64], %wo: bf16[64,64], %ln: bf16[64]) {
  %6 = slice(%qkv) {dim = -1, end = 64, start = 0, step = 1} : bf16[8,64]
  %7 = cast(%6) {to = "f32"} : f32[8,64]
  %8 = mul(%7, %7) : f32[8,64]
  %9 = sum(%8) {dims = [-1], keepdim = 1} : f32[8,1]
  %10 = all_reduce(%9) {reduce_op = "sum"} : f32[8,1]
  %11 = full() {value = 128.0} : f32[]
  %12 = div(%10, %11) : f32[8,1]
  %13 = full() {value = 1e-06} : f32[]
  %14 = add(%12, %13) : f32[8,1]
  %15 = rsqrt(%14) : f32[8,1]
  %16 = mul(%7, %15) : f32[8,64]
  %17 = cast(%16) {to = "bf16"} : bf16[8,64]
  %18 = mul(%17, %qw) : bf16[8,64]
  %19 = slice(%qkv) {dim = -1, end = 128, start = 64, step = 1} : bf16[8,64]
  %20 = cast(%19) {to = "f32"} : f32[8,64]
  %21 = mul(%20, %20) : f32[8,64]
  %22 = sum(%21) {dims = [-1], keepdim = 1} : f32[8,1]
  %23 = all_reduce(%22) {reduce_op = "sum"} : f32[8,1]
  %24 = full() {value = 128.0} : f32[]
  %25 = div(%23, %24) : f32[8,1]
  %26 = full() {value = 1e-06} : f32[]
  %27 = add(%25, %26) : f32[8,1]
  %28 = rsqrt(%27) : f32[8,1]
  %29 = mul(%20, %28) : f32[8,64]
  %30 = cast(%29) {to = "bf16"} : bf16[8,64]
  %31 = mul(%30, %kw) : bf16[8,64]
  %32 = add(%18, %31) : bf16[8,64]
  %33 = linear(%32, %wo) : bf16[8,64]
  %34 = all_reduce(%33) {reduce_op = "sum"} : bf16[8,64]
  %35 = add(%x, %34) : bf16[8,64]
  %36 = rms_norm(%35, %ln) {eps = 1e-06} : bf16[8,64]
  return %35, %36
}
)";

// the q/k sites' shape class in kBlock
inline const char* const kQk = "bf16,norm_dim=64,divisor=128,sumsq=all_reduced,vec=8";

struct Applied {
  Graph out;
  std::vector<LedgerEntry> ledger;
  std::map<std::string, FastPathStatus> status;
};

// The fast paths applied to `text`, decomposed without them.
inline Applied apply_to(const std::string& text, const FastPathSelection& sel, const FastPathProofs& proofs,
                 const FastPathTarget& target) {
  Applied r;
  CompileOptions o;
  o.fast_paths = parse_fast_paths("none");
  Graph plain = compile(parse_graph(text, "t.fg"), o).decomposed;
  r.out = apply_fast_paths(plain, sel, proofs, &r.ledger, &r.status, target);
  verify(r.out);
  return r;
}

inline Applied apply(const FastPathSelection& sel, const FastPathProofs& proofs, const FastPathTarget& target = {}) {
  return apply_to(kBlock, sel, proofs, target);
}

inline int count(const Graph& g, Op op) {
  int n = 0;
  for (const auto& nd : g.nodes) n += nd.op == op;
  return n;
}

inline const LedgerEntry* entry(const Applied& r, const std::string& name) {
  for (const auto& e : r.ledger)
    if (e.first == "fast_path " + name) return &e;
  return nullptr;
}

// `name` was refused before its proof was looked at: not put in place (the
// graph holds `others` fast_path nodes of other fast paths), its status
// starting with `status`, its ledger entry rejected with `code`
inline void expect_refused_but(Applied& r, const std::string& name, const std::string& status, const char* code, int others) {
  EXPECT_EQ(count(r.out, Op::FastPath), others);
  for (const Node& n : r.out.nodes) {
    if (n.op == Op::FastPath) {
      EXPECT_NE(attr_str_or(n.attrs, "name", ""), name);
    }
  }
  EXPECT_EQ(r.status[name].status.rfind(status, 0), 0u) << r.status[name].status;
  const LedgerEntry* e = entry(r, name);
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->fused);
  EXPECT_EQ(std::string(reject_code(e->reason)), code);
}

inline void expect_refused(Applied& r, const std::string& name, const std::string& status, const char* code) {
  expect_refused_but(r, name, status, code, 0);
}

// The fast_path nodes `name` puts in `text` when forced (no proof, no
// policy or cost model: only its pattern decides), on one cuda rank
inline int forced_sites(const std::string& name, const std::string& text) {
  FastPathProofs forced;
  forced.forced = {name};
  return count(apply_to(text, parse_fast_paths(name), forced, {Backend::Cuda, 1, FusionPolicy::MaxAutotune}).out,
               Op::FastPath);
}

inline FastPathProofs proven(std::initializer_list<std::pair<const char*, const char*>> classes) {
  FastPathProofs p;
  for (const auto& [n, c] : classes) p.shape_classes[n].insert(c);
  return p;
}
}  // namespace fg::testing_fast_paths
