/* probe.c: what the cpu backend reports of the machine (`mpsrun info`) and
   `bench matmul`'s baseline, cblas_sgemm called on buffers of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <dirent.h>
#include <sys/syscall.h>
#endif
#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#include "../backend.h"
#include "blas.h"
#include "isa.h"
#include "kernels.h"

double mps_cpu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Waits (up to half a second) until no other thread of this process is
   running. OpenBLAS's own threads spin for a while after a call (2^28 cycles
   by default) and would take a core from the plan's pool when bench times
   mpsrun next: its timings were bimodal, 0.06 or 0.32 ms at n = 128 on 2
   cores. Where mps_blas_set_threads(1) stops them (blas.c) it returns at
   once; it stays for BLAS builds that cannot. Linux only (/proc); elsewhere
   it returns at once. */
static void mps_cpu_wait_quiet(void)
{
#if defined(__linux__)
    pid_t self = (pid_t)syscall(SYS_gettid);
    for (int tries = 0; tries < 500; tries++) {
        DIR *d = opendir("/proc/self/task");
        if (!d)
            return;
        bool busy = false;
        for (struct dirent *e; !busy && (e = readdir(d));) {
            char path[300], buf[256];
            if (e->d_name[0] == '.' || atoi(e->d_name) == self)
                continue;
            snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
            FILE *f = fopen(path, "r");
            size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
            if (f)
                fclose(f);
            buf[len] = '\0';
            const char *state = strrchr(buf, ')'); /* "pid (name) S ..." */
            busy = state && state[1] == ' ' && state[2] == 'R';
        }
        closedir(d);
        if (!busy)
            return;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
#endif
}

/* cblas_sgemm called directly on buffers of its own: what mpsrun's MatMul adds is the difference. */
enum mps_status mps_cpu_bench_baseline(int64_t m, int64_t n, int64_t k, enum mps_precision precision, int threads,
                                       int warmup, int repeat, double *times_ms, struct mps_error *err)
{
    if (precision != MPS_PRECISION_FP32)
        return mps_fail(err, MPS_ERR_USAGE, "the cpu backend computes in fp32 only");
    float *a = malloc(sizeof(float) * (size_t)(m * k + 1)), *b = malloc(sizeof(float) * (size_t)(k * n + 1)),
          *c = malloc(sizeof(float) * (size_t)(m * n + 1));
    if (!a || !b || !c) {
        free(a);
        free(b);
        free(c);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    for (int64_t i = 0; i < m * k; i++)
        a[i] = (float)(i % 7) * 0.25f;
    for (int64_t i = 0; i < k * n; i++)
        b[i] = (float)(i % 5) * 0.5f;
    /* the vendor's own threading, then back to the one thread plans run it with (gemm.c) */
    int before = mps_blas_threads();
    mps_blas_set_threads(threads > 0 ? threads : mps_pool_cores());
    for (int r = 0; r < warmup + repeat; r++) {
        double t0 = mps_cpu_now_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)k, b, (int)n, 0.0f,
                    c, (int)n);
        if (r >= warmup)
            times_ms[r - warmup] = mps_cpu_now_ms() - t0;
    }
    mps_blas_set_threads(before > 0 ? before : 1);
    mps_cpu_wait_quiet();
    free(a);
    free(b);
    free(c);
    return MPS_OK;
}

/* "Intel(R) Xeon(R) ..." from the OS, or "unknown CPU". */
static void mps_cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown CPU");
#if defined(__APPLE__)
    size_t len = size;
    if (sysctlbyname("machdep.cpu.brand_string", buf, &len, NULL, 0) != 0)
        snprintf(buf, size, "unknown CPU");
#else
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (colon && strncmp(line, "model name", 10) == 0) {
            colon += 2;
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(buf, size, "%s", colon);
            break;
        }
    }
    fclose(f);
#endif
}

enum mps_status mps_cpu_probe(struct mps_backend_info *info, struct mps_error *err)
{
    char model[96];
    const struct mps_ukernels *uk;
    enum mps_status st = mps_isa_kernels(&uk, err);
    if (st || (st = mps_isa_check_int8(uk, err)))
        return st;
    mps_cpu_model(model, sizeof model);
    mps_blas_set_threads(1); /* as plans run it; its own workers stop (blas.c), and no longer share a core with the
                                cores' round trip that info and bench measure next */
    int cores = mps_pool_cores();
    snprintf(info->device, sizeof info->device, "%s (%d core%s)", model, cores, cores == 1 ? "" : "s");
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    info->memory_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    info->threads = mps_pool_cores(); /* the pool's; the BLAS runs one thread inside each (gemm.c) */
    const struct mps_uqgemm *q = mps_isa_qgemm(uk);
    snprintf(info->detail, sizeof info->detail, "kernels %s (%s; int8 %s, %d x %d tiles); BLAS %s; %d thread%s",
             uk->name, uk->describe, q->name, q->mr, q->nr, mps_blas_name(), info->threads,
             info->threads == 1 ? "" : "s");
    return MPS_OK;
}
