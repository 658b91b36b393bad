// The runtime: an Executor for the capture session that runs ops through
// ATen (mode A, host ops) and compiled graphs through generated kernels plus
// ATen externs and collectives. The same code serves both backends; only the
// kernel module differs (host C++ built into a shared object on cpu, NVRTC
// cubins launched through the driver API on cuda). It counts every launch of
// a forward, keeps a compile cache with guards, and counts recompiles.
#pragma once
#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "fusion/capture/session.h"
#include "fusion/compile.h"
#include "kernels/cpu/aten_ops.h"
#include "kernels/cuda/kernel_trace.h"

namespace fg {

class Collectives;
class FastPathRunner;

// The generated kernels of one graph, loaded and ready to launch.
class KernelModule {
 public:
  virtual ~KernelModule() = default;
  // Launches kernel `index` of the program on buffer pointers, in order.
  virtual void launch(size_t index, const std::vector<void*>& ptrs) = 0;
};
std::unique_ptr<KernelModule> load_host_module(const KernelProgram& p);
// Defined by the cuda runtime; without CUDA it reports that it is not built.
std::unique_ptr<KernelModule> load_cuda_module(const KernelProgram& p);
void cuda_synchronize();
bool cuda_backend_built();
// Makes this rank's GPU (rank modulo the GPUs there) current; returns its index.
int cuda_select_device(int rank);
std::string cuda_device_name();
// What decides a cuda run's numbers besides fusegate's own code, as
// (name, version) pairs in a fixed order: the driver, the CUDA runtime,
// cuBLAS and cuBLASLt, cuDNN, NCCL and NVRTC, each as this process loaded
// it ("not loaded" where it is not); empty without the cuda runtime.
std::vector<std::pair<std::string, std::string>> cuda_versions();
// The device's power over `steps` more steps run back to back as the timed
// ones, right after them (kernels/cuda/device_power.h): cuda_time fills it
// where it is given with steps > 0. `why` is "" when measured; NVML is
// polled while the steps run (kernels/cuda/energy_steps.h). The energy of a
// step is watts x ms / steps.
struct EnergyWindow {
  int steps = 0;
  std::string why;
  double ms = 0, watts = 0, power_limit_w = 0;
  double read_over_ms = 0;    // between the energy counter's first and last steps in the window
  int counter_periods = 0;    // the counter's update periods in that span
  unsigned sm_mhz = 0;        // the mean of the window's readings
  std::string clock_reasons;  // NVML's reasons the clock was held down, every one seen, by name
};
// Times `body` `iters` times with device events (cuda) and returns each
// iteration's milliseconds; `graph` captures one call of body into a CUDA
// graph first and times its replays.
// `profile` (may be null) gets the device kernels of `profile_steps` more
// steps, run back to back as the timed ones were (replays of the captured
// graph, or body), and their memsets and copies (kernel = false), all in
// start order (harness/run/profile.h splits them into steps). `warmup_steps`
// untimed steps run first, back to back as the timed ones; `energy` (may be
// null) is measured after the timed steps, before the profile's.
std::vector<double> cuda_time(int iters, const std::function<void()>& body, bool graph, std::string* note,
                              std::vector<DeviceKernel>* profile = nullptr, int profile_steps = 1,
                              int warmup_steps = 0, EnergyWindow* energy = nullptr);
// The pace of `body` as cuda_time replays it (ms a step, host clock): `n`
// replays of a CUDA graph of one call, captured as cuda_time captures it,
// after one untimed replay, from a drained device to a drained device
// (where the capture fails, as cuda_time then does, n calls after one).
// Every rank runs as many calls of body either way (one, then n + 1), so
// steps holding collectives pair up. A warm-up counted at the pace of host
// launches ran a replayed forward for as little as half the time asked
// (bench/RESULTS.md, "Issue 17, sixteenth step").
double cuda_replay_pace_ms(int n, const std::function<void()>& body);
// The device's measured ceilings: a 1 GiB device-to-device copy (GB/s,
// bytes read + written) and an 8192^3 bf16 GEMM (TFLOP/s); medians.
void cuda_peaks(double* copy_gbps, double* gemm_tflops);

struct AtenValue : Concrete {
  explicit AtenValue(at::Tensor t) : tensor(std::move(t)) {}
  at::Tensor tensor;
};
ConcreteP wrap_aten(at::Tensor t);
const at::Tensor& unwrap(const ConcreteP& c);

struct LaunchRecord {
  std::string name, kind;
  std::vector<std::string> ops;
  int graph = -1;  // -1: eager
  // What the launch really ran, filled by a LaunchProbe (the counted forward
  // only): ATen operators dispatched (cpu) or device kernels (cuda).
  bool probed = false;
  std::map<std::string, int> aten_ops;
  std::vector<std::string> device_kernels;
  // The least it must move and compute: each buffer it reads or writes once
  // (GEMMs: 2MNK flops). Compiled graphs only; 0 where not estimated.
  double bytes = 0, flops = 0;
  // The shapes (gemm_shape_key) of the GEMM templates this launch runs,
  // joined by " + " (sibling GEMMs merged into one kernel), else "".
  std::string gemm;
};

// Watches what each launch of a forward really runs. open() comes before a
// launch, close() after it fills the record. An eager op that counted no
// launch (a view) still gets its open() and close(), on a scratch record
// that the executor keeps when it ran device kernels (outside_launches()).
class LaunchProbe {
 public:
  virtual ~LaunchProbe() = default;
  virtual void open() = 0;
  virtual void close(LaunchRecord& r) = 0;
  // Device kernels that ran between launches (a host op's: item(), print),
  // as "between launches: NAME".
  virtual std::vector<std::string> between() const { return {}; }
  // "" when every window was observed whole; else why the figures cannot be
  // trusted (records dropped, a failed flush).
  virtual std::string incomplete() const { return ""; }
};
// Device kernels (cuda, CUPTI) per launch; "" or why it cannot count.
std::unique_ptr<LaunchProbe> make_device_kernel_probe(std::string* why);
// ATen operators per launch (any backend).
std::unique_ptr<LaunchProbe> make_aten_op_probe();

struct CompiledGraphRt;

class AtenExecutor : public Executor {
 public:
  // on the cuda backend, tensors live on cuda:<rank's device>
  AtenExecutor(Collectives* coll, int rank, int world, FusionPolicy fusion, bool upcast_fp64 = false,
               Backend backend = Backend::Cpu);
  ~AtenExecutor() override;

