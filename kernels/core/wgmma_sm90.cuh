// Hopper (sm_90a) warpgroup tensor-core instructions (conv implicit GEMM, fused attention):
// wgmma.mma_async with f32 accumulation, operands in shared memory described by 64-bit matrix
// descriptors (or, for A, in registers).
// K-major tiles (each row's reduction run contiguous), 128 bytes per row (32 f32 or 64 bf16/f16),
// in the 128-byte swizzle: the 16-byte chunk c of row r sits at chunk c ^ (r % 8) of its row,
// 8-row groups 1024 bytes apart, each group 1024-byte aligned. One instruction covers 64 rows of
// A (one warpgroup, 4 warps x 16 rows), 32, 64 or 128 rows of B and one k-step of 32 bytes (8 tf32
// or 16 bf16/f16); the next k-step starts 32 bytes further (the hardware applies the swizzle to
// the address). MN-major 16-bit tiles (the transpose flags; bf16 only here) use the same bytes
// read the other way: one 128-byte line of 64 M/N elements per k, chunk c of line k at c ^ (k % 8),
// 8-line groups 1024 bytes apart, so a k-step of 16 is 2048 bytes; a tile stored [row][64] serves
// as K-major (k along the row) and MN-major (k down the rows) operand alike.
// Accumulators d[] of a thread of warp w, lane (g = lane/4, t = lane%4): d[4j + e] is
// C(16w + g + 8 (e/2), 8j + 2t + e%2), as mma.sync's C fragments; an A operand in registers has
// mma.sync's A-fragment layout per warp (rows 16w..16w+15), so two adjacent n-tiles of
// accumulators, rounded to 16 bits, are the A fragment of one k-step.
// TF32 operands are f32 bit patterns whose low 13 bits the tensor cores ignore.
// The instructions exist only in the sm_90a image (__CUDA_ARCH_FEAT_SM90_ALL); elsewhere each
// traps. The kernels that use them compile only there (kernels/core/device_image.cuh).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace oomlab::ops::detail {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define OOMLAB_WGMMA 1
#else
#define OOMLAB_WGMMA 0
#endif

// Descriptor of a 128-byte-swizzled operand tile starting at shared address `at`: 8-row (or
// 8-line) groups 1024 bytes apart. The leading offset is unused by K-major tiles (encoded 1) and
// by MN-major tiles of at most 64 elements along M/N (the only ones used here).
__device__ __forceinline__ std::uint64_t wgmma_descriptor(unsigned at) {
  constexpr std::uint64_t kLeadingBytes = 16;
  constexpr std::uint64_t kStrideBytes = 1024;
  constexpr std::uint64_t kSwizzle128 = 1;
  return (static_cast<std::uint64_t>(at & 0x3FFFF) >> 4) | ((kLeadingBytes >> 4) << 16) |
         ((kStrideBytes >> 4) << 32) | (kSwizzle128 << 62);
}

// Byte offset of 16-byte chunk `chunk` of 128-byte line `line` in a 128-byte-swizzled tile
// (1024-byte aligned; the line counted from the tile's start).
__device__ __forceinline__ int swizzled_chunk_offset(int line, int chunk) {
  return line * 128 + ((chunk ^ (line % 8)) * 16);
}

// Orders this thread's earlier shared-memory writes (cp.async, st.shared) before later reads by
// the async proxy (wgmma).
__device__ __forceinline__ void fence_shared_for_wgmma() {
#if OOMLAB_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_fence() {
#if OOMLAB_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if OOMLAB_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
#if OOMLAB_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}

// The accumulators of an m64n32 (16 registers), m64n64 (32) or m64n128 (64) wgmma: their asm
// operand list and bindings, then one wgmma with both operands in shared memory: scale-d comes in
// as the register scale_d (1: accumulate, 0: overwrite), the A and B scales are +1.
#define OOMLAB_WGMMA_REGS16 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define OOMLAB_WGMMA_REGS32 \
  OOMLAB_WGMMA_REGS16 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define OOMLAB_WGMMA_REGS64                                                                                         \
  OOMLAB_WGMMA_REGS32                                                                                               \
      ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, " \
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define OOMLAB_WGMMA_D16 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), \
  "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), \
  "+f"(d[14]), "+f"(d[15])
#define OOMLAB_WGMMA_D32 OOMLAB_WGMMA_D16, \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
  "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
  "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define OOMLAB_WGMMA_D64 OOMLAB_WGMMA_D32, \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), \
  "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), \
  "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), \
  "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), \
  "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define OOMLAB_WGMMA_SS(INSTRUCTION, REGS, OPERANDS, SCALES, OUTPUTS)                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " OPERANDS ";\n"                           \
               "wgmma.mma_async.sync.aligned." INSTRUCTION " {" REGS "}, " SCALES ";\n}\n"    \
               : OUTPUTS                                                                     \
               : "l"(a), "l"(b), "r"(scale_d))

