// GEMM template or library call, by measurement: what max-autotune on the
// cpu backend does with each linear layer, as Inductor's max-autotune times
// its GEMM choices (the generated template against the ATen extern) and
// keeps the fastest. Generating a template is what max-autotune *can* do;
// whether it *should* is measured. One choice per GEMM shape
// (gemm_shape_key: type, m, n, k, bias; sibling GEMMs the scheduler merged
// into one template kernel are one choice, their shapes joined by " + "),
// the same on every rank:
//   1. the warm-up forward compiles every linear as a template;
//   2. shapes that neither the golden nor the cache decides are timed: every
//      rank runs kTimedForwards forwards under a GemmTimingProbe (a forward
//      holds collectives, so every rank runs it), and rank 0 takes the
//      median of its own template launches per shape; then every rank times
//      the library call (linear_batch, what the extern runs: one batched
//      call for merged siblings of one shape) on operands of the same shape,
//      at once, so that both sides are timed under the same load, and rank
//      0's figure counts;
//   3. rank 0's table goes to every rank through the c10d store; each
//      adopts it (AtenExecutor::set_template_gemms), and the next forward
//      compiles the graphs again with it (a shape first seen later, as at a
//      recompile for other input shapes, runs the library call);
//   4. the record keeps the table (`gemm_choices`, harness/RECORD.md).
// A template is chosen when its median is below the library call's: a
// template that fuses a prologue (RMSNorm) or an epilogue is timed with it,
// the library call without it (so the comparison leans toward the library
// call by that work's time; Inductor times the bare GEMM choices).
#pragma once
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "kernels/cpu/runtime.h"

namespace fg {

// Forwards timed per shape not yet decided.
constexpr int kTimedForwards = 5;

// Times each template launch of a forward (host clock; cpu).
class GemmTimingProbe : public LaunchProbe {
 public:
  void open() override { t0_ = std::chrono::steady_clock::now(); }
  void close(LaunchRecord& r) override;
  // median µs per shape over every forward timed
  std::map<std::string, double> medians() const;

 private:
  std::chrono::steady_clock::time_point t0_;
  std::map<std::string, std::vector<double>> us_;
};

// The library call's median µs for a shape key (gemm_shape_key, or several
// joined by " + ": one batched call where they are one shape, else one call
// each) on the current thread settings: linear_batch on seeded operands,
// `reps` timed calls after two warm-up calls. Throws InternalError on a key
// it cannot read.
double library_gemm_us(const std::string& shape, int reps = 9);
// The shape keys of a choice ("a + b" -> {a, b}).
std::vector<std::string> gemm_group_shapes(const std::string& group);

// One entry of a choice table. source: "measured", "golden", "cache" or
// "forced" (FUSEGATE_FAULT=gemm_choice:template|library, tests only).
struct GemmChoice {
  std::string shape, choice, source;  // choice: "template" or "library"
  double template_us = 0, library_us = 0;  // 0 where not measured in this run
};

// The choice for each measured shape: a template where it was faster.
GemmChoice choose_gemm(const std::string& shape, double template_us, double library_us);

}  // namespace fg
