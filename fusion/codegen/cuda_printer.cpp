#include "fusion/codegen/cuda_printer.h"

#include <algorithm>

namespace fg {

std::string CudaPrinter::outer_loop(int64_t numel, bool reduction) const {
  std::string n = std::to_string(numel);
  const std::string ix = index_type();
  if (reduction) return "for (" + ix + " x = blockIdx.x; x < " + n + "; x += gridDim.x)";
  return "for (" + ix + " x = (" + ix + ")blockIdx.x * blockDim.x + threadIdx.x; x < " + n + "; x += (" + ix +
         ")gridDim.x * blockDim.x)";
}

namespace {
constexpr int64_t kLanes = CStylePrinter::kChunkLanes;
// Elements of a row a thread aims to hold. On an H200, RMSNorm over 8192 x
// 4096 bf16 reached 79% of the copy bandwidth at 16 (256 threads a row),
// 74% at 32, and 40% at 128 (a warp a row: more rows in flight, but no
// faster).
constexpr int64_t kRowElems = 16;
constexpr int64_t kMaxRowRegisters = 32;
constexpr int kPointwiseThreads = 256;
}  // namespace

int cuda_row_threads(int64_t rnumel) {
  int64_t want = (rnumel + kRowElems - 1) / kRowElems;
  int64_t t = 32;
  while (t < want && t < 1024) t *= 2;
  return static_cast<int>(t);
}

namespace {
// Elements of a row each thread keeps in registers (0: the row strides).
int64_t row_elems(int64_t rnumel) {
  int64_t t = cuda_row_threads(rnumel);
  int64_t e = (rnumel + t - 1) / t;
  if (rnumel % kLanes == 0) e = (rnumel + t * kLanes - 1) / (t * kLanes) * kLanes;  // whole chunks
  return e <= kMaxRowRegisters ? e : 0;
}
}  // namespace

int64_t CudaPrinter::row_registers(int64_t rnumel) const { return serial_rows_ ? 0 : row_elems(rnumel); }

bool cuda_chunked(int64_t numel, int64_t rnumel) {
  if (rnumel > 1) return rnumel % kLanes == 0 && row_elems(rnumel) > 0;
  return numel % kLanes == 0;
}

std::string CudaPrinter::chunk_loop(int64_t numel, int64_t rnumel) const {
  if (rnumel > 1)
    return "#pragma unroll\nfor (int c = 0; c < " + std::to_string(row_registers(rnumel) / kLanes) + "; ++c)";
  const std::string ix = index_type();
  return "for (" + ix + " q = (" + ix + ")blockIdx.x * blockDim.x + threadIdx.x; q < " +
         std::to_string(numel / kLanes) + "; q += (" + ix + ")gridDim.x * blockDim.x)";
}

std::string CudaPrinter::chunk_prologue(int64_t numel, int64_t rnumel) const {
  return "const " + index_type() + " q = (" + index_type() + ")c * " + std::to_string(cuda_row_threads(rnumel)) +
         " + threadIdx.x; if (q >= " + std::to_string(rnumel / kLanes) + ") continue;";
}

std::string CudaPrinter::lane_loop() const {
  return "#pragma unroll\nfor (int v = 0; v < " + std::to_string(kLanes) + "; ++v)";
}

std::string CudaPrinter::lane_prologue(int64_t numel, int64_t rnumel) const {
  std::string l = std::to_string(kLanes);
  if (rnumel > 1) return "const int j = c * " + l + " + v; const " + index_type() + " r = q * " + l + " + v;";
  return "const " + index_type() + " x = q * " + l + " + v;";
}

std::string CudaPrinter::chunk_load(const std::string& st, const std::string& name, const std::string& ptr_at) const {
  return "const FgChunk<" + st + "> " + name + " = fg_load_chunk(" + ptr_at + ");";
}
std::string CudaPrinter::chunk_assign(const std::string& name, const std::string& ptr_at) const {
  return name + " = fg_load_chunk(" + ptr_at + ");";
}
std::string CudaPrinter::chunk_decl(const std::string& st, const std::string& name) const {
  return "FgChunk<" + st + "> " + name + "{};";
}
std::string CudaPrinter::out_chunk_decl(const std::string& name) const { return "FgOutChunk " + name + ";"; }
std::string CudaPrinter::chunk_store(DType t, const std::string& name, const std::string& ptr_at) const {
  std::string f = t == DType::BF16 ? "fg_store_chunk_bf16" : (t == DType::F16 ? "fg_store_chunk_f16" : "fg_store_chunk_f32");
  return f + "(" + ptr_at + ", " + name + ");";
}

// Rows that fit in registers run an unrolled loop of a known trip count, so
// the per-thread arrays stay in registers; longer rows stride. (Rows whose
// length is a multiple of 8 run in chunks instead: cuda_chunked.)
std::string CudaPrinter::inner_loop(int64_t rnumel) const {
  if (serial_rows_) return "for (" + index_type() + " r = 0; r < " + std::to_string(rnumel) + "; ++r)";
  int64_t e = row_registers(rnumel);
  if (e == 0) return "for (" + index_type() + " r = threadIdx.x; r < " + std::to_string(rnumel) + "; r += blockDim.x)";
  return "#pragma unroll\nfor (int j = 0; j < " + std::to_string(e) + "; ++j)";
}

std::string CudaPrinter::inner_loop_prologue(int64_t rnumel) const {
  if (row_registers(rnumel) == 0) return "";
  return "const " + index_type() + " r = threadIdx.x + (" + index_type() + ")j * " +
         std::to_string(cuda_row_threads(rnumel)) +
         "; if (r >= " + std::to_string(rnumel) + ") continue;";
}

std::string CudaPrinter::combine_partials(const std::string& acc, Op reduce_op) const {
  if (serial_rows_) return "";  // every thread walked the whole row
  // min as the negated max of the negated values (NaN stays NaN): the
  // prelude, which the fast paths' proofs hash, stays as it is
  if (reduce_op == Op::Amin) return acc + " = -fg_block_max(-" + acc + ");";
  if (reduce_op == Op::Argmax) return "fg_block_argmax(" + acc + "v, " + acc + ");";
  return acc + " = " + (reduce_op == Op::Sum ? "fg_block_sum(" : "fg_block_max(") + acc + ");";
}

std::string CudaPrinter::op_text(Op op, DType t, const std::vector<std::string>& a, const Attrs& attrs) const {
  // the same table, with CUDA's math functions in place of std::
  std::string s = CStylePrinter::op_text(op, t, a, attrs);
  for (size_t at = s.find("std::"); at != std::string::npos; at = s.find("std::", at)) s.erase(at, 5);
  return s;
}

std::string CudaPrinter::signature(const std::string& name) const {
  // A block of 512 or 1024 threads leaves 128 or 64 registers a thread: the
  // bound makes NVRTC keep to them (spilling the rest) instead of emitting a
  // kernel that cannot launch ("too many resources requested", found by
  // fusegate fuzz on a var over 15841 elements: 1024 threads, 16 cached each)
  const int threads = sig_rnumel_ > 1 ? cuda_row_threads(sig_rnumel_) : kPointwiseThreads;
  std::string bounds = threads >= 512 ? "__launch_bounds__(" + std::to_string(threads) + ") " : "";
  if (cuda_full_occupancy(sig_rnumel_, sig_row_words_))
    bounds = "FG_FULL_OCCUPANCY(" + std::to_string(threads) + ") ";
  return "extern \"C\" __global__ void " + bounds + name + "(FgArgs args)";
}

// A row kernel runs a block a row, its rows in flight as many as fit on the
// chip at once: the block's registers decide how many. RMSNorm over 1024 x
// 4096 bf16 (a block of 256 threads a row, the row and the weight held in
// registers: 16 words a thread) took 40 registers a thread from NVRTC, so
// 6 blocks fit on an SM: 792 rows on an H100's 132 SMs, and the other 232
// ran as a second wave (9.5 us where Triton's kernel took 5.4, measured on
// two H100 on 2026-11-26). Held to 32 registers (8 blocks of 256 an SM, 2048
// threads) ptxas compiles it without a spill and every row runs in one
// wave. A kernel whose rows hold more than kFullOccupancyWords registers a
// thread (add + RMSNorm holds three rows: 24) keeps the compiler's own
// count, which the bound would turn into spills (60 bytes a thread at 32).
// Rows of one warp are left alone: an SM runs at most 32 blocks, so 32
// threads a block reach 1024 threads an SM at up to 64 registers without
// any bound, and a kernel that takes more needs them (qwen3_block's RoPE +
// q/k RMSNorm, 32 threads a row, took 118 registers; held to 64 it spilled
// 240 bytes a thread). The bound is a macro, FG_FULL_OCCUPANCY: the module
// is compiled again without it when a kernel that asks for it spills
// anyway (kernels/cuda/cuda_module.cpp).
bool cuda_full_occupancy(int64_t rnumel, int64_t row_words) {
  constexpr int64_t kFullOccupancyWords = 16;
  const int threads = rnumel > 1 ? cuda_row_threads(rnumel) : 0;
  return threads >= 64 && threads < 512 && row_words >= 0 && row_words <= kFullOccupancyWords;
}

std::string CudaPrinter::prelude() const { return cuda_kernel_prelude() + cuda_generated_extras(); }

const std::string& cuda_generated_extras() {
  static const std::string text = R"(
// helpers of generated kernels only (not hashed into fast path proofs)
// a row kernel held to the registers that let 2048 threads an SM run
// (cuda_full_occupancy); the module is compiled with FG_NO_FULL_OCCUPANCY
// when such a kernel spills; an SM of sm_80 and sm_90 runs 2048 threads in
// at most 32 blocks (other architectures hold fewer: no bound there)
#define FG_BLOCKS_AN_SM(threads) (2048 / (threads) < 32 ? 2048 / (threads) : 32)
#if !defined(FG_NO_FULL_OCCUPANCY) && (__CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 900)
#define FG_FULL_OCCUPANCY(threads) __launch_bounds__(threads, FG_BLOCKS_AN_SM(threads))
#else
#define FG_FULL_OCCUPANCY(threads)
#endif
typedef int int32_t;
typedef unsigned char uint8_t;
// argmax: NaN is the largest value; ties and NaNs go to the first index
template <typename T> __device__ __forceinline__ bool fg_argmax_better(T v, int64_t i, T bv, int64_t bi) {
  if (v != v) return bv == bv || i < bi;
  if (bv != bv) return false;
  return v > bv || (v == bv && i < bi);
}
// a row's (value, index) partials combined, as fg_block_reduce combines one
template <typename T> __device__ __forceinline__ void fg_block_argmax(T& v, int64_t& i) {
  __shared__ T pv[32];
  __shared__ int64_t pi[32];
  for (int o = 16; o > 0; o >>= 1) {
    const T ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int64_t oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (fg_argmax_better(ov, oi, v, i)) { v = ov; i = oi; }
  }
  if (blockDim.x == 32) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) { pv[warp] = v; pi[warp] = i; }
  __syncthreads();
  v = pv[0]; i = pi[0];
  for (int w = 1; w < warps; ++w)
    if (fg_argmax_better(pv[w], pi[w], v, i)) { v = pv[w]; i = pi[w]; }
}
)" + sort_row_helper("__device__");
  return text;
}

