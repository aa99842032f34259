/* test_pgemm.c: the CPU backend's micro-kernels (src/tensor/cpu/ukernels.h)
   through the blocked product (pgemm.h), every family this CPU runs (the
   others reported skipped, by name), against a double-precision reference.

   Shapes cross every edge: tiles with 1 .. mr rows and 1 .. nr columns, k of
   0, 1, around a block (kc) and past several, rows past a block of A (mc)
   and columns past a block of B (nc); each operand packed at compile or per
   run, and A's rows read in place (gemm_rows, where a family has it); each
   epilogue (bias per row or column, residual, Relu, Clip, LeakyRelu,
   HardSwish, and an activation the tile does not compute); 1 to 3 threads,
   rows split inside a panel where B is constant and they are few, and in
   equal parts across the panels where the panels are not a multiple of the threads.
   Each element must lie within (k + 2) 2^-24 of the sum of the magnitudes it
   adds (|bias| + |residual| + sum |a b|): the bound a float sum of k + 2 terms
   meets in any order (the activations here shrink errors or keep them, but
   HardSwish, whose slope reaches 1.5: its bound is 1.5 times that), plus
   4 ulps of the result for the activation's own rounding; a wrong tile,
   offset or epilogue misses it by orders of magnitude. NaN must come out of
   every epilogue as NaN.

   The 3x3 depthwise kernel (dw3) likewise, on planes from 1x1 to wider than
   a few steps, stride 1 and 2, pads 0 to 2 on either side, each epilogue
   and a NaN, against the double sum of its nine taps (bound: 11 terms). Each
   plane lies against an inaccessible page, once ending at it and once
   starting after it, so that a read outside the plane fails the test (a
   fault) on every family.

   The direct convolution's tile (conv) likewise: 1 .. mr rows, k from 0 to
   past a block, B's rows at scattered offsets of a fenced buffer (one at
   its very start, one ending at its very end), masks of kept columns (all,
   none, one, runs, alternating), each epilogue the tile computes and a NaN;
   the kept columns must come out packed, in order, and nothing after them
   in a row may change. The transposed tile (convt) likewise: 1 .. mt
   positions read at scattered offsets of a fenced buffer, 1 .. nr
   channels, each epilogue and a NaN; nothing past the positions or the
   channels may change. And the thread pool the products run on: each
   item of a job done exactly once, 1 to 3 threads, the caller slowed on
   its own share. And that the CPU backend's probe and compile leave this
   process none of OpenBLAS's own threads (its pthread build: its workers
   would spin on the pool's cores). `test_pgemm neon` runs only the families whose name
   contains "neon" (under an emulator, the others take long). */
#include <dirent.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../../src/tensor/cpu/blas.h"
#include "../../src/tensor/cpu/isa.h"
#include "../../src/tensor/cpu/pgemm.h"
#include "../../src/tensor/cpu/thread_pool.h"
#include "harness.h"

enum th_epi { TH_NONE, TH_BIAS_ROWS, TH_BIAS_COLS, TH_RES_RELU, TH_CLIP, TH_LEAKY, TH_HSWISH, TH_SIGMOID, TH_EPI_COUNT };
static const char *const th_epi_names[TH_EPI_COUNT] = {
    "none",           "bias per row",         "bias per column + Relu", "residual + Relu",
    "Clip -0.5..0.5", "bias + LeakyRelu 0.1", "bias + HardSwish",       "Sigmoid (after the tile)"};

/* A shape: m x n x k; *_tiles: counted in the family's tiles and blocks (m, n
   plus so many mr / nr / mc / nc), so that each family meets its own edges. */
struct th_shape {
    int64_t m, n, k;
    int mr_plus, nr_plus; /* add this many tiles of rows and columns */
    int kc_plus;          /* add this many blocks of k */
};

static const struct th_shape th_shapes[] = {
    {1, 1, 1, 0, 0, 0},    {1, 0, 7, 0, 1, 0},    {0, 0, 9, 1, 1, 0},    {3, 5, 0, 0, 0, 0},      {2, 3, 0, 1, 1, 1},
    {1, 1, 5, 1, 2, 0},    {-1, -1, 33, 2, 2, 0}, {1, 1, 3, 2, 3, 1},    {5, 7, -1, 0, 0, 1},     {4, 9, 1, 3, 1, 2},
    {1, 300, 77, 0, 0, 0}, {2, 7, 600, 0, 0, 0},  {150, 3, 20, 0, 0, 0}, {70, 410, 129, 0, 0, 0}, {7, 1, 257, 0, 0, 0},
    {6, 16, 40, 0, 0, 0},  {5, 17, 33, 0, 1, 0}, /* 16 and 17 columns: avx512's half tile and the full one past it */
    {9, 8, 41, 0, 0, 0},   {4, 9, 7, 0, 0, 0},   /* 8 and 9 columns: avx512's quarter tile and the half one past it */
    {12, 24, 50, 0, 0, 0},  {33, 20, 3, 0, 0, 1},  /* 17 to 24 columns: avx512's three-quarter tile */
    {4, 7, 5, 0, 1, 0},     {5, 12, 2, 0, 0, 0},   /* avx2's narrow tile: 4 and 5 rows, k odd and 2 */
    {10, 3, 300, 0, 0, 0},  {11, 13, 300, 0, 0, 0}, /* past a k block; avx2's store of 9 to 15 columns */
    /* gemm_dot (avx512, avx2; 16 rows or more, 4 columns or fewer): whole and partial groups of rows, k in 3 blocks */
    {40, 33, 300, 0, 0, 0}, {21, 2, 17, 0, 0, 0}, {19, 4, 600, 0, 0, 0}, {16, 3, 1, 0, 0, 0}, {300, 1, 40, 0, 0, 0},
};

