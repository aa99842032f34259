// gemm.cu: Gemm for a few rows (batch 1 to 8 through a Linear layer) as one
// kernel with its bias and activation: at these sizes the run is launch and
// latency bound, and a GEMM, then an epilogue, is two launches.
#include <cuda_pipeline.h>
#include <string.h>

#include "common.cuh"

/* What a thread of mps_cu_gemv_k may read before it waits when the weights and
   bias are constants (tests/gpu/check_waits.sh): its first two float4s of weight
   row j and the column's bias. The kernel then starts beside the one before it
   (mps_cu_wait) with these loads in flight, not after it. */
struct mps_cu_gemv_pre {
    float4 w[2];
    float b;
};

template <int T>
__device__ static mps_cu_gemv_pre mps_cu_gemv_fetch_then_wait(const float *w, const float *bias, int n, int k,
                                                             bool pre)
{
    mps_cu_gemv_pre p = {};
    int t = (int)(threadIdx.x % T), j = (int)(blockIdx.x * (MPS_CU_THREADS / T) + threadIdx.x / T);
    if (pre && j < n) {
        const float4 *w4 = (const float4 *)(w + (size_t)j * k);
        for (int u = 0; u < 2 && k % 4 == 0; u++)
            if (t + u * T < k / 4)
                p.w[u] = w4[t + u * T];
        if (bias && t == 0)
            p.b = bias[j];
    }
    mps_cu_wait();
    return p;
}

/* acc[r] += w . x[r][4q..4q+3] for the M rows of x (rows of k floats). */
template <int M>
__device__ static inline void mps_cu_gemv_dot4(float4 wv, const float *x, int q, int k, float *acc)
{
#pragma unroll
    for (int r = 0; r < M; r++) {
        float4 xv = ((const float4 *)(x + (size_t)r * k))[q];
        acc[r] += wv.x * xv.x + wv.y * xv.y + wv.z * xv.z + wv.w * xv.w;
    }
}

/* T threads per output column j (a warp or several) split weight row j
   (contiguous, as Linear exports it: transB = 1), four floats at a time where
   k allows, each against the M input rows; the warps reduce by shuffles, then
   through shared memory. T grows with k so that each thread reads a few
   float4s of w: the kernel's time is a few L2 round trips, not k / 128 of
   them one after another. Instantiated per row count: at these sizes the time
   is the instructions on the kernel's path, and 8 predicated rows cost 1 row
   ~3x its instructions. pre: the weights and bias are constants, read before
   the wait. */
template <int T, int M>
__global__ static void mps_cu_gemv_k(const float *x, const float *w, const float *bias, float alpha, float beta,
                                     float *y, int n, int k, int act, float act_alpha, float act_beta, bool pre)
{
    mps_cu_gemv_pre p = mps_cu_gemv_fetch_then_wait<T>(w, bias, n, k, pre);
    __shared__ float part[M][MPS_CU_THREADS / 32];
    int t = (int)(threadIdx.x % T), j = (int)(blockIdx.x * (MPS_CU_THREADS / T) + threadIdx.x / T);
    float acc[M] = {};
    if (j < n) {
        const float *wj = w + (size_t)j * k;
        int i = 0;
        if (k % 4 == 0) {
            const float4 *w4 = (const float4 *)wj;
            int q = t;
            for (int u = 0; u < 2 && pre; u++, q += T)
                if (q < k / 4)
                    mps_cu_gemv_dot4<M>(p.w[u], x, q, k, acc);
#pragma unroll 4
            for (; q < k / 4; q += T)
                mps_cu_gemv_dot4<M>(w4[q], x, q, k, acc);
            i = k;
        }
#pragma unroll 4
        for (int q = i + t; q < k; q += T) {
            float wv = wj[q];
#pragma unroll
            for (int r = 0; r < M; r++)
                acc[r] += wv * x[(size_t)r * k + q];
        }
    }
    int warp = (int)(threadIdx.x / 32);
#pragma unroll
    for (int r = 0; r < M; r++)
#pragma unroll
        for (int off = 16; off > 0; off /= 2)
            acc[r] += __shfl_xor_sync(0xffffffff, acc[r], off);
    if (T > 32) { /* the column's warps' sums, added by its first thread (warp: the column's first) */
        if (threadIdx.x % 32 == 0)
#pragma unroll
            for (int r = 0; r < M; r++)
                part[r][warp] = acc[r];
        __syncthreads();
        if (t == 0)
#pragma unroll
            for (int r = 0; r < M; r++) {
                float v = 0;
#pragma unroll
                for (int u = 0; u < T / 32; u++)
                    v += part[r][warp + u];
                acc[r] = v;
            }
    }
    if (t == 0 && j < n) {
        float b = bias ? beta * (pre ? p.b : bias[j]) : 0.0f;
#pragma unroll
        for (int r = 0; r < M; r++) {
            float v = alpha * acc[r] + b;
            y[(size_t)r * n + j] = act ? mps_cu_act(act, v, act_alpha, act_beta) : v;
        }
    }
}