const std::string& cuda_kernel_prelude() {
  static const std::string text = R"(// generated by fusegate: CUDA kernels (NVRTC, sm_90)
typedef long long int64_t;
typedef unsigned short uint16_t;
#define INT64_C(c) c##LL
#define INT64_MIN (-9223372036854775807LL - 1)
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
struct FgArgs { void* p[32]; };

__device__ __forceinline__ float fg_bf16_to_float(uint16_t v) { return __uint_as_float(((unsigned)v) << 16); }
// round to nearest even in one instruction (a NaN becomes the canonical 0x7fff)
__device__ __forceinline__ uint16_t fg_float_to_bf16(float f) {
  uint16_t v; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(v) : "f"(f)); return v;
}
__device__ __forceinline__ float fg_round_bf16(float f) { return fg_bf16_to_float(fg_float_to_bf16(f)); }
__device__ __forceinline__ float fg_f16_to_float(uint16_t v) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v)); return f;
}
__device__ __forceinline__ uint16_t fg_float_to_f16(float f) {
  uint16_t v; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(v) : "f"(f)); return v;
}
__device__ __forceinline__ float fg_round_f16(float f) { return fg_f16_to_float(fg_float_to_f16(f)); }
template <typename T> __device__ __forceinline__ T fg_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <typename T> __device__ __forceinline__ T fg_relu(T a) { return a != a ? a : (a > T(0) ? a : T(0)); }
template <typename T> __device__ __forceinline__ T fg_gelu_erf(T a) { return T(0.5) * a * (T(1) + erf(a * T(0.70710678118654752440))); }
template <typename T> __device__ __forceinline__ T fg_gelu_tanh(T a) {
  return T(0.5) * a * (T(1) + tanh(T(0.79788456080286535588) * (a + T(0.044715) * a * a * a)));
}
__device__ __forceinline__ int64_t fg_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Partial results of a row's threads, combined: shuffles within each warp,
// then the warps' results through shared memory. Every thread gets the total.
template <typename T, typename F>
__device__ __forceinline__ T fg_block_reduce(T v, F f) {
  __shared__ T part[32];
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (blockDim.x == 32) return v;  // one warp: the shuffles gave every lane the total
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();  // part[] may still be read by the previous combine
  if (lane == 0) part[warp] = v;
  __syncthreads();
  v = part[0];
  for (int w = 1; w < warps; ++w) v = f(v, part[w]);
  return v;
}
struct FgSum { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct FgMax { template <typename T> __device__ T operator()(T a, T b) const { return fg_max(a, b); } };
template <typename T> __device__ __forceinline__ T fg_block_sum(T v) { return fg_block_reduce(v, FgSum()); }
template <typename T> __device__ __forceinline__ T fg_block_max(T v) { return fg_block_reduce(v, FgMax()); }

// 8 consecutive elements of storage type S, as registers hold them (2-byte
// elements two a register); element v reads as c[v] and is written with
// c.set(v, s). Loads and stores are one 16-byte access (two for 4-byte types)
// where the address is 16-byte aligned, 8 scalar ones where it is not.
template <typename S> struct FgChunk;
template <> struct FgChunk<uint16_t> {
  uint4 w;
  __device__ __forceinline__ uint16_t operator[](int v) const {
    const unsigned u = (&w.x)[v >> 1];
    return (uint16_t)((v & 1) ? (u >> 16) : (u & 0xffffu));
  }
  __device__ __forceinline__ void set(int v, uint16_t s) {
    unsigned& u = (&w.x)[v >> 1];
    u = (v & 1) ? ((u & 0xffffu) | ((unsigned)s << 16)) : ((u & 0xffff0000u) | s);
  }
};
template <> struct FgChunk<float> {
  float4 a, b;
  __device__ __forceinline__ float operator[](int v) const { return v < 4 ? (&a.x)[v] : (&b.x)[v - 4]; }
  __device__ __forceinline__ void set(int v, float s) { (v < 4 ? (&a.x)[v] : (&b.x)[v - 4]) = s; }
};
__device__ __forceinline__ bool fg_aligned16(const void* p) { return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0; }
__device__ __forceinline__ FgChunk<uint16_t> fg_load_chunk(const uint16_t* p) {
  FgChunk<uint16_t> c{};
  if (fg_aligned16(p)) {
    c.w = *reinterpret_cast<const uint4*>(p);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) c.set(i, p[i]);
  }
  return c;
}
__device__ __forceinline__ FgChunk<float> fg_load_chunk(const float* p) {
  FgChunk<float> c;
  if (fg_aligned16(p)) {
    c.a = reinterpret_cast<const float4*>(p)[0];
    c.b = reinterpret_cast<const float4*>(p)[1];
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) c.set(i, p[i]);
  }
  return c;
}
// Computed values of a chunk, converted to the storage type when stored:
// pairs of bf16/f16 in one instruction (cvt.rn.bf16x2.f32, round to
// nearest even as a scalar store rounds).
struct FgOutChunk { float s[8]; };
__device__ __forceinline__ unsigned fg_pack_bf16x2(float lo, float hi) {
  unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}