/* The family's size of s. */
static void th_dims(const struct th_shape *s, const struct mps_ukernels *uk, int64_t *m, int64_t *n, int64_t *k)
{
    *m = s->m + s->mr_plus * uk->mr;
    *n = s->n + s->nr_plus * uk->nr;
    *k = s->k + s->kc_plus * uk->kc;
}

static double th_ref_act(enum th_epi e, double v)
{
    switch (e) {
    case TH_BIAS_COLS:
    case TH_RES_RELU: return v > 0 || isnan(v) ? v : 0;
    case TH_CLIP: return isnan(v) ? v : v < -0.5 ? -0.5 : v > 0.5 ? 0.5 : v;
    case TH_LEAKY: return v < 0 ? 0.1 * v : v;
    case TH_HSWISH: return isnan(v) ? v : v * fmin(fmax(v / 6 + 0.5, 0), 1);
    case TH_SIGMOID: return 1 / (1 + exp(-v));
    default: return v;
    }
}

/* How far an error in the activation's input can move its output: HardSwish's
   slope reaches 1.5 (at 3); the others' stay within 1. */
static double th_act_slope(enum th_epi e)
{
    return e == TH_HSWISH ? 1.5 : 1;
}

/* The epilogue a conv tile computes for epi: the bias (a row's, or a
   channel's for convt) and Relu, Clip, LeakyRelu or HardSwish; returns the activation. */
static struct mps_fused_act th_conv_epi(enum th_epi epi, const float *bias, struct mps_tile_epi *e)
{
    *e = mps_tile_epi_none();
    struct mps_fused_act act = {.on = epi == TH_RES_RELU || epi == TH_CLIP || epi == TH_LEAKY || epi == TH_HSWISH,
                                .op = epi == TH_CLIP     ? MPS_OP_CLIP
                                      : epi == TH_LEAKY  ? MPS_OP_LEAKY_RELU
                                      : epi == TH_HSWISH ? MPS_OP_HARD_SWISH
                                                         : MPS_OP_RELU,
                                .p = {.alpha = epi == TH_CLIP ? -0.5f : 0.1f, .beta = 0.5f}};
    mps_pgemm_act_epi(&act, e);
    e->bias = epi == TH_BIAS_ROWS || epi == TH_LEAKY || epi == TH_HSWISH ? bias : NULL;
    return act;
}

struct th_data {
    float *a, *b, *bias, *res, *c;
    double *want, *bound;
};

