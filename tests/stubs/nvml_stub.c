/* FAKE libnvidia-ml.so.1 for tests (this machine has no NVIDIA driver): the real pynvml loads it with
 * ctypes exactly as it loads NVIDIA's library, and calls the same symbols. Values are those recorded on
 * real machines (tests/fixtures/machines): STUB_NVML=h200 | gb10 | old-driver | hang.
 * STUB_NVML_PROCS="pid:MiB,pid:MiB" lists running compute processes. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
enum { OK = 0, NOT_SUPPORTED = 3, INVALID_ARGUMENT = 2, INSUFFICIENT_SIZE = 7 };
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId, computeInstanceId; } nvmlProcessInfo_t;

static int dev = 0;
static const char *mode(void) { const char *m = getenv("STUB_NVML"); return m ? m : "h200"; }
static int is(const char *m) { return strcmp(mode(), m) == 0; }
static int gb10(void) { return is("gb10"); }

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; if (is("hang")) sleep(120); return OK; }
nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlShutdown(void) { return OK; }
const char *nvmlErrorString(nvmlReturn_t r) { return r == NOT_SUPPORTED ? "Not Supported" : "Unknown Error"; }
nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int n) {
    snprintf(v, n, "%s", is("old-driver") ? "535.104.05" : gb10() ? "580.126.09" : "580.159.04"); return OK; }
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { *v = is("old-driver") ? 12020 : 13000; return OK; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *c) { *c = 1; return OK; }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h) {
    if (i != 0) return INVALID_ARGUMENT; *h = &dev; return OK; }
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *v, unsigned int n) {
    (void)h; snprintf(v, n, "%s", gb10() ? "NVIDIA GB10" : "NVIDIA H200"); return OK; }
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *v, unsigned int n) {
    (void)h; snprintf(v, n, "%s", gb10() ? "GPU-d51f1f69-4063-9beb-b3e9-734334ec9006" : "GPU-00000000-stub-h200"); return OK; }
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t h, int *major, int *minor) {
    (void)h; *major = gb10() ? 12 : 9; *minor = gb10() ? 1 : 0; return OK; }
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned int *t) {
    (void)h; (void)sensor; *t = gb10() ? 35 : 39; return OK; }
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int *mw) { (void)h; *mw = gb10() ? 11170 : 79460; return OK; }
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned int *mw) {
    (void)h; if (gb10()) return NOT_SUPPORTED; *mw = 700000; return OK; }
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t h, unsigned int *mw) {
    (void)h; if (gb10()) return NOT_SUPPORTED; *mw = 700000; return OK; }
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m) {
    (void)h; if (gb10()) return NOT_SUPPORTED;
    m->total = 143771ULL << 20; m->used = 0; m->free = m->total; return OK; }
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u) { (void)h; u->gpu = 0; u->memory = 0; return OK; }
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t h, unsigned long long *r) { (void)h; *r = 1; return OK; }
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned int *mhz) { (void)h; (void)type; *mhz = 345; return OK; }
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t h, int type, unsigned int *mhz) { (void)h; (void)type; *mhz = 1980; return OK; }
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned int *count, nvmlProcessInfo_t *out) {
    (void)h;
    const char *spec = getenv("STUB_NVML_PROCS");
    unsigned int n = 0;
    nvmlProcessInfo_t procs[16];
    if (spec && *spec) {
        char buf[512]; snprintf(buf, sizeof buf, "%s", spec);
        for (char *tok = strtok(buf, ","); tok && n < 16; tok = strtok(NULL, ",")) {
            unsigned int pid = 0; unsigned long long mib = 0;
            if (sscanf(tok, "%u:%llu", &pid, &mib) == 2) {
                procs[n].pid = pid; procs[n].usedGpuMemory = mib << 20;
                procs[n].gpuInstanceId = procs[n].computeInstanceId = 0xFFFFFFFF; n++;
            }
        }
    }
    if (n == 0) { *count = 0; return OK; }
    if (out == NULL || *count < n) { *count = n; return INSUFFICIENT_SIZE; }
    memcpy(out, procs, n * sizeof *procs); *count = n; return OK;
}