typedef void (*mps_cu_gemv_fn)(const float *, const float *, const float *, float, float, float *, int, int, int,
                               float, float, bool);
#define MPS_CU_GEMV_KERNELS(T)                                                                                 \
    {mps_cu_gemv_k<T, 1>, mps_cu_gemv_k<T, 2>, mps_cu_gemv_k<T, 3>, mps_cu_gemv_k<T, 4>,                      \
     mps_cu_gemv_k<T, 5>, mps_cu_gemv_k<T, 6>, mps_cu_gemv_k<T, 7>, mps_cu_gemv_k<T, 8>}
/* The kernel for 32 << i threads a column and m rows: [i][m - 1]. */
static const mps_cu_gemv_fn mps_cu_gemv_kernels[4][MPS_CU_GEMV_ROWS] = {
    MPS_CU_GEMV_KERNELS(32), MPS_CU_GEMV_KERNELS(64), MPS_CU_GEMV_KERNELS(128), MPS_CU_GEMV_KERNELS(256)};

extern "C" int mps_cu_gemv(const float *x, const float *w, const float *bias, float alpha, float beta, float *y,
                           int64_t m, int64_t n, int64_t k, int act, float act_alpha, float act_beta, int constant,
                           void *stream)
{
    if (m < 1 || m > MPS_CU_GEMV_ROWS || n > INT32_MAX / 32 || k > INT32_MAX / MPS_CU_GEMV_ROWS)
        return (int)cudaErrorInvalidValue;
    int64_t loads = k % 4 == 0 ? k / 4 : k; /* threads per column: at most two loads each, or the block */
    int i = 0;
    while (i < 3 && loads > 2 * (32 << i))
        i++;
    int64_t columns = MPS_CU_THREADS / (32 << i);
    unsigned blocks = (unsigned)((n + columns - 1) / columns);
    return mps_cu_launch(mps_cu_gemv_kernels[i][m - 1], blocks, MPS_CU_THREADS, stream, x, w, bias, alpha, beta, y,
                         (int)n, (int)k, act, act_alpha, act_beta, constant != 0);
}

/* ---- a chain of Linear layers in one block ------------------------------------ */

#define MPS_CU_CHAIN_THREADS 1024

static int64_t mps_cu_chain_limit = 48 * 1024; /* raised by mps_cu_gemv_chain_setup */

/* A layer as the kernel runs it, laid out on the host (mps_cu_chain_lay): at these
   sizes the time is the instructions on the kernel's path, so it holds no
   division and no layout arithmetic. */
struct mps_cu_chain_step {
    mps_cu_layer L;
    int at;       /* the weights' offset in shared memory, in floats: [n][kp], then the bias [np] */
    int kp, np;   /* pad4(k), pad4(n): rows of whole float4s, the padding zeros */
    int shift;    /* log2 of the lanes per output column: up to 32, no more than a row's float4s */
    bool w16, b16; /* whether the weights, the bias can be copied 16 bytes at a time */
};

struct mps_cu_chain_run {
    mps_cu_chain_step l[MPS_CU_CHAIN_LAYERS];
    int layers, softmax;
    int a, b;     /* the two activation buffers' offsets (m rows of the widest kp or np) */
    bool x16;
    int64_t floats; /* shared memory in all */
    int64_t reads;  /* floats read from shared memory: each weight once, each input row once a column */
};

static int64_t mps_cu_pad4(int64_t v)
{
    return (v + 3) / 4 * 4;
}

static bool mps_cu_aligned16(const float *p, int64_t k)
{
    return k % 4 == 0 && (uintptr_t)p % 16 == 0;
}

