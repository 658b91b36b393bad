// One rank: joins the process group, builds its shard of the inputs, runs
// the repro (warm-up, then the measured forwards), and writes its record.
#include <ATen/ops/cat.h>
#include <ATen/Parallel.h>
#include <torch/version.h>
#include <xxhash.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "fusion/errors.h"
#include "fusion/fault.h"
#include "fusion/passes/tp_rewrite.h"
#include "harness/run/digest.h"
#include "harness/run/environment.h"
#include "harness/run/forward.h"
#include "harness/tools/ab_stats.h"
#include "harness/record/golden.h"
#include "harness/record/files.h"
#include "harness/record/json_read.h"
#include "harness/run/placement.h"
#include "harness/run/ab_rank.h"
#include "harness/run/liveness.h"
#include "harness/run/rounds.h"
#include "harness/run/tuning.h"
#include "harness/run/profile.h"
#include "harness/record/proofs.h"
#include "harness/record/record.h"
#include "harness/run/run.h"
#include "kernels/collectives/collectives.h"
#include "kernels/cpu/gemm_choice.h"
#include "kernels/cpu/jit.h"
#include "kernels/cpu/runtime.h"
#include "kernels/cuda/gemm_tuning.h"
#include "fusion/fastpaths/catalog.h"
#include "kernels/fastpaths/sources.h"
#include "repros/registry.h"

namespace fg {

namespace {


std::string hash_text(const std::string& s) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(XXH64(s.data(), s.size(), 0)));
  return buf;
}

void maybe_fault(int rank, const std::string& out_path) {
  // FUSEGATE_FAULT=crash:R or hang:R makes rank R fail on purpose, to test
  // that the launcher stops the run and names the rank
  const std::string me = std::to_string(rank);
  if (fault_argument("crash") == me) std::abort();
  if (fault_argument("hang") == me) {
    progress(out_path, "hanging on purpose (FUSEGATE_FAULT)");
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
  }
}

// Copies what the probed forward saw into the counted forward's launches.
// Returns "" or why the figures cannot be trusted: the probe lost records,
// the two forwards launched differently, a launch went unobserved, or (cuda)
// a generated kernel did not run as exactly one device kernel of its name.
std::string merge_probed(std::vector<LaunchRecord>* launches, const std::vector<LaunchRecord>& probed, bool cuda,
                         const std::string& incomplete) {
  if (!incomplete.empty()) return incomplete;
  if (probed.size() != launches->size())
    return "the probed forward launched " + std::to_string(probed.size()) + " kernels, the counted one " +
           std::to_string(launches->size());
  for (size_t i = 0; i < probed.size(); ++i) {
    const LaunchRecord& p = probed[i];
    LaunchRecord& l = (*launches)[i];
    if (p.name != l.name) return "launch " + std::to_string(i) + " is " + p.name + " in the probed forward, " + l.name;
    if (!p.probed) return "launch " + p.name + " was not observed";
    bool generated = p.kind == "poi" || p.kind == "red" || p.kind == "per" || p.kind == "tem";
    if (cuda && generated && (p.device_kernels.size() != 1 || p.device_kernels[0] != p.name))
      return "generated kernel " + p.name + " ran as " + std::to_string(p.device_kernels.size()) +
             " device kernels, not as itself: the trace cannot be matched to launches";
    l.probed = true;
    l.aten_ops = p.aten_ops;
    l.device_kernels = p.device_kernels;
  }
  return "";
}

// The per-kernel profile (--profile, harness/run/profile.h): the device kernels
// of kProfileSteps steps run back to back as the timed ones were, each row
// its kernel's median over the steps, matched in order with the counted
// forward's launches, against the device's measured copy bandwidth and GEMM
// peak.
constexpr int kProfileSteps = 20;

