// Whether cuBLASLt has a faster kernel for the TP blocks' GEMMs than the
// ones its heuristic lists, at the power cap the forward runs at (issue 17:
// at world size 1 fusegate's forward is bound by these GEMMs, and 0.90 of
// torch's time needs them faster than the heuristic's choice).
//
// For each shape: the heuristic's top 32 (r[0] the top-1); then the space
// around them: every algorithm id the heuristic named, each with every
// tile and stage count it lists as capable, CTA swizzle off/on where it
// can, every custom option, the cluster shapes the heuristic used plus
// auto, 1x1, 2x1, 1x2, 2x2, 4x1 and 1x4, and the inner shapes the
// heuristic used; split-K 1. cublasLtMatmulAlgoCheck drops what cannot run.
// The device is held at its sustained state (the top-1 back to back for
// 1500 ms), then every configuration is screened (5 calls between two
// events, the top-1 timed again every 16 configurations as the reference
// of the ones around it), then the 8 best of the screen and the 4 best
// heuristic candidates are timed against the top-1 in 7 rotating rounds of
// 10 calls (median of rounds). Only the rounds are figures: on an H100 the
// screen's ratios (on stderr) came out 0.57-1.14 where the rounds put the
// same kernels at 0.79-1.84 of the top-1 (the top-1 itself screened at
// 0.62-0.99 of its own reference), so the screen may have dropped a kernel
// that the rounds would have found faster. What it found is in
// bench/RESULTS.md, "Issue 17, sixteenth step": timed alone, not in the
// forward, where the same choices lost.
//   nvcc -O2 -std=c++17 -arch=sm_90a -o lt_space bench/lt_space.cu -lcublasLt
//   ./lt_space [filter]        # shapes whose name contains filter
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "lt_bench.cuh"

namespace {

struct Shape { const char* what; long m, n, k; };

struct Config {
  int id = 0, tile = 0, stages = 0, swizzle = 0, custom = 0, cluster = 0, inner = 0, splitk = 1, reduction = 0;
  bool operator<(const Config& o) const {
    return std::tie(id, tile, stages, swizzle, custom, cluster, inner, splitk, reduction) <
           std::tie(o.id, o.tile, o.stages, o.swizzle, o.custom, o.cluster, o.inner, o.splitk, o.reduction);
  }
};

template <typename T>
T get_cfg(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T v{};
  size_t w = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&a, attr, &v, sizeof(v), &w);
  return v;
}

Config config_of(const cublasLtMatmulAlgo_t& a) {
  Config c;
  c.id = get_cfg<int>(a, CUBLASLT_ALGO_CONFIG_ID);
  c.tile = static_cast<int>(get_cfg<uint32_t>(a, CUBLASLT_ALGO_CONFIG_TILE_ID));
  c.stages = static_cast<int>(get_cfg<uint32_t>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID));
  c.swizzle = static_cast<int>(get_cfg<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING));
  c.custom = static_cast<int>(get_cfg<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION));
  c.cluster = static_cast<int>(get_cfg<uint16_t>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
  c.inner = static_cast<int>(get_cfg<uint16_t>(a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID));
  c.splitk = get_cfg<int32_t>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  c.reduction = static_cast<int>(get_cfg<uint32_t>(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME));
  return c;
}

std::string name(const Config& c) {
  char b[160];
  std::snprintf(b, sizeof(b), "id %d tile %d stages %d swz %d opt %d cluster %d inner %d splitk %d red %d", c.id,
                c.tile, c.stages, c.swizzle, c.custom, c.cluster, c.inner, c.splitk, c.reduction);
  return b;
}

bool make_algo(cublasLtHandle_t h, const Config& c, cublasLtMatmulAlgo_t* a) {
  if (cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                             c.id, a) != CUBLAS_STATUS_SUCCESS)
    return false;
  uint32_t tile = c.tile, stages = c.stages, swz = c.swizzle, custom = c.custom;
  int32_t splitk = 1;
  uint16_t cluster = static_cast<uint16_t>(c.cluster), inner = static_cast<uint16_t>(c.inner);
  return cublasLtMatmulAlgoConfigSetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile)) == 0 &&
         cublasLtMatmulAlgoConfigSetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages)) == 0 &&
         cublasLtMatmulAlgoConfigSetAttribute(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof(swz)) == 0 &&
         cublasLtMatmulAlgoConfigSetAttribute(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof(custom)) == 0 &&
         cublasLtMatmulAlgoConfigSetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof(splitk)) == 0 &&
         cublasLtMatmulAlgoConfigSetAttribute(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof(cluster)) == 0 &&
         cublasLtMatmulAlgoConfigSetAttribute(a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof(inner)) == 0;
}

