// fusegate fuzz: one graph judged, eager against each fusion policy, on
// every rank of a job (harness/tools/fuzz.h: fuzz_check).
#include "harness/tools/fuzz.h"
#include "harness/tools/fuzz_parts.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "fusion/errors.h"
#include "fusion/fault.h"
#include "fusion/ir/text.h"
#include "fusion/passes/schedule.h"
#include "harness/run/digest.h"
#include "harness/run/forward.h"
#include "harness/tools/fuzz_gen.h"
#include "harness/record/files.h"
#include "harness/record/json_read.h"
#include "harness/run/nodes.h"
#include "harness/run/run.h"
#include "kernels/collectives/collectives.h"
#include "repros/registry.h"

namespace fg {

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }


// This rank's part of fuzz_check: nullopt where eager refused the graph;
// `digests` gets every output's exact digest (eager, then each policy's),
// which the ranks of a job compare.
// The most terms any one value of `g` sums: a reduction's reduced
// elements, a GEMM's K, attention's keys and head dim, an all-reduce's
// ranks (1: nothing sums). The rounding error of a sum scales with its
// terms' magnitude, not its result's, which cancellation can make small.
int64_t longest_sum(const Graph& g, int world) {
  int64_t most = 1;
  for (const Node& n : g.nodes) {
    if (n.inputs.empty()) continue;
    const Shape& in = g.node(n.inputs[0]).type.shape;
    int64_t terms = 1;
    switch (n.op) {
      case Op::Sum: case Op::Mean: case Op::Var:
        terms = numel(in) / std::max<int64_t>(1, numel(n.type.shape));
        break;
      case Op::Softmax: case Op::LogSoftmax: case Op::RmsNorm: case Op::LayerNorm: case Op::Linear:
      case Op::Matmul:
        terms = in.empty() ? 1 : in.back();
        break;
      case Op::Cumsum:
        terms = in.empty() ? 1 : in[static_cast<size_t>(norm_dim(attr_int(n.attrs, "dim", n.op), in.size(), n.op))];
        break;
      case Op::Sdpa:
        if (n.inputs.size() > 1 && in.size() >= 2)
          terms = std::max(in.back(), g.node(n.inputs[1]).type.shape.end()[-2]);
        break;
      case Op::AllReduce: case Op::ReduceScatter:
        terms = world;
        break;
      case Op::ScatterAdd: case Op::IndexAdd: {
        // every added element may land on one place, after self's
        const Shape& src = g.node(n.inputs[2]).type.shape;
        terms = 1 + (src.empty() ? 1 : src[static_cast<size_t>(norm_dim(attr_int(n.attrs, "dim", n.op), src.size(), n.op))]);
        break;
      }
      default:
        break;
    }
    most = std::max(most, terms);
  }
  return most;
}

