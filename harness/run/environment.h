// The environment key: everything outside fusegate's own code that decides
// the bits of a run's outputs, found by measurement (docs/ARCHITECTURE.md,
// "The environment key", has the table of what was flipped and what moved).
// Exact digests are compared only between runs whose keys are equal; a
// golden keeps the exact digests of every environment it was blessed in.
#pragma once
#include <string>

#include "fusion/options.h"
#include "harness/record/record.h"

namespace fg {

// One object of strings, the same on every rank of a run and in the
// launcher. cpu: backend, libtorch (version), libtorch_build (a hash of
// LibTorch's build configuration), aten_capability (the CPU kernels ATen
// dispatches to: ATEN_CPU_CAPABILITY or its own choice), onednn (version
// and effective ISA), blas (the library that answers sgemm_, with
// OpenBLAS's core), compiler and compiler_flags (the generated kernels'),
// libc, cpu (vendor, family, model) and isa (the CPU's vector and matrix
// extensions). cuda: backend, libtorch, libtorch_build, aten_capability
// (the inputs are drawn on the cpu), gpu, driver, cuda_runtime, cublas,
// cublaslt, cudnn, nccl, nvrtc, compiler. Then
// "fingerprint": a hash of all of them.
// (harness/record/golden_env.h: environment_fingerprint).
record::Environment environment(Backend backend);

// What is wrong with ATEN_CPU_CAPABILITY here: "" when it is unset or asks
// for kernels this CPU can run; else why not (ATen runs the kernels asked
// for, and a CPU without AVX-512 dies of an illegal instruction in the
// first avx512 one: every rank of every check crashed, 48 backtraces, on an
// AMD EPYC with AVX2). A run is then cannot test (125), said once.
std::string aten_capability_problem();

}  // namespace fg
