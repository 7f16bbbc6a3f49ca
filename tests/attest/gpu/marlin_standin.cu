// A stand-in for a Marlin GEMM kernel (sparkenv attest's fallback case): named where vLLM's Marlin kernels
// live (namespace marlin, template Marlin: csrc/quantization/gptq_marlin/marlin_template.h), a plain tiled
// float GEMM underneath. Built with nvcc for sm_90, called through ctypes by marlin_case.py.
#include <cuda_runtime.h>

namespace marlin {
template <int threads, int thread_m_blocks, int thread_n_blocks, int thread_k_blocks, int stages>
__global__ void Marlin(const float *a, const float *b, float *c, int m, int n, int k) {
  __shared__ float ta[16][17], tb[16][17];
  int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < k; t += 16) {
    ta[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ? a[(size_t)row * k + t + threadIdx.x] : 0.f;
    tb[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < k) ? b[(size_t)(t + threadIdx.y) * n + col] : 0.f;
    __syncthreads();
    for (int i = 0; i < 16; i++) acc += ta[threadIdx.y][i] * tb[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[(size_t)row * n + col] = acc;
}
}  // namespace marlin

// c[m, n] = a[m, k] @ b[k, n], float32, on `stream`. 0, or the CUDA error.
extern "C" int marlin_gemm(const float *a, const float *b, float *c, int m, int n, int k, void *stream) {
  dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  marlin::Marlin<256, 1, 8, 8, 4><<<grid, block, 0, (cudaStream_t)stream>>>(a, b, c, m, n, k);
  return (int)cudaGetLastError();
}
