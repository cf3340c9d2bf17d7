// Warp-level tensor-core and async-copy instructions of sm_80+, shared by the conv implicit GEMM
// and fused attention: cp.async (16- and 4-byte global -> shared, zero-fill), ldmatrix (plain and
// .trans) and mma.sync m16n8k16 with f32 accumulation, for bf16 and f16; mma.sync m16n8k8 on
// TF32 for f32 operands (f32 bit patterns; the tensor cores ignore the low 13 bits, as Hopper's
// wgmma does for cuDNN's default f32 convolutions).
// Fragment layouts of m16n8k16 (PTX ISA), g = lane / 4, t = lane % 4:
//   A 16x16: a[0] = (g, 2t..), a[1] = (g+8, 2t..), a[2] = (g, 2t+8..), a[3] = (g+8, 2t+8..)
//   B 16x8 (k x n): b[0] = (k 2t..2t+1, n g), b[1] = (k 2t+8.., n g)
//   C 16x8 f32: c[0], c[1] = (g, 2t), (g, 2t+1); c[2], c[3] = (g+8, 2t), (g+8, 2t+1)
// m16n8k8 (tf32): A 16x8: a[0] = (g, t), a[1] = (g+8, t), a[2] = (g, t+4), a[3] = (g+8, t+4);
//   B 8x8 (k x n): b[0] = (k t, n g), b[1] = (k t+4, n g); C as above.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace oomlab::ops::detail {

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared; when !valid nothing is read and the 16 bytes are zero-filled.
__device__ __forceinline__ void cp_async_16(void* shared_dst, const void* global_src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared_dst)),
               "l"(global_src), "r"(valid ? 16 : 0));
}
// 4 bytes (row statistics); .ca is the only form for copies under 16 bytes.
__device__ __forceinline__ void cp_async_4(void* shared_dst, const void* global_src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(shared_dst)),
               "l"(global_src), "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits for every copy this thread issued, committed or not.
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
// Waits until at most `Pending` of this thread's committed groups are still in flight.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

// Lane l addresses row l % 8 of 8x8 block l / 8 (16-byte aligned rows). Without .trans thread
// (g, t) receives (row g, cols 2t..2t+1) of each block; with .trans (rows 2t..2t+1, col g).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* row, bool transpose) {
  if (transpose) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
  }
}
// Two blocks; lanes 0-15 supply the addresses.
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], const void* row, bool transpose) {
  if (transpose) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(shared_address(row)));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(shared_address(row)));
  }
}

// c += a * b on one 16x8x16 tile, f32 accumulation.
template <class T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    static_assert(std::is_same_v<T, __half>, "mma_16816: bf16 or f16 operands");
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// c += a * b on one 16x8x8 tile of TF32 operands (f32 bit patterns: the tensor cores ignore
// the low 13 bits), f32 accumulation.
__device__ __forceinline__ void mma_1688_tf32(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace oomlab::ops::detail
