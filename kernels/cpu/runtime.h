// The cpu runtime: an Executor for the capture session that runs ops through
// ATen (mode A, host ops) and compiled graphs through JIT-built host kernels
// plus ATen externs and Gloo collectives. It counts every launch of a
// forward, keeps a compile cache with guards, and counts recompiles.
#pragma once
#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fusion/capture/session.h"
#include "fusion/compile.h"
#include "kernels/cpu/aten_ops.h"

namespace fg {

class Collectives;
class JitModule;

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
};

struct CompiledGraphRt;

class CpuExecutor : public Executor {
 public:
  CpuExecutor(Collectives* coll, int rank, int world, FusionPolicy fusion, bool upcast_fp64 = false);
  ~CpuExecutor() override;

  ConcreteP eager(const Node& n, const std::vector<ConcreteP>& in) override;
  std::vector<ConcreteP> run_graph(const Graph& g, const std::vector<ConcreteP>& inputs, int index) override;
  TensorType type_of(const ConcreteP& t) override;
  double item(const ConcreteP& t) override;
  std::string describe(const ConcreteP& t) override;
  int world_size() const override { return world_; }
  int rank() const override { return rank_; }

  // Per forward: clear before a forward, read after it.
  void begin_forward();
  const std::vector<LaunchRecord>& launches() const { return launches_; }
  const std::vector<const CompiledGraphRt*>& graphs_run() const { return graphs_run_; }
  int recompile_count() const { return recompiles_; }
  double compile_ms() const { return compile_ms_; }

 private:
  Collectives* coll_;
  int rank_, world_;
  FusionPolicy fusion_;
  EagerContext ctx_;
  std::vector<LaunchRecord> launches_;
  std::vector<const CompiledGraphRt*> graphs_run_;
  std::map<std::string, std::unique_ptr<CompiledGraphRt>> cache_;
  std::map<int, std::string> site_guard_;
  int recompiles_ = 0;
  double compile_ms_ = 0;
};

struct CompiledGraphRt {
  CompiledProgram prog;
  std::shared_ptr<JitModule> module;
  std::vector<void (*)(void**)> fns;  // per kernel; null for extern/collective
  std::string guard;                  // input types and layouts it was compiled for
};

}  // namespace fg