/* Runs one product and checks it; nan: a NaN planted in a (its row must be NaN). */
/* a_rows: A's rows read in place (the family's gemm_rows, where it has one). */
static void th_product(const struct mps_ukernels *uk, struct mps_pool *pool, int64_t m, int64_t n, int64_t k,
                       bool a_packed, bool b_packed, bool a_rows, enum th_epi epi, bool nan)
{
    struct th_data d = {0};
    size_t ma = (size_t)(m * k + 1), mb = (size_t)(k * n + 1), mc = (size_t)(m * n + 1);
    d.a = th_alloc(MPS_F32, (int64_t)ma), d.b = th_alloc(MPS_F32, (int64_t)mb), d.c = th_alloc(MPS_F32, (int64_t)mc);
    d.res = th_alloc(MPS_F32, (int64_t)mc), d.bias = th_alloc(MPS_F32, m + n + 1);
    d.want = calloc(mc, sizeof(double)), d.bound = calloc(mc, sizeof(double));
    for (size_t i = 0; i < ma; i++)
        d.a[i] = (float)th_uniform(-1, 1);
    for (size_t i = 0; i < mb; i++)
        d.b[i] = (float)th_uniform(-1, 1);
    for (size_t i = 0; i < mc; i++)
        d.res[i] = (float)th_uniform(-2, 2), d.c[i] = 12345.0f; /* C holds garbage: = must overwrite it */
    for (int64_t i = 0; i < m + n; i++)
        d.bias[i] = (float)th_uniform(-1, 1);
    if (nan && m * k > 0)
        d.a[(m / 2) * k + k / 2] = NAN;
    bool rows = epi == TH_BIAS_ROWS || epi == TH_HSWISH, cols = epi == TH_BIAS_COLS || epi == TH_LEAKY;
    bool res = epi == TH_RES_RELU;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double v = 0, mag = 0;
            for (int64_t kk = 0; kk < k; kk++) {
                double p = (double)d.a[i * k + kk] * d.b[kk * n + j];
                v += p, mag += fabs(p);
            }
            double extra = rows ? d.bias[i] : cols ? d.bias[j] : 0;
            extra += res ? d.res[i * n + j] : 0;
            d.want[i * n + j] = th_ref_act(epi, v + extra);
            /* plus 4 ulps of the result: the float activation's own rounding */
            d.bound[i * n + j] = th_act_slope(epi) * (double)(k + 2) * 0x1p-24 * (mag + fabs(extra)) +
                                 0x1p-22 * fabs(d.want[i * n + j]) + 1e-30;
        }

    /* A: packed at compile, or strided (row-major m x k) per run; B likewise (k x n) */
    float *pa = a_packed ? th_alloc(MPS_F32, (int64_t)(mps_pgemm_packed_bytes(uk, m, k, true) / 4)) : NULL;
    float *pb = b_packed ? th_alloc(MPS_F32, (int64_t)(mps_pgemm_packed_bytes(uk, n, k, false) / 4)) : NULL;
    if (pa)
        mps_pgemm_pack(uk, d.a, k, 1, m, k, true, pa);
    if (pb)
        mps_pgemm_pack(uk, d.b, 1, n, n, k, false, pb);
    struct mps_pgemm_strided as = {d.a, k, 1, m}, bs = {d.b, 1, n, n};
    struct mps_pgemm_operand A = pa ? (struct mps_pgemm_operand){.packed = pa}
                                    : (struct mps_pgemm_operand){.pack = mps_pgemm_pack_strided, .ctx = &as,
                                                                 .rows = a_rows ? d.a : NULL, .lda = k};
    struct mps_pgemm_operand B = pb ? (struct mps_pgemm_operand){.packed = pb}
                                    : (struct mps_pgemm_operand){.pack = mps_pgemm_pack_strided, .ctx = &bs};
    struct mps_tile_epi e = mps_tile_epi_none();
    struct mps_fused_act act = {.on = true, .op = MPS_OP_RELU};
    switch (epi) {
    case TH_BIAS_ROWS: e.bias = d.bias, act.on = false; break;
    case TH_BIAS_COLS: e.bias = d.bias, e.bias_cols = true; break;
    case TH_RES_RELU: e.res = d.res, e.ldr = n; break;
    case TH_CLIP: act.op = MPS_OP_CLIP, act.p.alpha = -0.5f, act.p.beta = 0.5f; break;
    case TH_LEAKY: e.bias = d.bias, e.bias_cols = true, act.op = MPS_OP_LEAKY_RELU, act.p.alpha = 0.1f; break;
    case TH_HSWISH: e.bias = d.bias, act.op = MPS_OP_HARD_SWISH; break;
    case TH_SIGMOID: act.op = MPS_OP_SIGMOID; break;
    default: act.on = false; break;
    }
    if (epi == TH_BIAS_COLS || epi == TH_RES_RELU)
        act.op = MPS_OP_RELU;
    bool inline_act = mps_pgemm_act_epi(&act, &e);
    void *scratch = malloc(mps_pgemm_scratch(uk, mps_pool_threads(pool)));
    mps_pgemm(pool, uk, m, n, k, &A, &B, d.c, n, &e, inline_act ? NULL : &act, scratch);

    int64_t bad = -1, nan_rows_ok = 1;
    double worst = 0;
    for (int64_t i = 0; i < m * n; i++) {
        double got = d.c[i], err = fabs(got - d.want[i]);
        bool ok = isnan(d.want[i]) ? isnan(got) : err <= d.bound[i];
        if (!ok && bad < 0)
            bad = i;
        worst = err / d.bound[i] > worst && !isnan(d.want[i]) ? err / d.bound[i] : worst;
        if (nan && isnan(d.want[i]) != isnan(got))
            nan_rows_ok = 0;
    }
    th_check(bad < 0 && nan_rows_ok,
             "[%s] %lldx%lldx%lld A %s, B %s, %s%s, %d thread%s: %s (worst %.2f of the bound)%s", uk->name,
             (long long)m, (long long)n, (long long)k, a_packed ? "packed" : a_rows ? "rows in place" : "per run",
             b_packed ? "packed" : "per run",
             th_epi_names[epi], nan ? ", a NaN in A" : "", mps_pool_threads(pool),
             mps_pool_threads(pool) > 1 ? "s" : "", bad < 0 ? "within" : "OUTSIDE", worst,
             bad < 0 ? "" : " (first bad element below)");
    if (bad >= 0)
        printf("     element %lld (row %lld, column %lld): got %.9g, want %.9g, bound %.3g\n", (long long)bad,
               (long long)(bad / n), (long long)(bad % n), d.c[bad], d.want[bad], d.bound[bad]);
    free(scratch);
    free(pa);
    free(pb);
    free(d.a), free(d.b), free(d.c), free(d.res), free(d.bias), free(d.want), free(d.bound);
}