std::optional<FuzzFinding> local_check(const Graph& g, const std::string& name, const FuzzOptions& o, FuzzRank& fr,
                                       std::string* eager_error, std::vector<std::string>* digests) {
  Repro r = graph_repro(g, name, "fuzz graph", name + ".fg");
  std::map<std::string, at::Tensor> inputs;
  std::set<std::string> replicated;  // inputs the same on every rank: all but those a layout shards
  ForwardResult eager, fp64, noisy;
  try {
    AtenExecutor ex(fr.coll, fr.rank, fr.world, FusionPolicy::Default, false, o.backend);
    for (const auto& s : r.inputs(fr.world)) {
      inputs[s.name] = make_input(r.name, s, fr.rank, fr.world).to(ex.device());
      if (s.shard.replicated()) replicated.insert(s.name);
    }
    eager = forward(r, Mode::Eager, ex, inputs, false);
    AtenExecutor ref(fr.coll, fr.rank, fr.world, FusionPolicy::Default, true, o.backend);
    fp64 = forward(r, Mode::Eager, ref, inputs, true);
    AtenExecutor rounded(fr.coll, fr.rank, fr.world, FusionPolicy::Default, true, o.backend);
    rounded.set_rounding_noise(true);
    noisy = forward(r, Mode::Eager, rounded, inputs, true);
  } catch (const std::exception& e) {
    if (eager_error) *eager_error = first_line(e.what());
    return std::nullopt;
  }
  // the outputs every rank must agree on bit for bit: all but those a
  // reduce_scatter's slice or a sharded input's share (a .fg's layout)
  // reaches, and no all_gather or all_reduce makes whole again
  std::vector<bool> varies(g.nodes.size(), false);
  for (const Node& n : g.nodes) {
    if (n.op == Op::ReduceScatter || (n.op == Op::Input && !replicated.count(n.name)))
      varies[static_cast<size_t>(n.id)] = true;
    else if (n.op != Op::AllGather && n.op != Op::AllReduce)
      for (int i : n.inputs) varies[static_cast<size_t>(n.id)] = varies[static_cast<size_t>(n.id)] || varies[static_cast<size_t>(i)];
  }
  auto same_everywhere = [&](size_t out) {
    return out < g.outputs.size() && !varies[static_cast<size_t>(g.outputs[out])];
  };
  for (size_t i = 0; i < eager.outputs.size(); ++i)
    if (same_everywhere(i)) digests->push_back("out" + std::to_string(i) + " eager " + exact_digest(eager.outputs[i]));
  // the least precise floating type among each value and those it is
  // computed from (bf16 < f16 < f32 < f64)
  auto rank_of = [](DType t) { return t == DType::BF16 ? 0 : t == DType::F16 ? 1 : t == DType::F32 ? 2 : 3; };
  std::vector<DType> least_precise(g.nodes.size(), DType::F64);
  for (const Node& n : g.nodes) {
    DType& l = least_precise[static_cast<size_t>(n.id)];
    if (is_floating(n.type.dtype)) l = n.type.dtype;
    for (int in : n.inputs)
      if (rank_of(least_precise[static_cast<size_t>(in)]) < rank_of(l)) l = least_precise[static_cast<size_t>(in)];
  }
  double input_rms = 0;  // the largest of the floating inputs'
  for (const auto& [k, t] : inputs)
    if (t.is_floating_point() && t.numel() > 0)
      input_rms = std::max(input_rms, std::sqrt(t.to(at::kDouble).pow(2).mean().item<double>()));
  for (FusionPolicy p : o.policies) {
    FuzzFinding f;
    f.policy = p;
    ForwardResult c;
    try {
      AtenExecutor ex(fr.coll, fr.rank, fr.world, p, false, o.backend);
      ex.set_replicated_inputs(replicated);
      ex.set_fast_paths(parse_fast_paths(o.fast_paths), fr.proofs);
      c = forward(r, o.mode, ex, inputs, false);
    } catch (const RanksDisagree& e) {
      f.kind = "rank disagreement";
      f.detail = first_line(e.what());
      return f;
    } catch (const InternalError& e) {
      f.kind = "crash";
      f.detail = first_line(e.what());
      return f;
    } catch (const UserError& e) {
      f.kind = "compile error";
      f.detail = first_line(e.what());
      return f;
    } catch (const std::exception& e) {
      f.kind = "crash";
      f.detail = first_line(e.what());
      return f;
    }
    if ((c.graph_count != 1 || !c.breaks.empty()) && !o.breaks_allowed) {
      f.kind = "graph break";
      f.detail = std::to_string(c.graph_count) + " graphs, " + std::to_string(c.breaks.size()) + " breaks";
      return f;
    }
    for (size_t i = 0; i < c.outputs.size(); ++i)
      if (same_everywhere(i))
        digests->push_back("out" + std::to_string(i) + " under --fusion " + policy_name(p) + " " +
                         exact_digest(c.outputs[i]));
    if (c.outputs.size() != eager.outputs.size()) {
      f.kind = "mismatch";
      f.detail = std::to_string(c.outputs.size()) + " outputs, eager has " + std::to_string(eager.outputs.size());
      return f;
    }
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      const std::string out = "out" + std::to_string(i);
      if (c.outputs[i].sizes() != eager.outputs[i].sizes() || c.outputs[i].scalar_type() != eager.outputs[i].scalar_type()) {
        f.kind = "mismatch";
        f.detail = out + ": shape or dtype differs from eager";
        return f;
      }
      // NaN or inf where eager has a finite value (or the other way round)
      if (!c.outputs[i].isfinite().equal(eager.outputs[i].isfinite())) {
        f.kind = "mismatch";
        f.detail = out + ": non-finite values where eager has none, or the other way round";
        return f;
      }
      at::Tensor finite = eager.outputs[i].isfinite();
      if (!finite.any().item<bool>()) continue;  // nothing finite (or nothing at all) to compare
      auto keep = [&](const at::Tensor& t) { return t.masked_select(finite); };
      const record::AccuracyOutput a = judge_accuracy(out, keep(c.outputs[i]), keep(eager.outputs[i]), keep(fp64.outputs[i]));
      // the gate's rule has an absolute slack; a random graph's outputs span
      // many scales, so here the slack scales with the output (rtol of its
      // RMS): 2x or 3x eager's error stays the bar. A sum's rounding
      // scales with its terms, not its result: where terms cancel (9225
      // values of RMS 1 summing to -0.5, found on cuda: compiled 1.7e-5
      // from fp64, eager 4e-6, both a few ulp of the partial sums) the
      // scale is the inputs' RMS times the square root of the longest sum
      const at::Tensor ref = keep(fp64.outputs[i]).to(at::kDouble);
      const double rms = std::max(std::sqrt(ref.pow(2).mean().item<double>()),
                                  input_rms * std::sqrt(static_cast<double>(longest_sum(g, fr.world))));
      // the precision of the output is that of the least precise value it
      // is computed from: an f32 output of bf16 values carries bf16
      // rounding, which compiled code and eager take at different places
      // (a kernel keeps inlined bf16 values unrounded, as Inductor does):
      // found as f32 outputs of bf16 chains 2x to 40x eager's error on 15
      // elements or one, where eager's own rounding happened to cancel
      const DType least = least_precise[static_cast<size_t>(g.outputs[i])];
      const bool low = least == DType::BF16 || least == DType::F16;
      const double rtol = least == DType::BF16 ? 1.6e-2 : least == DType::F16 ? 1e-3 : 1.3e-6;
      // where the roundings fall moves an output by as much as the graph
      // amplifies them: a product of two values that cancel in fp64 and in
      // eager (x - mean(x) over one element, times the mean: exactly 0 both
      // ways) keeps one unrounded inlined value in a kernel and so is 1e-2
      // off (found on cuda, f16). The fp64 reference with a rounding's
      // noise at every value measures that amplification for this graph
      double noise = 0;
      if (i < noisy.outputs.size() && noisy.outputs[i].sizes() == fp64.outputs[i].sizes()) {
        noise = std::sqrt(keep(noisy.outputs[i]).to(at::kDouble).sub(ref).pow(2).mean().item<double>());
        if (!std::isfinite(noise)) noise = 0;
      }
      const bool scaled_ok = *a.rmse_vs_fp64 <=
                             (low ? 3.0 : 2.0) * *a.eager_rmse_vs_fp64 + rtol * rms + 4.0 * noise;
      // (a repro's minify judges as the gate does: its failure is the
      // gate's verdict, which the slack above would hide in a large block)
      if (!*a.pass && (o.gate_accuracy || !scaled_ok)) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "%s: rmse vs fp64 %.3g against eager's %.3g (fp64 with rounding noise: %.3g), max |compiled - "
                      "eager| %.3g",
                      out.c_str(), *a.rmse_vs_fp64, *a.eager_rmse_vs_fp64, noise, *a.max_abs_vs_eager);
        f.kind = "mismatch";
        f.detail = buf;
        return f;
      }
    }
  }
  return FuzzFinding{};
}

}  // namespace

