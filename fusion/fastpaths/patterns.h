// What the fast paths' patterns share (fusion/fastpaths/*_patterns.cpp):
// the RMSNorm chain as decompose writes it, the attributes of a fast path's
// node, and each fast path's `match` (FastPathSpec::match), which
// catalog.cpp puts in the catalog. Internal to this folder.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fusion/fastpaths/catalog.h"

namespace fg::patterns {

bool full_value(const Graph& g, int id, double* v);
bool is_last_dim(const Node& n, int64_t dim);

// An RMSNorm over the last dim as decompose (or a repro) writes it, ending
// in the weight multiply:
//   xf = cast(x, f32); ss = sum(xf*xf | pow(xf, 2), [-1], keepdim)
//   [ss = all_reduce(ss)]   (a distributed norm: the dim is sharded)
//   out = cast(xf * rsqrt(ss / N + eps), dtype(x)) * w
struct NormChain {
  int x = -1, xf = -1, weight = -1, out = -1, sum = -1, all_reduce = -1;
  double eps = 0, divisor = 0;
  std::vector<int> nodes;  // the chain without x, the weight and the constants
};


bool match_norm(const Graph& g, int out_id, NormChain* c);
std::vector<NormChain> norm_chains(const Graph& g);
// the widest vector (8, 4, 2, 1 elements) that divides n
int widest_vector(int64_t n);

// the attributes of a fast path's node: name, stage, shape, dtype
Attrs fast_attrs(const std::string& name, const std::string& stage, const Shape& shape, DType dt);
int add_slice(Graph& out, int src, int64_t dim, int64_t start, int64_t end);
std::vector<int> sorted_unique(std::vector<int> v);

// the patterns (qk_patterns.cpp, exchange_patterns.cpp, gemm_patterns.cpp)
std::vector<FastPathSite> match_qkv_local(const Graph& g);
std::vector<FastPathSite> match_qkv_tp(const Graph& g);
std::vector<FastPathSite> match_allreduce_norm(const Graph& g);
std::vector<FastPathSite> match_allreduce_sum(const Graph& g);
std::vector<FastPathSite> match_allreduce_residual(const Graph& g);
std::vector<FastPathSite> match_gate_up_swiglu(const Graph& g);
std::vector<FastPathSite> match_rmsnorm_gate_up_swiglu(const Graph& g);
std::vector<FastPathSite> match_causal_attention(const Graph& g);

}  // namespace fg::patterns