/* n floats that end at (after: start just after) a page no access may touch. */
static float *th_fenced(size_t n, bool after, void **map, size_t *map_bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = (n * sizeof(float) + page - 1) / page * page + page;
    unsigned char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    *map = m, *map_bytes = bytes;
    if (after) {
        mprotect(m, page, PROT_NONE);
        return (float *)(m + page);
    }
    mprotect(m + bytes - page, page, PROT_NONE);
    return (float *)(m + bytes - page) - n;
}

/* One plane through uk->dw3: h x w input, stride s, pads pt, pl (bottom and
   right: whatever the output size leaves), the epilogue epi's activation. */
static void th_dw3(const struct mps_ukernels *uk, int64_t h, int64_t w, int s, int64_t pt, int64_t pl, int64_t out_h,
                   int64_t out_w, enum th_epi epi, bool nan, bool after)
{
    void *map = NULL;
    size_t map_bytes = 0;
    float *x = th_fenced((size_t)(h * w), after, &map, &map_bytes), k[9], bias = (float)th_uniform(-1, 1);
    if (!x) {
        th_fail("[%s] dw3: no memory for the fenced plane", uk->name);
        return;
    }
    float *y = malloc(sizeof(float) * (size_t)(out_h * out_w + 1));
    for (int64_t i = 0; i < h * w; i++)
        x[i] = (float)th_uniform(-1, 1);
    for (int i = 0; i < 9; i++)
        k[i] = (float)th_uniform(-1, 1);
    if (nan)
        x[(h / 2) * w + w / 2] = NAN;
    struct mps_tile_epi e;
    struct mps_fused_act act = th_conv_epi(epi, NULL, &e); /* dw3 takes its bias apart */
    struct mps_dw3_geom g = {.h = h, .w = w, .pt = pt, .pl = pl, .out_h = out_h, .out_w = out_w, .s = s};
    uk->dw3(&g, x, k, bias, y, &e);
    int64_t bad = -1, nan_ok = 1;
    double worst = 0, want_bad = 0;
    for (int64_t oh = 0; oh < out_h; oh++)
        for (int64_t ow = 0; ow < out_w; ow++) {
            double v = bias, mag = fabs(bias);
            for (int th = 0; th < 3; th++)
                for (int tw = 0; tw < 3; tw++) {
                    int64_t i = oh * s - pt + th, j = ow * s - pl + tw;
                    if (i >= 0 && i < h && j >= 0 && j < w)
                        v += (double)k[th * 3 + tw] * x[i * w + j], mag += fabs((double)k[th * 3 + tw] * x[i * w + j]);
                }
            double want = th_ref_act(act.on ? epi : TH_NONE, v), got = y[oh * out_w + ow];
            double bound = th_act_slope(epi) * 11 * 0x1p-24 * mag + 0x1p-22 * fabs(want) + 1e-30;
            double err = fabs(got - want);
            bool ok = isnan(want) ? isnan(got) : err <= bound;
            if (isnan(want) != isnan(got))
                nan_ok = 0;
            if (!ok && bad < 0)
                bad = oh * out_w + ow, want_bad = want;
            worst = !isnan(want) && err / bound > worst ? err / bound : worst;
        }
    th_check(bad < 0 && nan_ok,
             "[%s] dw3 %lldx%lld stride %d pads %lld,%lld -> %lldx%lld, %s%s, %s a fence: %s (worst %.2f of the bound)",
             uk->name, (long long)h, (long long)w, s, (long long)pt, (long long)pl, (long long)out_h, (long long)out_w,
             !act.on ? "no activation" : epi == TH_RES_RELU ? "Relu" : th_epi_names[epi],
             nan ? ", a NaN" : "", after ? "after" : "before", bad < 0 ? "within" : "OUTSIDE", worst);
    if (bad >= 0)
        printf("     output %lld: got %.9g, want %.9g\n", (long long)bad, y[bad], want_bad);
    free(y);
    munmap(map, map_bytes);
}

/* One tile through uk->conv: rows x nr columns over k rows of B read at
   off[kk] of a fenced buffer, keeping the columns of keep. */
