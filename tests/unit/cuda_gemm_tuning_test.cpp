// GEMM algorithm choice by measurement (kernels/cuda/gemm_tuning.h): the
// table's format and its checks need no GPU; measuring, choosing and
// running a choice run where a GPU is present (the device machine runs
// this binary), and are skipped elsewhere.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cuda/cublaslt.h"
#include "kernels/cuda/gemm_tuning.h"

namespace fg {
namespace {

using nlohmann::json;

TEST(GemmTuning, AlgoHexRoundTripsAndRejectsWrongText) {
  LtAlgo a;
  for (int i = 0; i < 8; ++i) a.data[i] = 0x0123456789abcdefull * static_cast<uint64_t>(i + 1);
  const std::string hex = lt_algo_hex(a);
  ASSERT_EQ(hex.size(), 128u);
  LtAlgo b;
  ASSERT_TRUE(lt_algo_from_hex(hex, &b));
  EXPECT_EQ(std::memcmp(a.data, b.data, sizeof(a.data)), 0);
  EXPECT_FALSE(lt_algo_from_hex(hex.substr(1), &b));
  EXPECT_FALSE(lt_algo_from_hex(std::string(127, '0') + "g", &b));
}

TEST(GemmTuning, ShapeKeyNamesTypeSizesBatchAndEpilogue) {
  LtGemm g;
  g.m = 1024; g.n = 6144; g.k = 2048;
  EXPECT_EQ(lt_shape_key(g), "bf16 m1024 n6144 k2048");
  g.batch = 2; g.bias = true; g.gelu_tanh = true; g.addend = true; g.type = LtType::F16;
  EXPECT_EQ(lt_shape_key(g), "f16 m1024 n6144 k2048 batch2 bias gelu addend");
}

TEST(GemmTuning, AMalformedTableIsRefusedNamingTheEntry) {
  EXPECT_NE(gemm_tuning_adopt("{}").find("not a JSON array"), std::string::npos);
  json shape = {{"shape", "bf16 m8 n16 k32"}, {"type", "bf16"}, {"m", 8},        {"n", 16},
                {"k", 32},                    {"batch", 1},     {"bias", false}, {"gelu", false},
                {"addend", false}};
  json wrong = shape;
  wrong["shape"] = "bf16 m8 n16 k64";  // says another shape than its fields
  EXPECT_NE(gemm_tuning_adopt(json::array({wrong}).dump()).find("wrong shape"), std::string::npos);
  json no_m = shape;
  no_m.erase("m");
  EXPECT_NE(gemm_tuning_adopt(json::array({no_m}).dump()).find("wrong shape"), std::string::npos);
  json short_algo = shape;
  short_algo["algo"] = "00ff";
  EXPECT_NE(gemm_tuning_adopt(json::array({short_algo}).dump()).find("no 128-digit algo"), std::string::npos);
}

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// bf16 helpers for the host side of the GPU test
uint16_t to_bf16(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return static_cast<uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t h) {
  uint32_t b = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// A, W, D (bf16) and the workspace for g; "" or what failed.
struct Buffers {
  void *a = nullptr, *w = nullptr, *d = nullptr, *ws = nullptr;
  std::string make(const LtGemm& g) {
    const bool ok = cudaMalloc(&a, static_cast<size_t>(g.m * g.k) * 2) == cudaSuccess &&
                    cudaMalloc(&w, static_cast<size_t>(g.n * g.k) * 2) == cudaSuccess &&
                    cudaMalloc(&d, static_cast<size_t>(g.m * g.n) * 2) == cudaSuccess &&
                    cudaMalloc(&ws, kLtWorkspaceBytes) == cudaSuccess;
    return ok ? "" : "cudaMalloc failed";
  }
  ~Buffers() {
    for (void* p : {a, w, d, ws})
      if (p) cudaFree(p);
  }
};

// Runs g through lt_gemm on fixed inputs and returns D.
std::vector<float> run_gemm(const LtGemm& g, Buffers* b) {
  std::vector<float> out(static_cast<size_t>(g.m * g.n));
  std::vector<uint16_t> d(out.size());
  EXPECT_EQ(lt_gemm(g, b->a, b->w, nullptr, nullptr, 0.f, b->d, b->ws, kLtWorkspaceBytes, nullptr), "");
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d.data(), b->d, d.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = 0; i < d.size(); ++i) out[i] = from_bf16(d[i]);
  return out;
}

TEST(GemmTuning, Rank0MeasuresEveryNotedShapeAndTheChoiceRunsRight) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU here";
  LtGemm g;
  g.m = 512; g.n = 1024; g.k = 768;
  Buffers b;
  ASSERT_EQ(b.make(g), "");
  std::vector<uint16_t> ha(static_cast<size_t>(g.m * g.k)), hw(static_cast<size_t>(g.n * g.k));
  for (size_t i = 0; i < ha.size(); ++i) ha[i] = to_bf16(std::sin(0.37f * static_cast<float>(i)));
  for (size_t i = 0; i < hw.size(); ++i) hw[i] = to_bf16(std::cos(0.11f * static_cast<float>(i)) / 28.f);
  ASSERT_EQ(cudaMemcpy(b.a, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(b.w, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);

  lt_forget_choices();
  gemm_tuning_start();
  const std::vector<float> top1 = run_gemm(g, &b);  // noted as untuned
  ASSERT_EQ(lt_untuned().size(), 1u);
  json table = json::parse(gemm_tuning_choose("[]"));
  ASSERT_EQ(table.size(), 1u);
  const json& e = table[0];
  EXPECT_EQ(e["shape"], lt_shape_key(g));
  EXPECT_EQ(e["source"], "measured") << e.dump();
  EXPECT_GE(e["candidates"].get<int>(), 1);
  EXPECT_GT(e["us"].get<double>(), 0);
  EXPECT_LE(e["us"].get<double>(), e["top1_us"].get<double>());
  EXPECT_FALSE(e["config"].get<std::string>().empty());
  ASSERT_EQ(gemm_tuning_adopt(table.dump()), "");
  EXPECT_TRUE(lt_untuned().empty());
  const std::vector<float> tuned = run_gemm(g, &b);
  double worst = 0;
  for (size_t i = 0; i < top1.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(tuned[i]) - top1[i]) / (1.0 + std::fabs(top1[i])));
  EXPECT_LT(worst, 2e-2);  // another algorithm, the same GEMM to bf16 rounding
  json rec = json::parse(gemm_tuning_record());
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0]["fallbacks"], 0);