/* Lays chain c out for the kernel (x: its input, NULL to size it); false where it is malformed. */
static bool mps_cu_chain_lay(const mps_cu_chain *c, const float *x, mps_cu_chain_run *run)
{
    if (c->layers < 1 || c->layers > MPS_CU_CHAIN_LAYERS || c->m < 1 || c->m > MPS_CU_GEMV_ROWS)
        return false;
    memset(run, 0, sizeof *run);
    run->layers = c->layers, run->softmax = c->softmax;
    run->x16 = mps_cu_aligned16(x, c->l[0].k);
    int64_t at = 0, width = mps_cu_pad4(c->l[0].k);
    for (int l = 0; l < c->layers; l++) {
        const mps_cu_layer *L = &c->l[l];
        if (L->n < 1 || L->k < 1 || L->n > INT32_MAX / 4 || L->k > INT32_MAX / 4 || (l > 0 && L->k != c->l[l - 1].n))
            return false;
        mps_cu_chain_step *s = &run->l[l];
        s->L = *L, s->kp = (int)mps_cu_pad4(L->k), s->np = (int)mps_cu_pad4(L->n);
        while (s->shift < 5 && 1 << s->shift < s->kp / 4)
            s->shift++;
        s->w16 = mps_cu_aligned16(L->w, L->k), s->b16 = mps_cu_aligned16(L->bias, L->n);
        if (at > INT32_MAX / 4)
            return false;
        s->at = (int)at;
        at += (int64_t)L->n * s->kp + s->np;
        run->reads += (int64_t)L->n * s->kp * (1 + c->m);
        width = s->np > width ? s->np : width;
    }
    run->floats = at + 2 * c->m * width;
    if (run->floats > INT32_MAX / 4)
        return false;
    run->a = (int)at, run->b = (int)(at + c->m * width);
    return true;
}

__device__ static inline float *mps_cu_chain_shared(void)
{
    extern __shared__ float4 mps_cu_chain_smem[]; /* float4: aligned for the float4 reads */
    return (float *)mps_cu_chain_smem;
}

/* Starts copying rows of k floats (contiguous) into shared memory rows of kp =
   pad4(k) floats, the padding zeros: asynchronous copies (cp.async), all in
   flight at once, 16 bytes each where v16 says the rows allow. */
__device__ static void mps_cu_chain_copy(float *dst, const float *src, int rows, int k, int kp, bool v16)
{
    if (v16) {
        for (int i = (int)threadIdx.x; i < rows * kp / 4; i += MPS_CU_CHAIN_THREADS)
            __pipeline_memcpy_async(dst + 4 * i, src + 4 * i, 16);
        return;
    }
    for (int i = (int)threadIdx.x; i < rows * kp; i += MPS_CU_CHAIN_THREADS) {
        int r = i / kp, q = i - r * kp;
        if (q < k)
            __pipeline_memcpy_async(dst + i, src + r * k + q, 4);
        else
            dst[i] = 0.0f;
    }
}

/* Starts copying the weights and biases into shared memory, then waits for the
   kernel before. Constants, which no kernel writes, are the one thing a kernel may
   read before its wait (tests/gpu/check_waits.sh): the copy overlaps that kernel. */
__device__ static void mps_cu_chain_stage_then_wait(const mps_cu_chain_run &c)
{
    float *sm = mps_cu_chain_shared();
    for (int l = 0; l < c.layers; l++) {
        const mps_cu_chain_step &s = c.l[l];
        mps_cu_chain_copy(sm + s.at, s.L.w, s.L.n, s.L.k, s.kp, s.w16);
        if (s.L.bias)
            mps_cu_chain_copy(sm + s.at + s.L.n * s.kp, s.L.bias, 1, s.L.n, s.np, s.b16);
    }
    __pipeline_commit();
    mps_cu_wait();
}

/* One layer of M rows from shared memory to shared memory: y[r][j] = act(alpha
   x[r] . w[j] + beta bias[j]) (x's rows kp floats, y's np), 2^shift lanes of a
   warp per column. */