__device__ __forceinline__ unsigned fg_pack_f16x2(float lo, float hi) {
  unsigned r; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}
template <typename Pack>
__device__ __forceinline__ void fg_store_chunk_16(uint16_t* p, const FgOutChunk& c, Pack pack) {
  uint4 w = make_uint4(pack(c.s[0], c.s[1]), pack(c.s[2], c.s[3]), pack(c.s[4], c.s[5]), pack(c.s[6], c.s[7]));
  if (fg_aligned16(p)) {
    *reinterpret_cast<uint4*>(p) = w;
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) p[i] = (uint16_t)((&w.x)[i >> 1] >> ((i & 1) * 16));
  }
}
__device__ __forceinline__ void fg_store_chunk_bf16(uint16_t* p, const FgOutChunk& c) { fg_store_chunk_16(p, c, fg_pack_bf16x2); }
__device__ __forceinline__ void fg_store_chunk_f16(uint16_t* p, const FgOutChunk& c) { fg_store_chunk_16(p, c, fg_pack_f16x2); }
__device__ __forceinline__ void fg_store_chunk_f32(float* p, const FgOutChunk& c) {
  if (fg_aligned16(p)) {
    reinterpret_cast<float4*>(p)[0] = make_float4(c.s[0], c.s[1], c.s[2], c.s[3]);
    reinterpret_cast<float4*>(p)[1] = make_float4(c.s[4], c.s[5], c.s[6], c.s[7]);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) p[i] = c.s[i];
  }
}
)";
  return text;
}

KernelProgram generate_cuda(const LoweredGraph& g, const Schedule& s) { return CudaPrinter(g).print(s); }

LaunchShape cuda_launch_shape(int64_t numel, int64_t rnumel, int sm_count, bool chunked) {
  LaunchShape l;
  if (rnumel > 1) {
    // a row per block; rows in flight: as many blocks as fit on the chip
    l.threads = cuda_row_threads(rnumel);
    l.blocks = std::min<int64_t>(numel, static_cast<int64_t>(sm_count) * (2048 / l.threads) * 4);
  } else {
    int64_t items = chunked ? numel / kLanes : numel;  // chunks or elements
    l.threads = kPointwiseThreads;
    l.blocks = std::min<int64_t>((items + kPointwiseThreads - 1) / kPointwiseThreads, static_cast<int64_t>(sm_count) * 16);
  }
  l.blocks = std::max<int64_t>(l.blocks, 1);
  return l;
}

}  // namespace fg