static void th_conv(const struct mps_ukernels *uk, int rows, int64_t k, uint64_t keep, enum th_epi epi, bool nan,
                    bool after)
{
    int nr = uk->nr, mr = uk->mr;
    int64_t span = 3 * nr + 5, ldc = nr + 3; /* the buffer B's rows lie in; C's row pitch */
    void *map = NULL;
    size_t map_bytes = 0;
    float *x = th_fenced((size_t)span, after, &map, &map_bytes);
    float *a = malloc(sizeof(float) * (size_t)(mr * (k > 0 ? k : 1))), bias[16], *c = malloc(sizeof(float) * 16 * 70);
    int32_t *off = malloc(sizeof(int32_t) * (size_t)(k > 0 ? k : 1));
    if (!x || !a || !c || !off) {
        th_fail("[%s] conv: no memory", uk->name);
        free(a), free(c), free(off);
        return;
    }
    for (int64_t i = 0; i < span; i++)
        x[i] = (float)th_uniform(-1, 1);
    for (int64_t i = 0; i < mr * k; i++)
        a[i] = (float)th_uniform(-1, 1);
    for (int r = 0; r < 16; r++)
        bias[r] = (float)th_uniform(-1, 1);
    for (int64_t kk = 0; kk < k; kk++) /* the first row at the buffer's start, the second ending at its end */
        off[kk] = kk == 0 ? 0 : kk == 1 ? (int32_t)(span - nr) : (int32_t)(th_uniform(0, 1) * (double)(span - nr));
    if (nan && k > 0)
        x[off[k - 1] + nr / 2] = NAN;
    for (int i = 0; i < 16 * 70; i++)
        c[i] = 12345.0f;
    struct mps_tile_epi e;
    struct mps_fused_act act = th_conv_epi(epi, bias, &e);
    uk->conv(k, a, x, off, c, ldc, rows, keep, &e);
    int kept = __builtin_popcountll(keep), bad_r = -1, bad_j = -1;
    double worst = 0;
    for (int r = 0; r < rows; r++) {
        int at = 0;
        for (int j = 0; j < nr; j++) {
            if (!(keep >> j & 1))
                continue;
            double v = e.bias ? bias[r] : 0, mag = fabs(v);
            for (int64_t kk = 0; kk < k; kk++)
                v += (double)a[kk * mr + r] * x[off[kk] + j], mag += fabs((double)a[kk * mr + r] * x[off[kk] + j]);
            double want = th_ref_act(act.on ? epi : TH_NONE, v), got = c[r * ldc + at++];
            double bound = th_act_slope(epi) * (double)(k + 2) * 0x1p-24 * mag + 0x1p-22 * fabs(want) + 1e-30;
            double err = fabs(got - want);
            if ((isnan(want) ? !isnan(got) : !(err <= bound)) && bad_r < 0)
                bad_r = r, bad_j = j;
            worst = !isnan(want) && err / bound > worst ? err / bound : worst;
        }
        for (int64_t j = kept; j < ldc; j++) /* past the kept columns nothing is written */
            if (c[r * ldc + j] != 12345.0f && bad_r < 0)
                bad_r = r, bad_j = (int)j + 100;
    }
    for (int64_t i = rows * ldc; i < 16 * 70; i++) /* nor past the rows */
        if (c[i] != 12345.0f && bad_r < 0)
            bad_r = 99, bad_j = (int)i;
    th_check(bad_r < 0, "[%s] conv %d rows, k %lld, keep %#llx, %s%s, %s a fence: %s (worst %.2f of the bound)",
             uk->name, rows, (long long)k, (unsigned long long)keep, th_epi_names[epi], nan ? ", a NaN" : "",
             after ? "after" : "before", bad_r < 0 ? "within" : "OUTSIDE", worst);
    if (bad_r >= 0)
        printf("     row %d, column %d (100 + j: written past the kept ones)\n", bad_r, bad_j);
    free(a), free(c), free(off);
    munmap(map, map_bytes);
}

/* The tiles of th_conv: every height, k around the unrolled steps, masks of each kind. */
static void th_conv_all(const struct mps_ukernels *uk)
{
    uint64_t all = uk->nr == 64 ? ~0ull : (1ull << uk->nr) - 1;
    const uint64_t keeps[] = {
        all, 0, 1, 1ull << (uk->nr - 1), all >> 2, all & ~7ull, 0x5555555555555555ull & all, (all >> 3) & ~(3ull << 2)};
    const int64_t ks[] = {0, 1, 2, 3, 5, 9, 37, 300};
    enum th_epi epis[] = {TH_NONE, TH_BIAS_ROWS, TH_RES_RELU, TH_CLIP, TH_LEAKY, TH_HSWISH};
    int at = 0;
    for (int rows = 1; rows <= uk->mr; rows++)
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++, at++)
            th_conv(uk, rows, ks[i], keeps[(size_t)at % (sizeof keeps / sizeof keeps[0])], epis[at % 6], at % 7 == 3,
                    at % 2 == 0);
}

/* One transposed tile through uk->convt: rows positions x cols channels over
   k rows of B read at off[kk] of a fenced buffer (only the rows floats
   there), W packed as k groups of nr floats. */
