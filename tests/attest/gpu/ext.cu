// A tiny CUDA extension for `sparkenv attest`'s PTX JIT case: built once with PTX only
// (-gencode arch=compute_90,code=compute_90) and once with machine code (code=sm_90).
#include <cuda_runtime.h>

__global__ void sparkenv_attest_saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" int run_saxpy(int n, int reps) {
  float *x, *y;
  if (cudaMalloc(&x, n * sizeof(float)) || cudaMalloc(&y, n * sizeof(float))) return -1;
  cudaMemset(x, 0, n * sizeof(float));
  cudaMemset(y, 0, n * sizeof(float));
  for (int r = 0; r < reps; r++) sparkenv_attest_saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
  int rc = (int)cudaDeviceSynchronize();
  cudaFree(x);
  cudaFree(y);
  return rc;
}
