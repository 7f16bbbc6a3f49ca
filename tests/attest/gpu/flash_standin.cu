// A stand-in for flash-attn's CUDA extension (sparkenv attest's G2 case): a small, correct attention forward
// whose kernel lives where FlashAttention-2 puts its own (namespace flash, template flash_fwd_kernel, a
// Flash_fwd_params argument: csrc/flash_attn/src/flash_fwd_kernel.h), so torch's profiler names it as it
// names the real one. Built with nvcc for sm_90 (machine code, uncompressed), called through ctypes by
// standin/flash_attn, which registers it as flash-attn 2.6+ does: a torch custom operator.
#include <cuda_runtime.h>
#include <math.h>

namespace flash {
struct Flash_fwd_params {
  const float *q, *k, *v;
  float *o;
  int bh, seqlen;
  float scale;
};

// One thread per query row: scores against every key (causal: up to the row), online softmax, weighted sum.
template <int kHeadDim, bool Is_causal>
__global__ void flash_fwd_kernel(Flash_fwd_params p) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= p.bh * p.seqlen) return;
  int head = row / p.seqlen, i = row % p.seqlen;
  const float *q = p.q + (size_t)row * kHeadDim;
  const float *k = p.k + (size_t)head * p.seqlen * kHeadDim;
  const float *v = p.v + (size_t)head * p.seqlen * kHeadDim;
  float acc[kHeadDim];
  for (int d = 0; d < kHeadDim; d++) acc[d] = 0.f;
  float m = -INFINITY, l = 0.f;
  int last = Is_causal ? i : p.seqlen - 1;
  for (int j = 0; j <= last; j++) {
    float s = 0.f;
    for (int d = 0; d < kHeadDim; d++) s += q[d] * k[(size_t)j * kHeadDim + d];
    s *= p.scale;
    float m2 = fmaxf(m, s), c = __expf(m - m2), e = __expf(s - m2);
    l = l * c + e;
    for (int d = 0; d < kHeadDim; d++) acc[d] = acc[d] * c + e * v[(size_t)j * kHeadDim + d];
    m = m2;
  }
  float *o = p.o + (size_t)row * kHeadDim;
  for (int d = 0; d < kHeadDim; d++) o[d] = acc[d] / l;
}
}  // namespace flash

// q, k, v, o: [bh, seqlen, 64] float32, contiguous; on `stream`. 0, or the CUDA error.
extern "C" int flash_fwd_hdim64(const float *q, const float *k, const float *v, float *o, int bh, int seqlen,
                                int causal, void *stream) {
  flash::Flash_fwd_params p{q, k, v, o, bh, seqlen, 0.125f};
  int rows = bh * seqlen, threads = 128, blocks = (rows + threads - 1) / threads;
  cudaStream_t s = (cudaStream_t)stream;
  if (causal)
    flash::flash_fwd_kernel<64, true><<<blocks, threads, 0, s>>>(p);
  else
    flash::flash_fwd_kernel<64, false><<<blocks, threads, 0, s>>>(p);
  return (int)cudaGetLastError();
}