static void th_convt(const struct mps_ukernels *uk, int rows, int cols, int64_t k, enum th_epi epi, bool nan,
                     bool after)
{
    int nr = uk->nr;
    int64_t span = 2 * uk->mt + 9, ldc = uk->mt + 3; /* the buffer B's rows lie in; C's row pitch */
    void *map = NULL;
    size_t map_bytes = 0;
    float *x = th_fenced((size_t)span, after, &map, &map_bytes);
    float *a = malloc(sizeof(float) * (size_t)(nr * (k > 0 ? k : 1))), bias[64], *c = malloc(sizeof(float) * 64 * 16);
    int32_t *off = malloc(sizeof(int32_t) * (size_t)(k > 0 ? k : 1));
    if (!x || !a || !c || !off) {
        th_fail("[%s] convt: no memory", uk->name);
        free(a), free(c), free(off);
        return;
    }
    for (int64_t i = 0; i < span; i++)
        x[i] = (float)th_uniform(-1, 1);
    for (int64_t i = 0; i < nr * k; i++) /* channels past cols are the packing's zeros */
        a[i] = i % nr < cols ? (float)th_uniform(-1, 1) : 0.0f;
    for (int o = 0; o < 64; o++)
        bias[o] = (float)th_uniform(-1, 1);
    for (int64_t kk = 0; kk < k; kk++) /* the first run at the buffer's start, the second ending at its end */
        off[kk] = kk == 0 ? 0 : kk == 1 ? (int32_t)(span - rows) : (int32_t)(th_uniform(0, 1) * (double)(span - rows));
    if (nan && k > 0)
        x[off[k - 1] + rows / 2] = NAN;
    for (int i = 0; i < 64 * 16; i++)
        c[i] = 12345.0f;
    struct mps_tile_epi e;
    struct mps_fused_act act = th_conv_epi(epi, bias, &e);
    uk->convt(k, a, x, off, c, ldc, rows, cols, &e);
    int bad_o = -1, bad_j = -1;
    double worst = 0;
    for (int o = 0; o < cols; o++)
        for (int j = 0; j < ldc; j++) {
            double got = c[o * ldc + j];
            if (j >= rows) { /* past the positions nothing is written */
                if (got != 12345.0f && bad_o < 0)
                    bad_o = o, bad_j = j + 100;
                continue;
            }
            double v = e.bias ? bias[o] : 0, mag = fabs(v);
            for (int64_t kk = 0; kk < k; kk++)
                v += (double)a[kk * nr + o] * x[off[kk] + j], mag += fabs((double)a[kk * nr + o] * x[off[kk] + j]);
            double want = th_ref_act(act.on ? epi : TH_NONE, v);
            double bound = th_act_slope(epi) * (double)(k + 2) * 0x1p-24 * mag + 0x1p-22 * fabs(want) + 1e-30;
            double err = fabs(got - want);
            if ((isnan(want) ? !isnan(got) : !(err <= bound)) && bad_o < 0)
                bad_o = o, bad_j = j;
            worst = !isnan(want) && err / bound > worst ? err / bound : worst;
        }
    for (int64_t i = cols * ldc; i < 64 * 16; i++) /* nor past the channels */
        if (c[i] != 12345.0f && bad_o < 0)
            bad_o = 99, bad_j = (int)i;
    th_check(bad_o < 0, "[%s] convt %d positions x %d channels, k %lld, %s%s, %s a fence: %s (worst %.2f of the bound)",
             uk->name, rows, cols, (long long)k, th_epi_names[epi], nan ? ", a NaN" : "", after ? "after" : "before",
             bad_o < 0 ? "within" : "OUTSIDE", worst);
    if (bad_o >= 0)
        printf("     channel %d, position %d (100 + j: written past the positions)\n", bad_o, bad_j);
    free(a), free(c), free(off);
    munmap(map, map_bytes);
}

/* The transposed tiles: every run of positions, channels 1 .. nr, k around the unrolled steps. */
static void th_convt_all(const struct mps_ukernels *uk)
{
    if (!uk->convt) {
        th_skip("[%s] convt: the family has no transposed tile (the conv tile runs every layer)", uk->name);
        return;
    }
    const int64_t ks[] = {0, 1, 2, 3, 9, 37, 300};
    enum th_epi epis[] = {TH_NONE, TH_BIAS_ROWS, TH_RES_RELU, TH_CLIP, TH_LEAKY, TH_HSWISH};
    int at = 0;
    for (int rows = 1; rows <= uk->mt; rows++)
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++, at++) {
            int cols = at % 4 == 0 ? uk->nr : 1 + at * 5 % uk->nr;
            th_convt(uk, rows, cols, ks[i], epis[at % 6], at % 7 == 3, at % 2 == 0);
        }
}

/* The planes of th_dw3: sizes across the families' steps (4, 8, 16 outputs) and the row ends. */
static void th_dw3_all(const struct mps_ukernels *uk)
{
    static const int64_t sizes[][2] = {
        {1, 1},  {2, 2},  {3, 5},  {7, 7},    {14, 14}, {5, 17},
        {9, 33}, {4, 40}, {3, 71}, {2, 2800}, {600, 40}}; /* rows wider than avx512's band; bands of rows */
    enum th_epi epis[] = {TH_NONE, TH_RES_RELU, TH_CLIP, TH_LEAKY, TH_HSWISH};
    int at = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int s = 1; s <= 2; s++)
            for (int64_t pad = 0; pad <= 2; pad++, at++) {
                int64_t h = sizes[i][0], w = sizes[i][1], pt = pad, pl = (pad + (int64_t)i) % 3;
                int64_t pbm = (pad + 1) % 3, prt = pad; /* bottom and right pads */
                int64_t out_h = h + pt + pbm >= 3 ? (h + pt + pbm - 3) / s + 1 : 0;
                int64_t out_w = w + pl + prt >= 3 ? (w + pl + prt - 3) / s + 1 : 0;
                if (out_h <= 0 || out_w <= 0)
                    continue;
                th_dw3(uk, h, w, s, pt, pl, out_h, out_w, epis[at % 5], at % 3 == 0, at % 2 == 0);
            }
}

