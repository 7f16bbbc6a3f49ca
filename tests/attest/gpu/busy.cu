// A CUDA program with no Python and no torch (sparkenv attest's NVML case): holds MIB MiB of GPU memory and
// keeps the GPU busy for SECONDS. Usage: busy SECONDS [MIB]
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__global__ void spin(float *x, size_t n, int rounds) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int r = 0; r < rounds; r++) v = v * 0.999f + 0.001f;
  x[i] = v;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 10.0;
  size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 512, n = mib * (1 << 20) / sizeof(float);
  float *x;
  if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess) { fprintf(stderr, "busy: cudaMalloc failed\n"); return 1; }
  cudaMemset(x, 0, n * sizeof(float));
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long launches = 0;
  do {
    spin<<<(unsigned)((n + 255) / 256), 256>>>(x, n, 64);
    cudaDeviceSynchronize();
    launches++;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
  printf("busy: %ld launches over %zu MiB\n", launches, mib);
  cudaFree(x);
  return 0;
}