  // a known choice (the golden's) is taken as it is, not measured again
  lt_forget_choices();
  gemm_tuning_start();
  run_gemm(g, &b);
  json known = table;
  known[0]["source"] = "golden";
  known[0]["forward"] = {{"kept", "choice"}};  // checked in its forward
  json again = json::parse(gemm_tuning_choose(known.dump()));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0]["source"], "golden");
  EXPECT_EQ(again[0]["algo"], table[0]["algo"]);

  // a known choice this cuBLASLt refuses is measured anew, saying why
  lt_forget_choices();
  gemm_tuning_start();
  run_gemm(g, &b);
  known[0]["algo"] = std::string(128, '0');
  json fresh = json::parse(gemm_tuning_choose(known.dump()));
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0]["source"], "measured");
  EXPECT_NE(fresh[0].value("why", "").find("no longer runs"), std::string::npos) << fresh[0].dump();
  // a known choice other than the top-1 without its check in the forward is
  // measured again
  lt_forget_choices();
  gemm_tuning_start();
  run_gemm(g, &b);
  json unchecked = table;
  unchecked[0]["choice"] = 1;
  unchecked[0].erase("forward");
  json remeasured = json::parse(gemm_tuning_choose(unchecked.dump()));
  ASSERT_EQ(remeasured.size(), 1u);
  EXPECT_EQ(remeasured[0]["source"], "measured");
  EXPECT_NE(remeasured[0].value("why", "").find("without its check in the forward"), std::string::npos)
      << remeasured[0].dump();
  lt_set_tuning(false);
  lt_forget_choices();
}