  ConcreteP eager(const Node& n, const std::vector<ConcreteP>& in) override;
  std::vector<ConcreteP> run_graph(const Graph& g, const std::vector<ConcreteP>& inputs, int index) override;
  TensorType type_of(const ConcreteP& t) override;
  double item(const ConcreteP& t) override;
  std::string describe(const ConcreteP& t) override;
  int world_size() const override { return world_; }
  int rank() const override { return rank_; }

  // Graph inputs (by name) that hold the same value on every rank: the
  // proof TP rewrites need (CompileOptions::replicated_inputs).
  void set_replicated_inputs(std::set<std::string> names) { replicated_ = std::move(names); }
  // The fp64 reference with a rounding of its own at every value: each
  // floating result (not a view, an input or a constant) times 1 + d, d
  // uniform in +-u of the type the graph declares (bf16 2^-8, f16 2^-11,
  // f32 2^-24), drawn from a seed per node in evaluation order, so ranks
  // perturb alike. How far that lands from the plain reference is the
  // graph's sensitivity to where roundings happen (fuzz's tolerance).
  void set_rounding_noise(bool on) { rounding_noise_ = on; }
  // The fast paths asked for and what their proofs allow (passes/fast_paths.h);
  // before the first graph compiles.
  void set_fast_paths(FastPathSelection sel, FastPathProofs proofs) {
    fast_sel_ = std::move(sel);
    fast_proofs_ = std::move(proofs);
  }