// d(64 x N) (+)= A(64 x k-step) * B(N x k-step)^T, A and B K-major in shared memory; N 64 or 128.
// accumulate false: d = A B^T (d's old values are ignored).
template <class T, int N>
__device__ __forceinline__ void wgmma_tile(float (&d)[N / 2], std::uint64_t a, std::uint64_t b,
                                           bool accumulate = true) {
  const int scale_d = accumulate;
  static_assert(N == 64 || N == 128, "wgmma_tile: n 64 or 128");
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>,
                "wgmma_tile: f32, bf16 or f16 operands");
#if OOMLAB_WGMMA
  if constexpr (N == 64) {
    if constexpr (std::is_same_v<T, float>) {
      OOMLAB_WGMMA_SS("m64n64k8.f32.tf32.tf32", OOMLAB_WGMMA_REGS32, "%34, 0", "%32, %33, p, 1, 1", OOMLAB_WGMMA_D32);
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      OOMLAB_WGMMA_SS("m64n64k16.f32.bf16.bf16", OOMLAB_WGMMA_REGS32, "%34, 0", "%32, %33, p, 1, 1, 0, 0",
                      OOMLAB_WGMMA_D32);
    } else {
      OOMLAB_WGMMA_SS("m64n64k16.f32.f16.f16", OOMLAB_WGMMA_REGS32, "%34, 0", "%32, %33, p, 1, 1, 0, 0",
                      OOMLAB_WGMMA_D32);
    }
  } else {
    if constexpr (std::is_same_v<T, float>) {
      OOMLAB_WGMMA_SS("m64n128k8.f32.tf32.tf32", OOMLAB_WGMMA_REGS64, "%66, 0", "%64, %65, p, 1, 1", OOMLAB_WGMMA_D64);
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      OOMLAB_WGMMA_SS("m64n128k16.f32.bf16.bf16", OOMLAB_WGMMA_REGS64, "%66, 0", "%64, %65, p, 1, 1, 0, 0",
                      OOMLAB_WGMMA_D64);
    } else {
      OOMLAB_WGMMA_SS("m64n128k16.f32.f16.f16", OOMLAB_WGMMA_REGS64, "%66, 0", "%64, %65, p, 1, 1, 0, 0",
                      OOMLAB_WGMMA_D64);
    }
  }
#else
  (void)d, (void)a, (void)b, (void)scale_d;
  __trap();
#endif
}

// d(64 x 32) (+)= A(64 x 16) * B(16 x 32), bf16, both MN-major in shared memory (A along M, B
// along N; attention's dQ = dS K from dS^T and K stored key by key).
__device__ __forceinline__ void wgmma_bf16_n32_mn_mn(float (&d)[16], std::uint64_t a, std::uint64_t b,
                                                     bool accumulate) {
  const int scale_d = accumulate;
#if OOMLAB_WGMMA
  OOMLAB_WGMMA_SS("m64n32k16.f32.bf16.bf16", OOMLAB_WGMMA_REGS16, "%18, 0", "%16, %17, p, 1, 1, 1, 1",
                  OOMLAB_WGMMA_D16);
#else
  (void)d, (void)a, (void)b, (void)scale_d;
  __trap();
#endif
}

// d(64 x 64) += A(64 x 16) * B(16 x 64), bf16 or f16, both MN-major in shared memory (A along M,
// B along N; conv backward-weight, whose reduction runs over pixels stored channel by channel).
template <class T>
__device__ __forceinline__ void wgmma_n64_mn_mn(float (&d)[32], std::uint64_t a, std::uint64_t b) {
  const int scale_d = 1;
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "wgmma_n64_mn_mn: bf16 or f16");
#if OOMLAB_WGMMA
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    OOMLAB_WGMMA_SS("m64n64k16.f32.bf16.bf16", OOMLAB_WGMMA_REGS32, "%34, 0", "%32, %33, p, 1, 1, 1, 1",
                    OOMLAB_WGMMA_D32);
  } else {
    OOMLAB_WGMMA_SS("m64n64k16.f32.f16.f16", OOMLAB_WGMMA_REGS32, "%34, 0", "%32, %33, p, 1, 1, 1, 1",
                    OOMLAB_WGMMA_D32);
  }
#else
  (void)d, (void)a, (void)b, (void)scale_d;
  __trap();
#endif
}

// d(64 x 64) (+)= A(64 x 16) * B(16 x 64), bf16, A in registers (mma.sync A fragments, see the
// top), B MN-major in shared memory (attention's dV += P^T dO and dK += dS^T Q).
__device__ __forceinline__ void wgmma_bf16_n64_rs_mn(float (&d)[32], const std::uint32_t (&a)[4],
                                                     std::uint64_t b, bool accumulate) {
  const int scale_d = accumulate;
#if OOMLAB_WGMMA
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" OOMLAB_WGMMA_REGS32 "}, "
               "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
               : OOMLAB_WGMMA_D32
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
#else
  (void)d, (void)a, (void)b, (void)scale_d;
  __trap();
#endif
}

#undef OOMLAB_WGMMA_SS
#undef OOMLAB_WGMMA_D64
#undef OOMLAB_WGMMA_D32
#undef OOMLAB_WGMMA_D16
#undef OOMLAB_WGMMA_REGS64
#undef OOMLAB_WGMMA_REGS32
#undef OOMLAB_WGMMA_REGS16

}  // namespace oomlab::ops::detail