/* The pool (thread_pool.h): every item of a job exactly once, whatever the split
   between its threads' shares, chunks within [0, n), each thread's index
   in range; one thread slowed on its share leaves the rest to the others;
   and the same after the workers slept (a pause longer than their spin) and
   while the caller sleeps (a worker's chunk longer than the caller's spin). */
struct th_pool_job {
    _Atomic int *seen;
    int64_t n;
    int threads;
    _Atomic int bad;
    struct mps_pool *pool;
    _Atomic int slow_worker_ms; /* the first chunk a worker takes sleeps so long */
};

static void th_sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void th_pool_body(void *ctx, int64_t b, int64_t e)
{
    struct th_pool_job *j = ctx;
    int self = mps_pool_self(j->pool);
    if (b < 0 || e > j->n || b >= e || self < 0 || self >= j->threads)
        atomic_fetch_add(&j->bad, 1);
    for (int64_t i = b; i < e && i >= 0 && i < j->n; i++)
        atomic_fetch_add(&j->seen[i], 1);
    if (self == 0 && b == 0) /* the caller slow on its first chunk */
        for (volatile int spin = 0; spin < 200000; spin++)
            ;
    int ms = self > 0 ? atomic_exchange(&j->slow_worker_ms, 0) : 0;
    if (ms)
        th_sleep_ms(ms);
}

static void th_pool_all(struct mps_pool **pools, int n_pools)
{
    /* the last three: after 20 ms apart (the workers asleep), and with a worker 20 ms on a chunk (the caller asleep) */
    static const int64_t sizes[] = {1, 2, 3, 5, 7, 8, 63, 64, 1000, 64, 1000, 64};
    const size_t n_sizes = sizeof sizes / sizeof sizes[0];
    for (int t = 0; t < n_pools; t++)
        for (size_t s = 0; s < n_sizes; s++) {
            int64_t n = sizes[s];
            bool asleep = s == n_sizes - 3, slow = s >= n_sizes - 2;
            if (asleep)
                th_sleep_ms(20);
            struct th_pool_job j = {.seen = calloc((size_t)n, sizeof(_Atomic int)),
                                    .n = n,
                                    .threads = mps_pool_threads(pools[t]),
                                    .pool = pools[t],
                                    .slow_worker_ms = slow ? 20 : 0};
            if (!j.seen) {
                th_fail("pool: no memory");
                return;
            }
            mps_pool_for(pools[t], n, MPS_POOL_GRAIN, th_pool_body, &j); /* a chunk an item */
            int64_t wrong = 0;
            for (int64_t i = 0; i < n; i++)
                wrong += atomic_load(&j.seen[i]) != 1;
            if (wrong || atomic_load(&j.bad))
                th_fail("pool of %d threads, %lld items%s: %lld items not done exactly once, %d bad chunks", j.threads,
                        (long long)n, asleep ? " (workers asleep)" : slow ? " (a slow worker)" : "", (long long)wrong,
                        atomic_load(&j.bad));
            else
                th_pass("pool of %d threads, %lld items%s: each done once", j.threads, (long long)n,
                        asleep ? " (workers asleep)" : slow ? " (a slow worker)" : "");
            free(j.seen);
        }
}

/* Threads of this process (Linux: /proc/self/task), or -1. */
static int th_task_count(void)
{
    int n = -1;
#if defined(__linux__)
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
#endif
    return n;
}

/* Asks the CPU backend for one thread the way mpsrun does: round 0 through
   its probe (info, bench and the choice of a backend), round 1 by compiling a
   one-node plan on one thread (infer, before its first run). */
static bool th_blas_single(int round)
{
    struct mps_error err = {{0}};
    if (round == 0) {
        struct mps_backend_info info;
        return mps_backend_cpu.probe(&info, &err) == MPS_OK;
    }
    struct mps_graph *g = mps_graph_new();
    struct mps_plan *plan = NULL;
    int x = g ? mps_graph_add_value(g, "x", MPS_F32, &(struct mps_shape){2, {1, 8}}) : -1;
    int y = x >= 0 ? mps_graph_add_value(g, "y", MPS_F32, &(struct mps_shape){2, {1, 8}}) : -1;
    bool ok = y >= 0 && !mps_graph_add_node(g, MPS_OP_RELU, "relu", &x, 1, &y, 1, NULL, &err) &&
              !mps_graph_add_input(g, x, &err) && !mps_graph_add_output(g, y, &err) &&
              !mps_plan_compile(&mps_backend_cpu, g, &(struct mps_compile_opts){.threads = 1}, &plan, &err);
    mps_plan_free(plan);
    mps_graph_free(g);
    return ok;
}