template <typename T>
std::vector<T> cap_list(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoCapAttributes_t attr) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&a, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0) return {};
  std::vector<T> v(bytes / sizeof(T));
  size_t w = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&a, attr, v.data(), bytes, &w) != CUBLAS_STATUS_SUCCESS) return {};
  return v;
}

template <typename T>
T cap_one(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoCapAttributes_t attr) {
  T v{};
  size_t w = 0;
  cublasLtMatmulAlgoCapGetAttribute(&a, attr, &v, sizeof(v), &w);
  return v;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string filter = argc > 1 ? argv[1] : "";
  const std::vector<Shape> shapes = {
      {"h2048 qkv", 1024, 6144, 2048},    {"h2048 o", 1024, 2048, 2048},       {"h2048 gate", 1024, 8192, 2048},
      {"h2048 down", 1024, 2048, 8192},   {"h4096 qkv", 1024, 12288, 4096},    {"h4096 o", 1024, 4096, 4096},
      {"h4096 gate", 1024, 14336, 4096},  {"h4096 down", 1024, 4096, 14336},   {"seq2048 qkv", 4096, 6144, 2048},
      {"seq2048 gate", 4096, 8192, 2048}, {"seq2048 down", 4096, 2048, 8192}, {"w2 h4096 qkv", 1024, 6144, 4096},
      {"w2 h4096 gate", 1024, 7168, 4096}, {"w2 h4096 down", 1024, 4096, 7168}};
  cublasLtHandle_t h;
  CK(cublasLtCreate(&h));
  const size_t ws_bytes = 32u << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::printf("| shape | configs (heuristic) | top-1 us | best us | best / top-1 | best config | its heuristic rank |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  for (const Shape& s : shapes) {
    if (!filter.empty() && std::string(s.what).find(filter) == std::string::npos) continue;
    void *a, *w, *d;
    CK(cudaMalloc(&a, s.m * s.k * 2));
    CK(cudaMalloc(&w, s.n * s.k * 2));
    CK(cudaMalloc(&d, s.m * s.n * 2));
    fill<<<1024, 256>>>(static_cast<__nv_bfloat16*>(a), s.m * s.k, 1);
    fill<<<1024, 256>>>(static_cast<__nv_bfloat16*>(w), s.n * s.k, 2);
    LtGemmPlan plan(h, s.m, s.n, s.k, ws_bytes, 32);
    if (plan.found < 1) {
      std::printf("| %s %ldx%ldx%ld | cuBLASLt's heuristic has no algorithm | | | | | |\n", s.what, s.m, s.n, s.k);
      cudaFree(a);
      cudaFree(w);
      cudaFree(d);
      continue;
    }
    const float alpha = 1, beta = 0;
    auto run = [&](const cublasLtMatmulAlgo_t& al) {
      return cublasLtMatmul(h, plan.op, &alpha, w, plan.lw, a, plan.la, &beta, d, plan.ld, d, plan.ld, &al, ws,
                            ws_bytes, 0) == CUBLAS_STATUS_SUCCESS;
    };
    auto time_us = [&](const cublasLtMatmulAlgo_t& al, int n) {
      cudaEventRecord(e0);
      for (int i = 0; i < n; ++i) run(al);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      return 1000.0 * ms / n;
    };
    // the space
    std::map<Config, int> heur_rank;  // config -> rank in the heuristic's list
    std::set<int> ids;
    std::map<int, std::set<int>> clusters, inners;
    for (int i = 0; i < plan.found; ++i) {
      const Config c = config_of(plan.r[i].algo);
      heur_rank.emplace(c, i);
      ids.insert(c.id);
      clusters[c.id].insert(c.cluster);
      inners[c.id].insert(c.inner);
    }
    std::vector<std::pair<Config, cublasLtMatmulAlgo_t>> space;
    std::set<Config> seen;
    size_t tried = 0;
    for (int id : ids) {
      cublasLtMatmulAlgo_t base;
      if (cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, id,
                                 &base) != CUBLAS_STATUS_SUCCESS)
        continue;
      std::vector<uint32_t> tiles = cap_list<uint32_t>(base, CUBLASLT_ALGO_CAP_TILE_IDS);
      std::vector<uint32_t> stages = cap_list<uint32_t>(base, CUBLASLT_ALGO_CAP_STAGES_IDS);
      if (tiles.empty()) tiles = {0};
      if (stages.empty()) stages = {0};
      const int swz_max = cap_one<int32_t>(base, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) ? 1 : 0;
      const int opt_max = cap_one<int32_t>(base, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX);
      std::set<int> cl = clusters[id];
      for (int x : {0, 2, 3, 5, 6, 4, 8}) cl.insert(x);  // auto, 1x1, 2x1, 1x2, 2x2, 4x1, 1x4
      for (uint32_t t : tiles)
        for (uint32_t st : stages)
          for (int sw = 0; sw <= swz_max; ++sw)
            for (int op = 0; op <= std::min(opt_max, 7); ++op)
              for (int c : cl)
                for (int in : inners[id]) {
                  Config cfg{id, static_cast<int>(t), static_cast<int>(st), sw, op, c, in};
                  if (!seen.insert(cfg).second) continue;
                  ++tried;
                  cublasLtMatmulAlgo_t al;
                  if (!make_algo(h, cfg, &al)) continue;
                  cublasLtMatmulHeuristicResult_t r{};
                  if (cublasLtMatmulAlgoCheck(h, plan.op, plan.lw, plan.la, plan.ld, plan.ld, &al, &r) !=
                          CUBLAS_STATUS_SUCCESS ||
                      r.workspaceSize > ws_bytes)
                    continue;
                  space.emplace_back(cfg, al);
                }
    }
    // the heuristic's own first, as it returned them (space[i] is r[i] for
    // i < found), each dropped from the rest of the space
    std::vector<std::pair<Config, cublasLtMatmulAlgo_t>> listed;
    for (int i = 0; i < plan.found; ++i) listed.emplace_back(config_of(plan.r[i].algo), plan.r[i].algo);
    for (auto& p : space) {
      const bool dup = std::any_of(listed.begin(), listed.begin() + plan.found,
                                   [&](const auto& q) { return !(p.first < q.first) && !(q.first < p.first); });
      if (!dup) listed.push_back(p);
    }
    space.swap(listed);
    const cublasLtMatmulAlgo_t& top1 = plan.r[0].algo;
    // the sustained state
    const double one = time_us(top1, 10);
    const double t0 = now_ms();
    while (now_ms() - t0 < 1500) time_us(top1, std::max(1, static_cast<int>(20000 / std::max(one, 1.0))));
    // screen
    std::vector<double> ratio(space.size(), 1e30);
    double ref = time_us(top1, 5);
    const double screen_t0 = now_ms();
    for (size_t i = 0; i < space.size(); ++i) {
      if (i % 16 == 15) ref = time_us(top1, 5);
      if (!run(space[i].second) || cudaStreamSynchronize(0) != cudaSuccess) {
        cudaGetLastError();
        continue;
      }
      ratio[i] = time_us(space[i].second, 5) / ref;
    }
    const double screen_ms = now_ms() - screen_t0;
    // finalists: the 8 best of the screen and the heuristic's 4 best
    std::vector<size_t> order(space.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return ratio[x] < ratio[y]; });
    std::vector<size_t> fin = {0};
    for (size_t i = 1; i < std::min<size_t>(4, static_cast<size_t>(plan.found)); ++i)
      if (ratio[i] < 1e29) fin.push_back(i);
    for (size_t j = 0; j < order.size() && fin.size() < 12; ++j)
      if (ratio[order[j]] < 1e29 && std::find(fin.begin(), fin.end(), order[j]) == fin.end()) fin.push_back(order[j]);
    std::vector<std::vector<double>> rounds(fin.size());
    for (int round = 0; round < 7; ++round)
      for (size_t j = 0; j < fin.size(); ++j) {
        const size_t f = (j + static_cast<size_t>(round)) % fin.size();
        rounds[f].push_back(time_us(space[fin[f]].second, 10));
      }
    std::vector<double> med(fin.size());
    for (size_t f = 0; f < fin.size(); ++f) {
      std::sort(rounds[f].begin(), rounds[f].end());
      med[f] = rounds[f][rounds[f].size() / 2];
    }
    const size_t best = static_cast<size_t>(std::min_element(med.begin(), med.end()) - med.begin());
    const Config& bc = space[fin[best]].first;
    auto hr = heur_rank.find(bc);
    std::printf("| %s %ldx%ldx%ld | %zu of %zu tried (%d) | %.1f | %.1f | %.3f | %s | %s |\n", s.what, s.m, s.n, s.k,
                space.size(), tried, plan.found, med[0], med[best], med[best] / med[0], name(bc).c_str(),
                hr == heur_rank.end() ? "not listed" : std::to_string(hr->second).c_str());
    std::fprintf(stderr, "%s: screen %.0f ms; finalists (us, screen ratio):\n", s.what, screen_ms);
    for (size_t f = 0; f < fin.size(); ++f) {
      auto r = heur_rank.find(space[fin[f]].first);
      std::fprintf(stderr, "  %7.1f  %.3f  %s%s\n", med[f], ratio[fin[f]], name(space[fin[f]].first).c_str(),
                   r == heur_rank.end() ? "" : (" (heuristic " + std::to_string(r->second) + ")").c_str());
    }
    std::fflush(stdout);
    cudaFree(a);
    cudaFree(w);
    cudaFree(d);
  }
  return 0;
}