std::string fuzz_name(const Graph& g) {
  const std::string text = print_graph(g);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(XXH64(text.data(), text.size(), 0)));
  return "f" + std::string(buf).substr(0, 12);
}

std::vector<nlohmann::json> exchange_verdicts(FuzzRank& fr, const nlohmann::json& mine) {
  if (!fr.coll || fr.world < 2) return {mine};
  std::vector<nlohmann::json> all;
  for (const auto& t : fr.coll->exchange("fuzz/" + std::to_string(fr.exchanged++), mine.dump()))
    all.push_back(nlohmann::json::parse(t));
  return all;
}

std::optional<FuzzFinding> fuzz_check(const Graph& g, const std::string& name, const FuzzOptions& o, FuzzRank& fr,
                                      std::string* eager_error) {
  std::string why;
  std::vector<std::string> digests;
  std::optional<FuzzFinding> f;
  try {
    f = local_check(g, name, o, fr, &why, &digests);
  } catch (const std::exception& e) {  // past the policies' own catches: this rank's harness
    f = FuzzFinding{"crash", FusionPolicy::Default, first_line(e.what())};
  }
  nlohmann::json mine = {{"refused", !f.has_value()}, {"why", why}, {"digests", digests}};
  if (f) mine.update({{"kind", f->kind}, {"policy", static_cast<int>(f->policy)}, {"detail", f->detail}});
  const std::vector<nlohmann::json> all = exchange_verdicts(fr, mine);
  if (all.size() == 1) {
    if (!f && eager_error) *eager_error = why;
    return f;
  }
  auto who = [](size_t r) { return "rank " + std::to_string(r) + ": "; };
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r]["refused"].get<bool>()) {
      if (eager_error) *eager_error = who(r) + all[r]["why"].get<std::string>();
      return std::nullopt;
    }
  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r]["kind"].get<std::string>().empty())
      return FuzzFinding{all[r]["kind"].get<std::string>(), static_cast<FusionPolicy>(all[r]["policy"].get<int>()),
                         who(r) + all[r]["detail"].get<std::string>()};
  // every rank ran the same graph on the same inputs: the same bits
  const auto ref = all[0]["digests"].get<std::vector<std::string>>();
  for (size_t r = 1; r < all.size(); ++r) {
    const auto other = all[r]["digests"].get<std::vector<std::string>>();
    for (size_t i = 0; i < std::max(ref.size(), other.size()); ++i) {
      const std::string a = i < ref.size() ? ref[i] : "(nothing)", b = i < other.size() ? other[i] : "(nothing)";
      if (a == b) continue;
      FuzzFinding d{"rank disagreement", FusionPolicy::Default,
                    "rank " + std::to_string(r) + " differs from rank 0: rank 0 has " + a + ", rank " +
                        std::to_string(r) + " has " + b};
      for (FusionPolicy p : o.policies)
        if (a.find(std::string(" --fusion ") + policy_name(p) + " ") != std::string::npos) d.policy = p;
      return d;
    }
  }
  return FuzzFinding{};
}

}  // namespace fg