/* Before any pool: OpenBLAS's workers (as many as its threads less one),
   started when it loaded and again by a threaded call, are gone once the
   CPU backend has asked it for one thread. Counted as a difference: an
   emulator has threads of its own. */
static void th_blas_quiet(void)
{
#if defined(MPSRUN_BLAS_ACCELERATE)
    th_skip("blas: Accelerate keeps its own threads");
#else
    int loaded = mps_blas_threads();
    if (openblas_get_parallel() != OPENBLAS_THREAD || loaded < 2 || th_task_count() < 0) {
        th_skip("blas: OpenBLAS runs no workers of its own here (%s, %d thread%s)", mps_blas_name(), loaded,
                loaded == 1 ? "" : "s");
        return;
    }
    enum { N = 512 };
    float *a = calloc(N * N, sizeof *a), *c = calloc(N * N, sizeof *c);
    if (!a || !c) {
        free(a), free(c);
        th_fail("blas: no memory");
        return;
    }
    for (int round = 0; round < 2; round++) { /* as loaded; then after a call on all its threads */
        if (round) {
            mps_blas_set_threads(loaded);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, a, N, 0.0f, c, N);
        }
        int before = th_task_count();
        bool ran = th_blas_single(round);
        int after = th_task_count();
        /* joined, but under qemu-user the thread's task lingers a moment (a worker left
           running never ends: it sleeps) */
        for (int wait = 0; wait < 100 && before - after < loaded - 1; wait++) {
            th_sleep_ms(10);
            after = th_task_count();
        }
        th_check(ran && before - after == loaded - 1,
                 "blas: the CPU backend's %s: %d threads in the process before, %d after (want %d fewer: "
                 "OpenBLAS's workers)", round ? "compile, after a threaded call" : "probe, as loaded", before, after,
                 loaded - 1);
    }
    free(a);
    free(c);
#endif
}

int main(int argc, char **argv)
{
    const struct mps_ukernels *const *all;
    int n_all = mps_isa_list(&all);
    struct mps_pool *pools[3];
    struct mps_error err = {{0}};
    setvbuf(stdout, NULL, _IOLBF, 0); /* each line as it is known: under an emulator this takes minutes */
    th_blas_quiet();
    for (int t = 0; t < 3; t++)
        if (mps_pool_new(t + 1, &pools[t], &err)) {
            th_fail("pool of %d threads: %s", t + 1, err.msg);
            return th_summary();
        }
    th_pool_all(pools, 3);
    for (int f = 0; f < n_all; f++) {
        const struct mps_ukernels *uk = all[f];
        if (argc > 1 && !strstr(uk->name, argv[1]))
            continue;
        if (!mps_isa_runs(uk)) {
            th_skip("[%s] this CPU does not run these kernels (%s)", uk->name, uk->describe);
            continue;
        }
        th_seed(uk->name);
        for (size_t s = 0; s < sizeof th_shapes / sizeof th_shapes[0]; s++) {
            int64_t m, n, k;
            th_dims(&th_shapes[s], uk, &m, &n, &k);
            for (int layout = 0; layout < 4; layout++) { /* A packed; B packed; both per run; A's rows in place */
                enum th_epi epi = (enum th_epi)((s + (size_t)layout) % TH_EPI_COUNT);
                th_product(uk, pools[(s + (size_t)layout) % 3], m, n, k, layout == 0, layout == 1 || layout == 3,
                           layout == 3, epi, false);
            }
        }
        /* every epilogue on one shape that crosses the tile's edges, and NaN through each */
        for (int epi = 0; epi < TH_EPI_COUNT; epi++) {
            th_product(uk, pools[1], 2 * uk->mr + 1, 2 * uk->nr + 3, uk->kc + 3, true, false, false, (enum th_epi)epi,
                       false);
            th_product(uk, pools[0], uk->mr + 1, uk->nr + 1, 17, false, true, false, (enum th_epi)epi, true);
            th_product(uk, pools[1], uk->mr + 3, uk->nr + 1, uk->kc + 5, false, true, true, (enum th_epi)epi, true);
            /* B constant, fewer panels of rows than threads: each thread a part of one panel's rows */
            th_product(uk, pools[1], uk->mr, 2 * uk->nr, 100, false, true, true, (enum th_epi)epi, epi % 2 == 0);
            th_product(uk, pools[2], uk->mr - 1, uk->nr + 5, 70, false, true, false, (enum th_epi)epi, epi % 2 == 1);
            /* and panels not a multiple of the threads: equal rows a task, across the panels' edges */
            th_product(uk, pools[1], uk->mr + 2, uk->nr + 3, 90, false, true, true, (enum th_epi)epi, epi % 2 == 1);
            th_product(uk, pools[2], 4 * uk->mr + 1, 3 * uk->nr, 40, false, true, epi % 2 == 0, (enum th_epi)epi,
                       false);
        }
        th_dw3_all(uk);
        th_conv_all(uk);
        th_convt_all(uk);
    }
    for (int t = 0; t < 3; t++)
        mps_pool_free(pools[t]);
    return th_summary();
}