template <int M>
__device__ static void mps_cu_chain_layer(const mps_cu_chain_step &s, const float *sm, const float *x, float *y)
{
    const mps_cu_layer &L = s.L;
    int lane = (int)(threadIdx.x % 32), t = 1 << s.shift, sub = lane & (t - 1), k4 = s.kp / 4;
    const float4 *w4 = (const float4 *)(sm + s.at), *x4 = (const float4 *)x;
    const float *bias = sm + s.at + L.n * s.kp;
    for (int j0 = (int)(threadIdx.x / 32) << (5 - s.shift); j0 < L.n; j0 += MPS_CU_CHAIN_THREADS >> s.shift) {
        int j = j0 + (lane >> s.shift); /* the loop is warp-uniform: shuffles below */
        float acc[M] = {};
        if (j < L.n)
            for (int q = sub; q < k4; q += t) {
                float4 wv = w4[j * k4 + q];
#pragma unroll
                for (int r = 0; r < M; r++) {
                    float4 xv = x4[r * k4 + q];
                    acc[r] += wv.x * xv.x + wv.y * xv.y + wv.z * xv.z + wv.w * xv.w;
                }
            }
#pragma unroll
        for (int off = 16; off > 0; off /= 2)
            if (off < t)
#pragma unroll
                for (int r = 0; r < M; r++)
                    acc[r] += __shfl_xor_sync(0xffffffff, acc[r], off);
        if (j < L.n && sub == 0)
#pragma unroll
            for (int r = 0; r < M; r++) {
                float v = L.alpha * acc[r] + (L.bias ? L.beta * bias[j] : 0.0f);
                y[r * s.np + j] = L.act ? mps_cu_act(L.act, v, L.act_alpha, L.act_beta) : v;
            }
    }
    if ((int)threadIdx.x < s.np - L.n) /* the rows' padding (at most 3): zeros, for the next layer's float4s */
#pragma unroll
        for (int r = 0; r < M; r++)
            y[r * s.np + L.n + threadIdx.x] = 0.0f;
}

template <int M>
__global__ static void __launch_bounds__(MPS_CU_CHAIN_THREADS) mps_cu_gemv_chain_k(const float *x, float *y,
                                                                                  mps_cu_chain_run c)
{
    mps_cu_chain_stage_then_wait(c);
    float *sm = mps_cu_chain_shared(), *a = sm + c.a, *b = sm + c.b;
    mps_cu_chain_copy(a, x, M, c.l[0].L.k, c.l[0].kp, c.x16);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    for (int l = 0; l < c.layers; l++) {
        mps_cu_chain_layer<M>(c.l[l], sm, a, b);
        __syncthreads();
        float *t = a;
        a = b, b = t;
    }
    const mps_cu_chain_step &s = c.l[c.layers - 1];
    int n = s.L.n, warp = (int)(threadIdx.x / 32);
    if (c.softmax && warp < M)
        mps_cu_softmax_row(a + warp * s.np, y + warp * n, n, 1, (int)(threadIdx.x % 32),
                           c.softmax == MPS_OP_LOG_SOFTMAX);
    else if (!c.softmax)
        for (int r = 0; r < M; r++)
            for (int i = (int)threadIdx.x; i < n; i += MPS_CU_CHAIN_THREADS)
                y[r * n + i] = a[r * s.np + i];
}

/* The kernel for m rows. */
static void (*const mps_cu_chain_kernels[MPS_CU_GEMV_ROWS])(const float *, float *, mps_cu_chain_run) = {
    mps_cu_gemv_chain_k<1>, mps_cu_gemv_chain_k<2>, mps_cu_gemv_chain_k<3>, mps_cu_gemv_chain_k<4>,
    mps_cu_gemv_chain_k<5>, mps_cu_gemv_chain_k<6>, mps_cu_gemv_chain_k<7>, mps_cu_gemv_chain_k<8>};

/* Lets the chain kernel have MPS_CU_CHAIN_BYTES of shared memory where the device allows. */
int mps_cu_gemv_chain_setup(void)
{
    cudaError_t e = cudaSuccess;
    for (int m = 0; m < MPS_CU_GEMV_ROWS && e == cudaSuccess; m++)
        e = cudaFuncSetAttribute(mps_cu_chain_kernels[m], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 MPS_CU_CHAIN_BYTES);
    if (e == cudaErrorInvalidValue) { /* a device with less: the chain keeps to the default 48 KiB */
        (void)cudaGetLastError();
        return 0;
    }
    if (e == cudaSuccess)
        mps_cu_chain_limit = MPS_CU_CHAIN_BYTES;
    return (int)e;
}

extern "C" int mps_cu_gemv_chain_fits(const struct mps_cu_chain *c)
{
    mps_cu_chain_run run;
    return mps_cu_chain_lay(c, NULL, &run) && run.floats * (int64_t)sizeof(float) <= mps_cu_chain_limit &&
           run.reads <= MPS_CU_CHAIN_READS;
}

extern "C" int mps_cu_gemv_chain(const float *x, float *y, const struct mps_cu_chain *c, void *stream)
{
    mps_cu_chain_run run;
    if (!mps_cu_chain_lay(c, x, &run) || run.floats * (int64_t)sizeof(float) > mps_cu_chain_limit)
        return (int)cudaErrorInvalidValue;
    return mps_cu_launch_smem(mps_cu_chain_kernels[c->m - 1], 1, MPS_CU_CHAIN_THREADS,
                              (size_t)run.floats * sizeof(float), stream, x, y, run);
}