// The check in the forward: a choice other than the top-1 is pending until
// settled; settling for the top-1 makes the entry name the top-1 (with what
// was measured) and pins it, settling for the choice keeps and pins the
// choice; trying either pins that one; the settled entry is pending no more.
// The table holds two different candidates, cuBLASLt's first and second.
TEST(GemmTuning, ChoicesAreSettledByTheirCheckInTheForward) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU here";
  LtGemm g;
  g.m = 256; g.n = 512; g.k = 384;
  Buffers b;
  ASSERT_EQ(b.make(g), "");
  ASSERT_EQ(cudaMemset(b.a, 0, static_cast<size_t>(g.m * g.k) * 2), cudaSuccess);
  ASSERT_EQ(cudaMemset(b.w, 0, static_cast<size_t>(g.n * g.k) * 2), cudaSuccess);
  std::vector<LtAlgo> cands;
  ASSERT_EQ(lt_candidates(g, 4, &cands), "");
  if (cands.size() < 2) GTEST_SKIP() << "cuBLASLt offers one candidate for this GEMM here";
  const std::string top1 = lt_algo_hex(cands[0]), second = lt_algo_hex(cands[1]);
  ASSERT_NE(top1, second);
  lt_forget_choices();
  gemm_tuning_start();
  run_gemm(g, &b);
  json table = json::parse(gemm_tuning_choose("[]"));
  ASSERT_EQ(table.size(), 1u);
  ASSERT_TRUE(table[0].contains("top1_algo")) << table[0].dump();
  EXPECT_EQ(table[0]["top1_algo"], top1);  // the measured entry names cuBLASLt's top-1
  auto pinned = [&] {
    LtAlgo a;
    return lt_chosen(g, &a) ? lt_algo_hex(a) : std::string("none");
  };
  for (bool keep : {false, true}) {
    json t = table;
    t[0]["algo"] = second;  // as if the second candidate had won alone
    t[0]["top1_algo"] = top1;
    t[0]["choice"] = 1;
    t[0].erase("forward");
    lt_forget_choices();
    gemm_tuning_start();
    ASSERT_EQ(gemm_tuning_adopt(t.dump()), "");
    EXPECT_EQ(pinned(), second);
    ASSERT_EQ(gemm_tuning_unchecked(true), std::vector<std::string>{lt_shape_key(g)});
    EXPECT_EQ(gemm_tuning_try(lt_shape_key(g), false), "");
    EXPECT_EQ(pinned(), top1);
    EXPECT_EQ(gemm_tuning_try(lt_shape_key(g), true), "");
    EXPECT_EQ(pinned(), second);
    EXPECT_NE(gemm_tuning_try("bf16 m1 n1 k1", true), "");
    ASSERT_EQ(gemm_tuning_settle(lt_shape_key(g), keep, 0.21, 0.2, 0, 4, "test", false), "");
    EXPECT_EQ(pinned(), keep ? second : top1);
    EXPECT_TRUE(gemm_tuning_unchecked(false).empty());
    // a choice kept with host launches is checked again where CUDA graphs
    // replay, and kept there too it is settled for both; the top-1 is never
    // checked
    EXPECT_EQ(gemm_tuning_unchecked(true),
              keep ? std::vector<std::string>{lt_shape_key(g)} : std::vector<std::string>{});
    if (keep) {
      ASSERT_EQ(gemm_tuning_settle(lt_shape_key(g), true, 0.21, 0.2, 4, 4, "test", true), "");
      EXPECT_TRUE(gemm_tuning_unchecked(true).empty());
      EXPECT_TRUE(gemm_tuning_unchecked(false).empty());
      EXPECT_EQ(json::parse(gemm_tuning_record())[0]["forward"]["checked"], json({"graph", "host"}));
    }
    const json rec = json::parse(gemm_tuning_record());
    ASSERT_EQ(rec.size(), 1u);
    const json& e = rec[0];
    ASSERT_TRUE(e.contains("forward")) << e.dump();
    EXPECT_EQ(e["forward"]["kept"], keep ? "choice" : "top-1");
    EXPECT_EQ(e["forward"]["choice"], 1);
    EXPECT_DOUBLE_EQ(e["forward"]["choice_ms"].get<double>(), 0.21);
    EXPECT_DOUBLE_EQ(e["forward"]["top1_ms"].get<double>(), 0.2);
    EXPECT_EQ(e["choice"], keep ? 1 : 0);
    EXPECT_EQ(e["algo"], keep ? second : top1);
    run_gemm(g, &b);  // runs the pinned one: nothing untuned
    EXPECT_TRUE(lt_untuned().empty());
    EXPECT_EQ(json::parse(gemm_tuning_table()).size(), 1u);
  }
  // a top-1 this cuBLASLt refuses fails at adopt, before any rank times a forward
  json bad = table;
  bad[0]["top1_algo"] = std::string(128, '0');
  lt_forget_choices();
  gemm_tuning_start();
  EXPECT_NE(gemm_tuning_adopt(bad.dump()).find("top-1"), std::string::npos);
  lt_set_tuning(false);
  lt_forget_choices();
}

}  // namespace
}  // namespace fg
