// The host C++ dialect of the kernel printer: kernels are extern "C"
// functions over void** args, compiled by the host compiler (kernels/cpu).
// Loops run x then r in order; GEMMs under max-autotune are generated
// templates with their prologues and epilogues fused in.
#pragma once
#include "fusion/codegen/cstyle_printer.h"

namespace fg {

class CppPrinter : public CStylePrinter {
 public:
  using CStylePrinter::CStylePrinter;

 protected:
  std::string backend() const override { return "cpu"; }
  std::string prelude() const override;
  std::string signature(const std::string& name) const override;
  Kernel print_template(const FusedGroup& gr, int index, std::set<int>* removed) override;

 public:
  std::string outer_loop(int64_t numel, bool reduction) const override;
  bool can_vectorize(int64_t numel) const override { return numel > 1; }
  std::string inner_loop(int64_t rnumel) const override;
  // A floating sum accumulates in double: one thread adds a row's elements
  // in order, and a float accumulator's error grows with the row (1025
  // values near 1 already lose 6e-5 of the sum), where ATen's cascade sums
  // do not (fusegate fuzz found it through a layer_norm; a CUDA row is
  // summed by a tree across threads and keeps float).
  std::string accumulator_type(DType t, Op reduce_op) const override {
    // sums and running sums in double, as ATen's cpu kernels accumulate
    if ((reduce_op == Op::Sum || reduce_op == Op::Cumsum) && is_floating(t)) return "double";
    return CStylePrinter::accumulator_type(t, reduce_op);
  }
};

KernelProgram generate_cpp(const LoweredGraph& g, const Schedule& s);

// The helpers every host kernel source starts with (bf16/f16 conversions,
// rounding): hand-written fast paths (kernels/fastpaths/) are compiled with
// them too, so their rounding is the generated kernels' rounding.
const std::string& host_kernel_prelude();
// What generated host kernels add after it (fast paths do not include it,
// so it can grow without invalidating their proofs).
const std::string& host_generated_extras();

}  // namespace fg