nlohmann::json profile_json(const std::vector<LaunchRecord>& launches, const std::vector<DeviceKernel>& ran,
                            int steps, int keep, const std::string& how) {
  double copy_gbps = 0, gemm_tflops = 0;
  cuda_peaks(&copy_gbps, &gemm_tflops);
  std::vector<ProfileLaunch> pl;
  for (const auto& l : launches) pl.push_back({l.name, l.kind, l.bytes, l.flops, l.device_kernels});
  std::string why;
  // the steps run only to bring the device back to its timed state are cut
  // off by the counted forward's kernel count, neither read nor checked
  // (one odd step among thousands would otherwise lose the profile); where
  // the count is unknown, by splitting the whole trace
  size_t per_forward = 0;
  for (const auto& l : launches) per_forward += l.device_kernels.size();
  std::vector<std::vector<DeviceKernel>> split;
  std::string cut_why;
  int read = steps;
  if (keep < steps && per_forward > 0) {
    const std::vector<DeviceKernel> tail = last_kernels_of(ran, per_forward * static_cast<size_t>(keep), &cut_why);
    if (cut_why.empty()) {
      split = split_steps(tail, keep, &why);
      read = keep;
    }
  }
  if (split.empty()) split = split_steps(ran, steps, &why, keep);
  const int per_step = why.empty() ? 1 : read;  // not split: one span of every forward it holds
  if (!cut_why.empty()) why = why.empty() ? cut_why : cut_why + "; " + why;
  nlohmann::json p = profile_json(pl, split, how, cuda_device_name(), copy_gbps, gemm_tflops, per_step);
  if (!why.empty()) p["note"] = p.contains("note") ? why + "; " + p["note"].get<std::string>() : why;
  return p;
}


// A sharded output whole: every rank's share, gathered in rank order and
// put back block by block.
at::Tensor gather_shards(Collectives& coll, const at::Tensor& local, const Sharding& shard) {
  const int64_t d = shard.dim, w = coll.world();
  // all_gather stacks along dim 0: move the sharded dim there and back
  std::vector<at::Tensor> pieces = coll.all_gather(local.movedim(d, 0).contiguous()).chunk(w, 0);
  std::vector<at::Tensor> parts;
  int64_t at = 0;
  for (int64_t full : shard.block_sizes(local.size(d) * w)) {
    for (const at::Tensor& p : pieces) parts.push_back(p.narrow(0, at, full / w));
    at += full / w;
  }
  return at::cat(parts, 0).movedim(0, d).contiguous();
}

}  // namespace

namespace {

// A part of the record made elsewhere as JSON (the fast paths' statuses,
// the GEMM and placement tables), taken into the record's types: a field
// the types would drop is a fusegate bug, said at once rather than lost.
template <class T> T typed_part(const nlohmann::json& j, const char* what) {
  T v = record::part_from_json<T>(j);
  const std::string back = record::part_to_json(v).dump();
  if (back != j.dump())
    throw InternalError(std::string("the record's types (harness/record/record.h) do not hold all of ") + what +
                        ": " + j.dump().substr(0, 300) + " reads back as " + back.substr(0, 300));
  return v;
}

}  // namespace

