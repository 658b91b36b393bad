// Fixtures of the generated-kernel tests: a graph run op by op through
// LibTorch (mode A) and compiled (mode C) on the test backend
// (FUSEGATE_TEST_BACKEND: cpu, or cuda on a GPU machine), and the two
// compared.
#pragma once
#include <gtest/gtest.h>

#include <ATen/Context.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fusion/ir/text.h"
#include "kernels/cpu/aten_ops.h"
#include "kernels/cpu/runtime.h"
#include "repros/registry.h"

namespace fg::testing_codegen {


struct Result {
  std::vector<at::Tensor> outs;
  std::vector<LaunchRecord> launches;
  int graphs = 0;
  int recompiles = 0;
};

inline std::string test_backend() {
  const char* b = std::getenv("FUSEGATE_TEST_BACKEND");
  return b && *b ? b : "cpu";
}

// Inputs are copied to the backend's device, into fresh storage; with
// `offset` elements in front of each, so that no input starts 16-byte aligned.
inline Result run(const std::string& text, Mode mode, const std::map<std::string, at::Tensor>& inputs,
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

inline std::map<std::string, at::Tensor> random_inputs(const std::string& text) {
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

inline Result expect_same(const std::string& text, double rtol = 1e-5, double atol = 1e-5,
                   FusionPolicy policy = FusionPolicy::Default, int64_t offset = 0) {
  auto in = random_inputs(text);
  Result a = run(text, Mode::Eager, in);
  Result c = run(text, Mode::Compiled, in, policy, offset);
  EXPECT_EQ(a.outs.size(), c.outs.size());
  EXPECT_FALSE(c.outs.empty());
  for (size_t i = 0; i < std::min(a.outs.size(), c.outs.size()); ++i) {
    EXPECT_EQ(a.outs[i].sizes(), c.outs[i].sizes());
    if (a.outs[i].sizes() != c.outs[i].sizes()) continue;
    double err = a.outs[i].to(at::kDouble).sub(c.outs[i].to(at::kDouble)).abs().max().item<double>();
    EXPECT_TRUE(a.outs[i].to(at::kDouble).allclose(c.outs[i].to(at::kDouble), rtol, atol))
        << "output " << i << " max abs error " << err << "\n" << text;
  }
  EXPECT_EQ(c.graphs, 1);
  return c;
}

inline int count_kind(const Result& r, const std::string& kind) {
  int n = 0;
  for (const auto& l : r.launches) n += l.kind == kind;
  return n;
}

}  // namespace fg::testing_codegen
