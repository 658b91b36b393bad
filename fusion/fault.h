// FUSEGATE_FAULT: the one switch for test-only faults. Its value is a
// comma-separated list; each item is one of the names below. An unknown item
// is bad input (user_error listing the known ones), so a typo cannot turn a
// fault test into a silent pass.
//   crash:R             rank R aborts after joining the process group
//   hang:R              rank R stops answering (sleeps forever)
//   crash_at:I          in `fusegate fuzz` jobs, rank 0 aborts on graph I
//                       (the supervisor must name it and go on)
//   attention_fallback  attention runs the composite (matmul, mask, softmax,
//                       matmul) instead of LibTorch's fused kernel, so the
//                       device-kernel count must catch it
//   occupancy_spill     cuda: every module with a row kernel held to full
//                       occupancy is compiled again without the bound, as
//                       when such a kernel spills (kernels/cuda/cuda_module.cpp)
//   exec_ranks          every CPU rank is forked and exec'd, not forked by
//                       the rank spawner (harness/run/spawner.h): the two
//                       must record the same run
//   fastpath_edit:NAME  fast path NAME's kernel source gets one more line, as
//                       an edit of its file would: its proof must be
//                       invalidated, and so must the proof of a fast path
//                       that runs the same file (fusion/fastpaths/catalog.h)
//   perturb:NODE        scheduler node NODE (as the ledger names it, buf12)
//                       computes 1.5x its value where a generated kernel
//                       fuses it with other nodes: a simulated miscompile
//                       for `fusegate bisect` (codegen/kernel_emitter.cpp)
//   refuse_fusion:reduction  the scheduler refuses every fusion with a
//                       reduction: a changed fusion rule, whose kernel-count
//                       regression `bisect` reports as the ledger diff
//   broken_fusion:reduction  every reduction a generated kernel fuses with
//                       other nodes computes 1.5x its value there: a broken
//                       fusion rule for `fusegate fuzz` to find and minimize
//   broken_decomposition:OP, broken_lowering:OP, broken_fast_path:NAME,
//   broken_codegen:simd|chunked  OP's decomposition, OP's lowering, fast
//                       path NAME's kernel, or kernels written in that
//                       codegen variant compute 1.5x the value there: a
//                       miscompile `bisect` must name at its stage and rule
//   crash_lowering:OP   the compiler fails an internal check (InternalError)
//                       when it lowers OP into generated code, and
//   hang_lowering:OP    never returns from lowering OP: a compiler crash
//                       and hang `bisect --predicate crash|hang` must name
//                       at the lowerings stage (passes/lower.cpp)
//   swiglu_tile:W       gate_up_swiglu's tiles are W (128 or 112) output
//                       columns wherever W divides N, instead of the width
//                       swiglu_tile_n chooses (fusion/fastpaths/gemm_patterns.cpp):
//                       the A/B of the two widths in one build
#pragma once
#include <string>

namespace fg {

// True when FUSEGATE_FAULT holds `name` (a fault without an argument).
bool fault_active(const std::string& name);
// The argument of `name:ARG` in FUSEGATE_FAULT, or "" when absent.
std::string fault_argument(const std::string& name);
// Adds a fault to this process only (diverge_fusion:R becomes
// refuse_fusion:reduction on rank R).
void fault_enable(const std::string& name, const std::string& arg);
// The variables of this process that decide what a run computes
// (FUSEGATE_FAULT, FUSEGATE_BISECT, ATEN_CPU_CAPABILITY), as the prefix of
// a command line that replays it ("FUSEGATE_FAULT=broken_fusion:reduction "),
// each one set, shell-quoted where it needs to be; "" when none is.
// `with_bisect` false leaves FUSEGATE_BISECT out (a command that gives its own).
std::string replay_env(bool with_bisect = true);

}  // namespace fg