int worker_main(const RunSpec& spec, int rank, int port, const std::string& out_path) {
  at::set_num_threads(1);  // ranks share the cores; one thread keeps results deterministic
  Heartbeat heartbeat(out_path + ".heartbeat");
  progress(out_path, "joining the process group");
  bool cuda = spec.backend == Backend::Cuda;
  if (cuda) cuda_select_device(rank - spec.first_rank());  // before NCCL: one GPU of this node a rank
  Collectives coll(spec.master_addr, port, rank, spec.world, spec.timeout_s, cuda ? "nccl" : "gloo",
                   spec.store_prefix);
  progress(out_path, "joined");
  maybe_fault(rank, out_path);
  // FUSEGATE_FAULT=diverge_fusion:R: rank R alone compiles with another
  // fusion rule, as a rank of another version would (the agreement check
  // before the first collective must catch it)
  if (fault_argument("diverge_fusion") == std::to_string(rank)) fault_enable("refuse_fusion", "reduction");

  auto repros = all_repros(spec.fg_dirs);
  const Repro* r = find_repro(repros, spec.repro);
  if (!r) user_error("unknown repro " + spec.repro);
  const Mode mode = spec.mode;
  const FusionPolicy policy = spec.fusion;

  progress(out_path, "warm-up forward");
  AtenExecutor ex(&coll, rank, spec.world, policy, false, spec.backend);
  std::map<std::string, at::Tensor> inputs;
  const std::vector<InputSpec> specs = r->inputs(spec.world);
  for (const auto& s : specs) inputs[s.name] = make_input(r->name, s, rank, spec.world).to(ex.device());
  // --save-tensors: the inputs as made (a copy_ writes into one as it runs)
  std::vector<std::pair<std::string, at::Tensor>> saved_inputs;
  if (!spec.save_tensors.empty() && rank == 0)
    for (const auto& s : specs) saved_inputs.emplace_back(s.name, inputs.at(s.name).cpu().clone());
  ex.set_replicated_inputs(replicated_inputs(specs));
  if (!spec.ab_fast_path.empty()) return ab_rank(spec, *r, coll, rank, inputs, replicated_inputs(specs), out_path);
  FastPathProofs proofs = device_fast_path_proofs(spec.golden_dir, spec.backend, spec.world);
  if (spec.nnodes > 1)
    for (const auto& f : fast_path_catalog())
      if (f.one_host)
        proofs.blocked[f.name] = "needs every rank on one host, and the ranks span " + std::to_string(spec.nnodes) +
                                 " nodes";
  ex.set_fast_paths(spec.fast_paths, proofs);
  // max-autotune on cuda chooses GEMM algorithms by measurement: a forward
  // after the residual placement notes the shapes (and runs cuBLASLt's top-1)
  const bool tune_gemms = spec.backend == Backend::Cuda && policy == FusionPolicy::MaxAutotune;
  // The step the timings time: a forward that is one compiled graph is
  // replayed behind its guards, as a compiled function is called; otherwise
  // through capture. Of a forward just run (its result and graphs); the
  // bool: whether it is one compiled graph.
  auto timed_step = [&](const ForwardResult& fr, const std::vector<const CompiledGraphRt*>& run) {
    const CompiledGraphRt* one = (mode != Mode::Eager && fr.graph_count == 1 && run.size() == 1) ? run[0] : nullptr;
    std::vector<at::Tensor> ordered;
    if (one)
      for (int id : one->prog.captured.input_ids()) ordered.push_back(inputs.at(one->prog.captured.node(id).name));
    std::function<void()> step = [&ex, &r, &inputs, mode, one, ordered] {
      if (one) {
        ex.begin_forward();
        ex.replay(*one, ordered);
      } else {
        forward(*r, mode, ex, inputs, false);
      }
    };
    return std::make_pair(step, one != nullptr);
  };
  ForwardResult warm = forward(*r, mode, ex, inputs, false);
  // max-autotune on cuda: each TP residual hoist kept or left apart, by
  // what the forward measures (harness/run/placement.h); before the GEMM
  // algorithms, which are chosen for the shapes of the program that runs
  std::optional<nlohmann::json> placement;
  if (cuda && policy == FusionPolicy::MaxAutotune && mode != Mode::Eager) {
    progress(out_path, "choosing residual placement");
    // Each round's 30 timed forwards come after 250 ms of the same forward
    // back to back: timed from a cool start, 30 forwards of seq 2048 fell
    // across the GPU's settling at its power cap, the medians moved 5-10%
    // between processes and a golden kept the add apart where, at the
    // sustained state, the hoist is 1-3% faster (H100, bench/RESULTS.md,
    // tenth step). The count is rank 0's, so every rank runs as many
    // collectives.
    int round_no = 0;
    auto time_forward = [&](const std::set<std::string>& apart, std::string* how) {
      constexpr int kIters = 30;        // forwards a round
      constexpr double kWarmMs = 250;   // untimed, back to back, before them
      ex.set_residuals_apart(apart);
      const ForwardResult fr = forward(*r, mode, ex, inputs, false);  // compiles a placement the first time
      const auto [step, one] = timed_step(fr, ex.graphs_run());
      const bool graph = spec.cuda_graphs && one;
      const int warm_steps = agreed_warm_steps(coll, "residual_placement/warm/" + std::to_string(round_no++), kWarmMs,
                                               step_pace_ms(ex, step, 3, graph));
      std::string note;
      std::vector<double> t = cuda_time(kIters, step, graph, &note, nullptr, 1, warm_steps);
      *how = (graph ? note : "host launches") + "; " + std::to_string(static_cast<int>(kWarmMs)) +
             " ms of untimed forwards before each round";
      return t;
    };
    placement = choose_residual_placement(spec, coll, rank, ex, time_forward);
    if (placement->empty()) placement.reset();
  }
  if (tune_gemms) {
    // the GEMMs of the program that runs: a forward that notes their shapes
    gemm_tuning_start();
    warm = forward(*r, mode, ex, inputs, false);
    progress(out_path, "choosing GEMM algorithms");
    const auto [step, one_graph] = timed_step(warm, ex.graphs_run());
    choose_gemm_algos(spec, coll, rank, ex, step, spec.cuda_graphs && one_graph);
  }
  // max-autotune on cpu: each GEMM template against the library call, by
  // measurement; the graphs compile again with the choice
  std::optional<nlohmann::json> gemm_choices;
  if (spec.backend == Backend::Cpu && policy == FusionPolicy::MaxAutotune && mode != Mode::Eager) {
    progress(out_path, "choosing GEMM templates or library calls");
    gemm_choices = choose_gemm_templates(spec, coll, rank, ex, [&] { forward(*r, mode, ex, inputs, false); });
    forward(*r, mode, ex, inputs, false);  // compiles with the choice: the measured forward is warm
  }
  // FUSEGATE_FAULT=perturb:NODE names a scheduler node of this run's graphs
  // (under FUSEGATE_BISECT limits the graphs may differ: not checked there)
  if (const std::string target = fault_argument("perturb"); !target.empty() && !std::getenv("FUSEGATE_BISECT")) {
    bool found = false;
    for (const CompiledGraphRt* g : ex.graphs_run())
      for (const auto& sn : g->prog.lowered.nodes) found = found || sn.name == target;
    if (!found)
      user_error("FUSEGATE_FAULT=perturb:" + target + ": " + r->name + " has no scheduler node " + target +
                 " in mode " + mode_letter(mode) + " (the ledger's names: fusegate explain " + r->name + ")");
  }
  coll.reset_sequence();
  progress(out_path, "measured forward");
  // one forward through capture: what it launches, graphs and breaks
  ForwardResult res = forward(*r, mode, ex, inputs, false);
  std::vector<LaunchRecord> launches = ex.launches();
  std::vector<const CompiledGraphRt*> graphs_run = ex.graphs_run();
  std::string collectives = coll.sequence();

  // timing (timed_step): the compiled graph replayed behind its guards, or
  // each forward through capture
  const auto [body, one] = timed_step(res, graphs_run);
  std::vector<double> times;
  std::string timing_note = one ? "compiled graph replayed behind its guards" : "capture each forward";
  // warm clocks and caches before timing; --warmup-ms: as many more untimed
  // forwards as fill it at the pace of these, run as the timed ones run (on
  // cuda, replays of its CUDA graph where the timings replay one: before
  // 2026-11-27 the pace was the host launches', and a replayed h4096 forward
  // at world size 2 on two H100 got 1893-4411 forwards of 0.49 ms for 2000
  // ms, 0.9-2.2 s, and was still getting faster through its timings)
  const double pace = step_pace_ms(ex, body, std::min(10, spec.iters), cuda && spec.cuda_graphs && one);
  int warm_steps = 0;
  if (spec.warmup_ms > 0) {
    warm_steps = agreed_warm_steps(coll, "warmup_steps", spec.warmup_ms, pace);
    timing_note += "; after " + std::to_string(warm_steps) + " untimed forwards (--warmup-ms " +
                   std::to_string(spec.warmup_ms) + ")";
  }
  // --profile: the trace starts after the timings, and starting it leaves
  // the device idle a moment: enough for a GPU at its power cap to come
  // off it, so that the traced steps ran at a higher clock than the timed
  // ones (h4096 on the H100: a 0.697 ms span against 0.797 ms timed;
  // bench/RESULTS.md, eleventh step). After --warmup-ms, a quarter of the
  // warm-up (at most about 500 ms of it) runs again under the trace,
  // untimed and unread, before the steps that are read.
  const int profile_steps = std::min(kProfileSteps, std::max(1, spec.iters));
  const int trace_warm_steps = warmup_share(warm_steps, spec.warmup_ms, 4, 500);
  std::vector<DeviceKernel> profiled;
  // after --warmup-ms, the energy of half as many forwards again, run as the
  // timed ones right after them: at the power cap a forward's time is about
  // its energy over the cap, so the record says what each side spent (at
  // most about 1 s of them: about 10 of the energy counter's steps, between
  // which the power is read, kernels/cuda/energy_steps.h)
  EnergyWindow energy;
  energy.steps = warmup_share(warm_steps, spec.warmup_ms, 2, 1000);
  if (cuda) {
    std::string note;
    times = cuda_time(std::max(1, spec.iters), body, spec.cuda_graphs && one, &note,
                      spec.profile.empty() ? nullptr : &profiled, trace_warm_steps + profile_steps, warm_steps,
                      &energy);
    if (spec.cuda_graphs) timing_note += "; " + note;
  } else {
    for (int i = 0; i < warm_steps; ++i) body();
    for (int i = 0; i < std::max(1, spec.iters); ++i) {
      auto t0 = std::chrono::steady_clock::now();
      body();
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }

  // What each launch really runs (device kernels on cuda, dispatched ATen
  // operators on cpu), from one more forward under the probe. It comes after
  // the timed ones: CUPTI's overhead outlives its tracing and would slow them.
  progress(out_path, "probed forward");
  std::string probe_why;
  std::vector<std::string> between;
  {
    std::unique_ptr<LaunchProbe> probe = cuda ? make_device_kernel_probe(&probe_why) : make_aten_op_probe();
    if (probe) {
      ex.set_probe(probe.get());
      forward(*r, mode, ex, inputs, false);
      ex.set_probe(nullptr);
      probe_why = merge_probed(&launches, ex.launches(), cuda, probe->incomplete());
      between = probe->between();
      for (const auto& l : ex.outside_launches())
        for (const auto& k : l.device_kernels) between.push_back(l.name + ": " + k);
    }
  }
  if (cuda && !spec.profile.empty() && rank == 0) {
    progress(out_path, "profile");
    nlohmann::json p = profile_json(
        launches, profiled, trace_warm_steps + profile_steps, profile_steps,
        trace_warm_steps > 0 ? timing_note + "; traced after " + std::to_string(trace_warm_steps) +
                                   " more untimed forwards under the trace"
                             : timing_note);
    p["forward_times_ms"] = times;  // the timed forwards, in the order they ran
    p["repro"] = spec.repro;
    p["mode"] = mode_letter(spec.mode);
    p["fusion"] = policy_name(spec.fusion);
    p["world_size"] = spec.world;
    if (!probe_why.empty())
      p["note"] = "device kernels not counted: " + probe_why +
                  (p.contains("note") ? "; " + p["note"].get<std::string>() : std::string());
    write_atomic(spec.profile, p.dump(2) + "\n");
  }


  // the rank's record, as a value (harness/record/record.h)
  record::RankRecord rec;
  rec.rank = rank;
  rec.graph_count = res.graph_count;
  rec.graph_break_count = static_cast<long long>(res.breaks.size());
  for (const auto& b : res.breaks) rec.breaks.push_back({b.reason, b.loc.str()});
  // what the repro declares of mode C (harness/record/compare.h invariant_findings)
  if (mode == Mode::Compiled && !r->expected_breaks.empty()) rec.expected_breaks = r->expected_breaks;
  if (r->reshaped_inputs && mode != Mode::Eager) {
    // recompiles as a driven invariant: the same forward, same shapes, then
    // a changed sequence length (the record's `recompiles`)
    progress(out_path, "recompile check");
    const int before = ex.recompile_count();
    forward(*r, mode, ex, inputs, false);
    const int same = ex.recompile_count() - before;
    std::map<std::string, at::Tensor> reshaped;
    for (const auto& s : r->reshaped_inputs(spec.world))
      reshaped[s.name] = make_input(r->name, s, rank, spec.world).to(ex.device());
    forward(*r, mode, ex, reshaped, false);
    rec.recompiles = record::Recompiles{same, ex.recompile_count() - before - same, ex.last_failed_guard()};
  }
  rec.recompile_count = ex.recompile_count();
  rec.kernel_count = static_cast<long long>(launches.size());
  std::map<std::string, long long> by_kind = {{"poi", 0},    {"red", 0},        {"per", 0},      {"tem", 0},
                                              {"extern", 0}, {"collective", 0}, {"fast_path", 0}};
  for (const auto& l : launches) {
    ++by_kind[l.kind];
    record::Launch k;
    k.name = l.name;
    k.kind = l.kind;
    k.ops = l.ops;
    k.graph = l.graph;
    rec.kernels.push_back(std::move(k));
  }
  rec.kernel_count_by_kind = by_kind;
  // what really ran: the figure that sees an extern launching 15 kernels
  if (cuda) {
    if (probe_why.empty()) {
      long long dev = 0;
      for (size_t i = 0; i < launches.size(); ++i) {
        dev += static_cast<long long>(launches[i].device_kernels.size());
        rec.kernels[i].device_kernels = launches[i].device_kernels;
      }
      if (!between.empty()) rec.device_kernels_outside_launches = between;
      rec.device_kernel_count = dev + static_cast<long long>(between.size());
    } else {
      rec.device_kernels_not_counted = probe_why;
    }
  } else if (!probe_why.empty()) {
    rec.aten_ops_not_counted = probe_why;
  } else {
    long long calls = 0;
    // externs and collectives: a generated kernel dispatches no ATen
    // operator (its output's allocation is fusegate's, not the kernel's)
    for (size_t i = 0; i < launches.size(); ++i) {
      if (launches[i].aten_ops.empty() || (launches[i].kind != "extern" && launches[i].kind != "collective")) continue;
      rec.kernels[i].aten_ops = std::map<std::string, long long>(launches[i].aten_ops.begin(),
                                                                 launches[i].aten_ops.end());
      for (const auto& [name, n] : launches[i].aten_ops) calls += n;
    }
    rec.aten_op_count = calls;
  }
  rec.fast_paths = typed_part<std::vector<record::FastPathStatus>>(
      fast_path_statuses(graphs_run, spec.fast_paths, {}), "fast_paths");
  rec.ledger.emplace();
  std::string decisions;
  int gi = 0;
  for (const CompiledGraphRt* g : graphs_run) {
    for (const auto& e : g->prog.schedule.ledger) {
      record::LedgerEntry le;
      le.graph = gi;
      le.nodes = {e.first, e.second};
      le.score = std::vector<long long>{e.score[0], e.score[1], e.score[2], e.score[3]};
      le.outcome = e.fused ? "fused" : "rejected";
      le.reason = reject_code(e.reason);
      le.round = e.round;
      if (!e.source.empty()) le.source = e.source;
      rec.ledger->push_back(std::move(le));
      decisions += e.first + "|" + e.second + "|" + (e.fused ? "1" : "0") + ";";
    }
    // codegen variants (FUSEGATE_BISECT=codegen_variants): the generated
    // kernels written in chunks of 8 (cuda) or with their loop marked for
    // vectorization (host pointwise kernels), in launch order per graph
    for (const Kernel& k : g->prog.program.kernels) {
      if (!k.chunked && !k.vectorized && k.held_back_variant.empty()) continue;
      std::string nodes;
      LedgerEntry where;  // for its sorted, de-duplicated source lines
      for (int n : k.nodes) {
        const SchedNode& sn = g->prog.lowered.nodes[static_cast<size_t>(n)];
        nodes += (nodes.empty() ? "" : "+") + sn.name;
        where.add_source(sn.lines);
      }
      record::CodegenVariant v;
      v.graph = gi;
      v.kernel = k.name;
      v.nodes = {nodes};
      v.variant = k.chunked ? "chunked" : k.vectorized ? "simd" : k.held_back_variant;
      if (!k.chunked && !k.vectorized) v.held_back = true;
      if (!where.source.empty()) v.source = where.source;
      if (!rec.codegen_variants) rec.codegen_variants.emplace();
      rec.codegen_variants->push_back(std::move(v));
    }
    // the stages' applications bisect counts (FUSEGATE_BISECT=
    // decompositions, lowerings), in graph order
    for (const auto* list : {&g->prog.decompositions, &g->prog.lowered.lowerings})
      for (const StageApplication& a : *list) {
        record::StageApplication x;
        x.graph = gi;
        x.stage = a.stage;
        x.rule = a.rule;
        x.node = a.node;
        if (!a.lines.empty()) x.source = a.lines;
        if (a.held_back) x.held_back = true;
        if (!rec.stage_applications) rec.stage_applications.emplace();
        rec.stage_applications->push_back(std::move(x));
      }
    ++gi;
  }
  // GEMM algorithm choices (max-autotune on cuda): made at run time per
  // shape, after the compile, so kept beside the ledger rather than in it
  if (tune_gemms)
    rec.gemm_algos = typed_part<std::vector<record::GemmAlgo>>(nlohmann::json::parse(gemm_tuning_record()), "gemm_algos");
  if (gemm_choices) rec.gemm_choices = typed_part<std::vector<record::GemmChoice>>(*gemm_choices, "gemm_choices");
  if (placement)
    rec.residual_placement = typed_part<std::vector<record::ResidualPlacement>>(*placement, "residual_placement");
  std::string graphs;
  for (const auto& h : res.graph_hashes) graphs += h + ";";
  rec.hashes = record::Hashes{hash_text(graphs), hash_text(decisions), hash_text(collectives)};

  std::vector<std::pair<std::string, at::Tensor>> saved_outputs;  // --save-tensors
  for (size_t i = 0; i < res.outputs.size(); ++i) {
    record::OutputDigest o;
    o.name = i < r->outputs.size() ? r->outputs[i] : "out" + std::to_string(i);
    const Sharding shard = i < r->output_shards.size() ? r->output_shards[i] : Sharding{};
    o.replicated = r->replicated_outputs && shard.replicated();
    o.exact = exact_digest(res.outputs[i]);
    o.fingerprint = fingerprint(res.outputs[i]);
    // a shard: the whole output, gathered from every rank, is what compares
    // with world size 1 (every rank gathers, in output order)
    if (r->replicated_outputs && !shard.replicated() && spec.world > 1) {
      at::Tensor whole = gather_shards(coll, res.outputs[i].to(ex.device()), shard).cpu();
      o.gathered = record::Gathered{shard.dim, exact_digest(whole), fingerprint(whole)};
      saved_outputs.emplace_back(o.name, whole);
    } else {
      saved_outputs.emplace_back(o.name, res.outputs[i]);
    }
    rec.outputs.push_back(std::move(o));
  }
  if (!spec.save_tensors.empty() && rank == 0) save_tensors(spec.save_tensors, saved_inputs, saved_outputs);
  if (mode != Mode::Eager) {
    // the references: eager on the same inputs, and the same program in fp64
    progress(out_path, "reference runs");
    AtenExecutor eager_ex(&coll, rank, spec.world, policy, false, spec.backend);
    ForwardResult eager = forward(*r, Mode::Eager, eager_ex, inputs, false);
    AtenExecutor fp64_ex(&coll, rank, spec.world, policy, /*upcast_fp64=*/true, spec.backend);
    ForwardResult fp64 = forward(*r, Mode::Eager, fp64_ex, inputs, true);
    record::Accuracy acc;
    acc.status = "pass";
    for (size_t i = 0; i < res.outputs.size(); ++i) {
      acc.outputs.push_back(judge_accuracy(rec.outputs[i].name, res.outputs[i], eager.outputs[i], fp64.outputs[i]));
      if (!*acc.outputs.back().pass) acc.status = "fail";
    }
    rec.accuracy = acc;
  }
  std::sort(times.begin(), times.end());
  record::Times t;
  t.compile = ex.compile_ms();
  t.forward_median = times[times.size() / 2];
  t.forward_min = times.front();
  t.iters = static_cast<long long>(times.size());
  t.how = timing_note + (cuda ? "; CUDA events" : "; host clock");
  if (cuda && energy.steps > 0) {
    record::Energy e;
    e.forwards = energy.steps;
    if (energy.why.empty()) {
      e.ms = energy.ms;
      e.mj_per_forward = energy.watts * energy.ms / energy.steps;  // W x ms = mJ
      e.watts = energy.watts;
      // the span of the counter's steps the power was read over
      e.read_over_ms = energy.read_over_ms;
      e.counter_periods = energy.counter_periods;
      // a figure the device did not give is left out, never written as 0
      if (energy.power_limit_w > 0) e.power_limit_w = energy.power_limit_w;
      if (energy.sm_mhz > 0) e.sm_mhz = energy.sm_mhz;
      if (!energy.clock_reasons.empty()) e.clock_reasons = energy.clock_reasons;
    } else {
      e.why = energy.why;  // never a figure that was not read
    }
    t.energy = e;
  }
  rec.times_ms = t;
  const nlohmann::json j = record::part_to_json(rec);
  write_atomic(out_path, j.dump(2) + "\n");
  progress(out_path, "done");
  coll.barrier();
  return 0;
}

}  // namespace fg
