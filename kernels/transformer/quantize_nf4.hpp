// NF4 quantisation (QLoRA's 4-bit NormalFloat base weights, Dettmers et al. 2023): bitsandbytes'
// quantize_4bit(quant_type="nf4", blocksize=64, compress_statistics=True), byte for byte in size.
// For x of n values (n a multiple of 64):
//   codes        (n / 2) i8 (bytes): each value of a block of 64 divided by the block's absmax and
//                replaced by the index of the nearest of the 16 NF4 values (quantize_nf4_math.hpp:
//                bitsandbytes' table and thresholds; a value on a threshold takes the lower code);
//                two per byte, the first value of each pair in the high nibble, as bitsandbytes.
//   absmax_q     (n / 64) i8 (bytes): the blocks' absmax, double-quantised: offset = mean of all
//                absmax; each 256 consecutive (absmax - offset) divided by their largest magnitude
//                and stored as the index of the nearest entry of the signed 8-bit dynamic map
//                (bitsandbytes' quantize_blockwise(absmax - offset, blocksize=256)).
//   absmax_scale (ceil(n / 64 / 256) + 1) f32: those 256-blocks' largest magnitudes, then the
//                offset as the last element.
// Dequantised: out[i] = nf4_value(code_i) * (map[absmax_q[b]] * absmax_scale[b / 256] + offset),
// b = i / 64, in f32, rounded once to out's dtype.
//
// Storage: n / 2 + n / 64 + 4 ceil(n / 16384) + 4 bytes, bitsandbytes' packed weight, nested
// absmax, state2.absmax and offset (0.5 + 1/64 + 1/4096 bytes per value). bitsandbytes' QuantState
// also holds per tensor a copy of the 256-entry dynamic map (1 KiB) and the 16-entry NF4 table (64
// bytes); here both are constants of the kernels. Its dequantize also allocates, for the call, the
// absmax in f32 (4 bytes per 64 values); dequantize_nf4 allocates nothing.
//
// Differences from bitsandbytes, by design: an all-zero block stores code 7 (0.0; bitsandbytes
// computes 0 * (1 / 0) = NaN, code 0); the offset is the mean summed in double (bitsandbytes:
// torch's f32 mean), so it may differ in the last bit; the second level takes the exactly nearest
// map entry (ties to the lower) where bitsandbytes' binary search may pick the other neighbour
// near a midpoint; the dynamic map is adamw8bit_math.hpp's, equal to create_dynamic_map() up to
// f32 rounding of its linspace. So a value's code can differ from bitsandbytes' only where it
// lies within rounding of a threshold.
//
// n not a multiple of 64 is refused (bitsandbytes would pad the last block): every weight of the
// supported models is a multiple of 64 values. quantize_nf4 allocates a workspace (Tag::workspace,
// freed before returning) on every device, dry included: the f32 absmax of every block and one
// 8-byte partial sum per 256-block (nf4_quantize_workspace_bytes). GPU and CPU give the same bits
// (the mean is summed in the same order on both).
#pragma once
#include <cstddef>
#include <cstdint>

#include "harness/memory/source.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::ops {

struct Nf4Shapes {
  Shape codes;         // (n / 2)
  Shape absmax_q;      // (n / 64)
  Shape absmax_scale;  // (ceil(n / 16384) + 1)
};
// Throws std::invalid_argument unless n > 0 and n % 64 == 0.
Nf4Shapes nf4_shapes(std::int64_t numel);
// Bytes of the three tensors for n values.
std::size_t nf4_storage_bytes(std::int64_t numel);
// Bytes quantize_nf4 allocates for its scratch (before the allocator's rounding).
std::size_t nf4_quantize_workspace_bytes(std::int64_t numel);

// x: any shape, f32, bf16 or f16; codes, absmax_q (i8) and absmax_scale (f32) hold the element
// counts of nf4_shapes(n), in any shape (codes as (out, in / 2) for an (out, in) weight, say).
void quantize_nf4(Tensor& codes, Tensor& absmax_q, Tensor& absmax_scale, const Tensor& x);
// out: any shape of n values, f32, bf16 or f16.
void dequantize_nf4(Tensor& out, const Tensor& codes, const Tensor& absmax_q, const Tensor& absmax_scale);

namespace cuda {
// block_absmax (n / 64) f32 and partial_sums (n / 16384 rounded up) doubles: the workspace.
void quantize_nf4(Tensor& codes, Tensor& absmax_q, Tensor& absmax_scale, const Tensor& x, float* block_absmax,
                  double* partial_sums, memory::StreamHandle stream);
void dequantize_nf4(Tensor& out, const Tensor& codes, const Tensor& absmax_q, const Tensor& absmax_scale,
                    memory::StreamHandle stream);
}  // namespace cuda

}  // namespace oomlab::ops