  // cpu max-autotune: the linear shapes that run as generated templates once
  // chosen; the rest run the library call (kernels/cpu/gemm_choice.h).
  // Graphs compiled before are dropped: the next forward compiles them with
  // this choice.
  void set_template_gemms(std::set<std::string> shapes) {
    template_gemms_ = std::move(shapes);
    cache_.clear();
    graphs_run_.clear();
  }

  // cuda max-autotune: the TP residual hoists to leave undone, by site
  // (CompileOptions::residuals_apart). The programs of each placement stay
  // compiled side by side: a worker times them in turn
  // (harness/run/placement.h), and a change of placement is no recompile (the
  // guards are the same).
  void set_residuals_apart(std::set<std::string> sites) { residuals_apart_ = std::move(sites); }

  // Per forward: clear before a forward, read after it.
  void begin_forward();
  // Observes every launch from now on (null: none). Not owned.
  void set_probe(LaunchProbe* p) { probe_ = p; }
  // Launch records that ran nothing fusegate counts but did work (a device
  // kernel where a view was expected): kept so that no work goes unseen.
  const std::vector<LaunchRecord>& outside_launches() const { return outside_; }
  const std::vector<LaunchRecord>& launches() const { return launches_; }
  const std::vector<const CompiledGraphRt*>& graphs_run() const { return graphs_run_; }
  int recompile_count() const { return recompiles_; }
  // The guard that failed at the last recompile ("input x: ... -> ...").
  const std::string& last_failed_guard() const { return last_failed_guard_; }
  double compile_ms() const { return compile_ms_; }
  // Runs a graph compiled earlier on new inputs after checking its guards,
  // without capture: what a compiled function does once its guards pass.
  std::vector<at::Tensor> replay(const CompiledGraphRt& rt, const std::vector<at::Tensor>& ins);
  // Waits for the device (timing); a no-op on cpu.
  void synchronize() const;
  at::Device device() const { return device_; }

 private:
  std::string guard_key(const std::vector<at::Tensor>& ins, std::vector<Layout>* layouts) const;
  std::vector<at::Tensor> execute(const CompiledGraphRt& rt, const std::vector<at::Tensor>& ins, int index);
  // Ranks compare what they compiled before any collective of it runs
  // (agreement_items); throws RanksDisagree naming the first difference.
  void agree(const CompiledProgram& p, const std::string& hash, int index);
  int agreed_ = 0;                  // graphs agreed on by this executor
  static std::string failed_guard(const Graph& g, const std::string& was, const std::string& now);
  std::string last_failed_guard_;
  int agreement_id_ = next_id();    // executors of a rank, in creation order
  static int next_id() {
    static int n = 0;
    return n++;
  }
  static std::vector<ConcreteP> wrap_all(std::vector<at::Tensor> ts);
  Collectives* coll_;
  Backend backend_;
  at::Device device_;
  int rank_, world_;
  FusionPolicy fusion_;
  EagerContext ctx_;
  std::set<std::string> replicated_;
  bool rounding_noise_ = false;
  uint64_t noise_draws_ = 0;
  FastPathSelection fast_sel_;
  FastPathProofs fast_proofs_;
  std::optional<std::set<std::string>> template_gemms_;
  std::set<std::string> residuals_apart_;
  std::unique_ptr<FastPathRunner> fast_;
  std::vector<LaunchRecord> launches_, outside_;
  LaunchProbe* probe_ = nullptr;
  std::vector<const CompiledGraphRt*> graphs_run_;
  std::map<std::string, std::unique_ptr<CompiledGraphRt>> cache_;
  std::map<int, std::string> site_guard_;
  int recompiles_ = 0;
  double compile_ms_ = 0;
};

struct CompiledGraphRt {
  CompiledProgram prog;
  std::unique_ptr<KernelModule> module;  // null when the graph has no generated kernel
  std::string guard;                  // input types and layouts it was compiled for
  std::vector<std::string> gemm_shapes;  // per kernel: LaunchRecord::gemm
};

}  // namespace fg
