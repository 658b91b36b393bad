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
  std::string inner_loop(int64_t rnumel) const override;
};

KernelProgram generate_cpp(const LoweredGraph& g, const Schedule& s);

// The helpers every host kernel source starts with (bf16/f16 conversions,
// rounding): hand-written fast paths (kernels/fastpaths/) are compiled with
// them too, so their rounding is the generated kernels' rounding.
const std::string& host_kernel_prelude();

}  // namespace fg
