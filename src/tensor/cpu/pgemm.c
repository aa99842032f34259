/* pgemm.c: the blocked, threaded product over the micro-kernels (pgemm.h).

   Loops, outermost first, in each task (a range of C's rows and columns):
   nc columns of B; kc of k (B's block packed here unless packed at compile);
   mc rows of A (A's block packed here unless packed at compile); then each
   nr-panel of B against each mr-panel of A: one micro-kernel call, which keeps
   its tile of C in registers over the kc block. A's panel (kc x mr) and B's
   (kc x nr) sit in L1, B's block (kc x nc) in L2. */
#include "pgemm.h"

#include <math.h>
#include <string.h>

#include "kernels.h"

/* Columns of B and rows of A per block, in panels of the family's tile. */
enum { MPS_PGEMM_NC_PANELS = 12, MPS_PGEMM_MC_PANELS = 16 };

struct mps_tile_epi mps_tile_epi_none(void)
{
    return (struct mps_tile_epi){.lo = -INFINITY, .hi = INFINITY, .slope = 1.0f};
}

bool mps_pgemm_act_epi(const struct mps_fused_act *act, struct mps_tile_epi *e)
{
    if (act && act->on && act->op == MPS_OP_HARD_SWISH) {
        e->hswish = true;
        return true;
    }
    return mps_act_clamp(act, &e->lo, &e->hi, &e->slope);
}

static int64_t mps_pgemm_up(int64_t v, int64_t w)
{
    return (v + w - 1) / w * w;
}

void mps_pgemm_pack_strided(const void *ctx, int64_t i0, int64_t ni, int64_t k0, int64_t kc, int w, float *dst)
{
    const struct mps_pgemm_strided *s = ctx;
    for (int64_t p = 0; p < ni; p += w, dst += kc * w) {
        int64_t rows = s->rows - (i0 + p) < w ? s->rows - (i0 + p) : w;
        rows = rows > 0 ? rows : 0;
        const float *src = s->data + (i0 + p) * s->rs + k0 * s->cs;
        if (s->rs == 1) { /* rows contiguous: one run of w per k (B row-major) */
            for (int64_t kk = 0; kk < kc; kk++) {
                const float *from = src + kk * s->cs;
                float *to = dst + kk * w;
                memcpy(to, from, sizeof(float) * (size_t)rows);
                for (int64_t r = rows; r < w; r++)
                    to[r] = 0.0f;
            }
        } else if (s->cs == 1) { /* k contiguous (A row-major: a Gemm's input): read along k, write across */
            for (int64_t r = 0; r < w; r++) {
                const float *from = src + r * s->rs;
                if (r < rows)
                    for (int64_t kk = 0; kk < kc; kk++)
                        dst[kk * w + r] = from[kk];
                else
                    for (int64_t kk = 0; kk < kc; kk++)
                        dst[kk * w + r] = 0.0f;
            }
        } else {
            for (int64_t kk = 0; kk < kc; kk++)
                for (int64_t r = 0; r < w; r++)
                    dst[kk * w + r] = r < rows ? src[r * s->rs + kk * s->cs] : 0.0f;
        }
    }
}

size_t mps_pgemm_packed_bytes(const struct mps_ukernels *uk, int64_t rows, int64_t k, bool as_a)
{
    return sizeof(float) * (size_t)(mps_pgemm_up(rows, as_a ? uk->mr : uk->nr) * (k > 0 ? k : 1));
}

void mps_pgemm_pack(const struct mps_ukernels *uk, const float *src, int64_t rs, int64_t cs, int64_t rows, int64_t k,
                    bool as_a, float *dst)
{
    struct mps_pgemm_strided s = {src, rs, cs, rows};
    mps_pgemm_pack_strided(&s, 0, mps_pgemm_up(rows, as_a ? uk->mr : uk->nr), 0, k, as_a ? uk->mr : uk->nr, dst);
}

/* Floats of one thread's scratch: a block of B (kc x nc) and one of A (mc x kc), each rounded to 64 bytes. */
static size_t mps_pgemm_thread_floats(const struct mps_ukernels *uk)
{
    size_t b = (size_t)(uk->kc * MPS_PGEMM_NC_PANELS * uk->nr), a = (size_t)(uk->kc * MPS_PGEMM_MC_PANELS * uk->mr);
    return (b + 15) / 16 * 16 + (a + 15) / 16 * 16;
}

size_t mps_pgemm_scratch(const struct mps_ukernels *uk, int threads)
{
    return sizeof(float) * mps_pgemm_thread_floats(uk) * (size_t)(threads > 0 ? threads : 1) + 64;
}

struct mps_pgemm_job {
    struct mps_pool *pool;
    const struct mps_ukernels *uk;
    int64_t m, n, k, ldc;
    const struct mps_pgemm_item *items;
    struct mps_tile_epi epi;         /* the items' bias and residual replace epi's */
    const struct mps_fused_act *act; /* applied after each finished tile, or NULL */
    float *scratch;                  /* 64-byte aligned */
    int64_t mt, nt;                  /* each item's task grid: mt ranges of rows x nt ranges of columns */
    int64_t m_step, n_step;          /* rows and columns a task covers (whole panels, or rows of one panel) */
};

/* One micro-kernel call: the tile at rows i, columns j of item it's C over k [pc, pc + kb);
   ap NULL: A's rows in place (it->a.rows, from column pc); dot: rows [i, i1), by the family's
   gemm_dot (the last few columns). Returns the rows done. */
static int64_t mps_pgemm_tile(const struct mps_pgemm_job *jb, const struct mps_pgemm_item *it, const float *ap,
                              const float *bp, int64_t i, int64_t i1, int64_t j, int64_t pc, int64_t kb, int flags,
                              bool dot)
{
    const struct mps_ukernels *uk = jb->uk;
    /* A's rows read in place, more than a tile's and fewer than two, split evenly where
       the second tile would have two rows or more: avx2's 8 as 4 + 4, not 6 + 2, whose
       2-row tile runs four chains of FMAs, each waiting on its own latency (the
       784-512-512-10 MLP at batch 8, one thread: 0.95 of the time, two: 0.96; avx512's
       10 rows as 5 + 5: 0.93). 7 as 4 + 3 measured 1.01 against 6 + 1: left so */
    int64_t left = i1 - i, rows = left;
    if (!dot && left > uk->mr)
        rows = !ap && left < 2 * uk->mr && left - uk->mr >= 2 ? (left + 1) / 2 : uk->mr;
    int cols = (int)(jb->n - j < uk->nr ? jb->n - j : uk->nr);
    struct mps_tile_epi e = jb->epi;
    e.bias = it->bias ? it->bias + (e.bias_cols ? j : i) : NULL;
    e.res = it->res ? it->res + i * e.ldr + j : NULL;
    float *ct = it->c + i * jb->ldc + j;
    const float *ar = ap ? NULL : it->a.rows + i * it->a.lda + pc;
    if (dot)
        uk->gemm_dot(kb, ar, it->a.lda, bp, ct, jb->ldc, rows, cols, flags, &e);
    else if (ap)
        uk->gemm(kb, ap, bp, ct, jb->ldc, (int)rows, cols, flags, &e);
    else
        uk->gemm_rows(kb, ar, it->a.lda, bp, ct, jb->ldc, (int)rows, cols, flags, &e);
    if ((flags & MPS_TILE_FINISH) && jb->act)
        for (int64_t r = 0; r < rows; r++)
            mps_cpu_act_inplace(jb->act, ct + r * jb->ldc, cols);
    return rows;
}

static int mps_pgemm_flags(int64_t pc, int64_t kb, int64_t k)
{
    return (pc > 0 ? MPS_TILE_ACCUMULATE : 0) | (pc + kb >= k ? MPS_TILE_FINISH : 0);
}

/* Rows [m0, m1) x columns [n0, n1) of C with B packed per run: a block of B
   (kc x nc) is packed once and stays in L2 while every panel of A passes. */
static void mps_pgemm_task_b(const struct mps_pgemm_job *jb, const struct mps_pgemm_item *it, float *abuf,
                             float *bbuf, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    const struct mps_pgemm_operand *a = &it->a, *b = &it->b;
    const struct mps_ukernels *uk = jb->uk;
    int mr = uk->mr, nr = uk->nr;
    int64_t kc = uk->kc, nc = (int64_t)MPS_PGEMM_NC_PANELS * nr, mc = (int64_t)MPS_PGEMM_MC_PANELS * mr;
    for (int64_t jc = n0; jc < n1; jc += nc) {
        int64_t ncb = n1 - jc < nc ? n1 - jc : nc;
        for (int64_t pc = 0; pc < jb->k || pc == 0; pc += kc) {
            int64_t kb = jb->k - pc < kc ? jb->k - pc : kc;
            b->pack(b->ctx, jc, mps_pgemm_up(ncb, nr), pc, kb, nr, bbuf);
            for (int64_t ic = m0; ic < m1; ic += mc) {
                int64_t mcb = m1 - ic < mc ? m1 - ic : mc;
                if (!a->packed)
                    a->pack(a->ctx, ic, mps_pgemm_up(mcb, mr), pc, kb, mr, abuf);
                for (int64_t jr = 0; jr < ncb; jr += nr)
                    for (int64_t ir = 0; ir < mcb; ir += mr) {
                        const float *ap = a->packed ? a->packed + (ic + ir) * jb->k + pc * mr : abuf + ir * kb;
                        mps_pgemm_tile(jb, it, ap, bbuf + jr * kb, ic + ir, m1, jc + jr, pc, kb,
                                       mps_pgemm_flags(pc, kb, jb->k), false);
                    }
            }
        }
    }
}

/* The same with B packed (at compile: a layer's weights times the activations;
   or by the caller, as Winograd's input transform does) and A per run or
   packed: a block of A (mc x kc) is packed once and stays in L2 while every
   panel of B streams past. */
static void mps_pgemm_task_a(const struct mps_pgemm_job *jb, const struct mps_pgemm_item *it, float *abuf,
                             int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    const struct mps_pgemm_operand *a = &it->a, *b = &it->b;
    const struct mps_ukernels *uk = jb->uk;
    int mr = uk->mr, nr = uk->nr;
    bool in_place = !a->packed && a->rows && uk->gemm_rows; /* A's rows read as they are, not packed */
    /* k in blocks only where A is packed (its block stays in L2): read in place, each
       block's tiles added C's partial sums in and out again, which cost more than the
       blocks saved (bench matmul, avx512, one thread, of OpenBLAS's SkylakeX kernels:
       n = 2048 0.81 in blocks of 256, 0.97 in one; 1024 1.02 / 1.08; at 2 threads
       4096 0.82 / 0.98; avx2 2048 0.82 / 0.95 of its Haswell kernels) */
    int64_t kc = in_place && jb->k > 0 ? jb->k : uk->kc, mc = (int64_t)MPS_PGEMM_MC_PANELS * mr;
    for (int64_t ic = m0; ic < m1; ic += mc) {
        int64_t mcb = m1 - ic < mc ? m1 - ic : mc;
        for (int64_t pc = 0; pc < jb->k || pc == 0; pc += kc) {
            int64_t kb = jb->k - pc < kc ? jb->k - pc : kc;
            if (!a->packed && !in_place)
                a->pack(a->ctx, ic, mps_pgemm_up(mcb, mr), pc, kb, mr, abuf);
            for (int64_t j = n0; j < n1; j += nr) {
                /* gemm_dot copies the columns out of their panel once for all the rows */
                bool dot = in_place && uk->gemm_dot && jb->n - j <= MPS_UGEMM_DOT_COLS && mcb >= MPS_UGEMM_DOT_ROWS;
                for (int64_t ir = 0; ir < mcb;) {
                    const float *ap = in_place   ? NULL
                                      : a->packed ? a->packed + (ic + ir) * jb->k + pc * mr
                                                  : abuf + ir * kb;
                    ir += mps_pgemm_tile(jb, it, ap, b->packed + j * jb->k + pc * nr, ic + ir, ic + mcb, j, pc, kb,
                                         mps_pgemm_flags(pc, kb, jb->k), dot);
                }
            }
        }
    }
}

static void mps_pgemm_tasks(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_pgemm_job *jb = ctx;
    const struct mps_ukernels *uk = jb->uk;
    float *bbuf = jb->scratch + mps_pgemm_thread_floats(uk) * (size_t)mps_pool_self(jb->pool);
    float *abuf = bbuf + ((size_t)(uk->kc * MPS_PGEMM_NC_PANELS * uk->nr) + 15) / 16 * 16;
    for (int64_t t = begin; t < end; t++) {
        const struct mps_pgemm_item *it = &jb->items[t / (jb->mt * jb->nt)];
        int64_t sub = t % (jb->mt * jb->nt), m0 = sub / jb->nt * jb->m_step, n0 = sub % jb->nt * jb->n_step;
        int64_t m1 = m0 + jb->m_step < jb->m ? m0 + jb->m_step : jb->m;
        int64_t n1 = n0 + jb->n_step < jb->n ? n0 + jb->n_step : jb->n;
        if (m0 >= m1 || n0 >= n1)
            continue;
        if (it->b.packed)
            mps_pgemm_task_a(jb, it, abuf, m0, m1, n0, n1);
        else
            mps_pgemm_task_b(jb, it, abuf, bbuf, m0, m1, n0, n1);
    }
}

/* Whether a product of constant B splits by A's rows though they are fewer
   than its columns: each thread then reads all of B, but only the rows of A
   (a batch's images) that, after a layer split the same way, it made
   itself. A row the other thread made crosses between the cores, and so
   does the write after, on the next run, to the lines the other core has
   read: mnist_cnn's Gemm at batch 8, split by columns, read the pooled
   output of the Conv before on both cores, and the Conv's stores then
   waited on those lines (perf: a sixth of the time at 2 threads in its
   copies; the Conv 87 us a run with the cores on two complexes, 58 on
   one). Where B is up to 32 times A (n <= 32 m) the extra reads of B cost
   less than the crossings; resnet18's 512 -> 1000 at batch 8 (B 128 times
   A) ran 0.0575 -> 0.0777 ms split by rows. Split by rows, interleaved with
   onnxruntime (2 threads, batch 8, Zen 4): mnist_cnn 0.666 -> 0.627 with
   the cores on one complex, 0.783 -> 0.661 on two; fashion_cnn 0.671 ->
   0.647 and 0.744 -> 0.653. */
static bool mps_pgemm_keeps_rows(int64_t count, const struct mps_pgemm_item *items, int64_t m, int64_t n,
                                 int64_t threads)
{
    return count == 1 && items[0].b.packed && !items[0].a.packed && m >= 2 * threads && n <= 32 * m;
}

/* Whether a batch splits each product by rows first (see mps_pgemm_batch). */
static bool mps_pgemm_rows_first(int64_t m, int64_t n, bool b_packed)
{
    return m > n || (m == n && b_packed);
}

size_t mps_pgemm_shared_bytes(int64_t count, int64_t m, int64_t n, int64_t k)
{
    return mps_pgemm_rows_first(m, n, false) ? sizeof(float) * (size_t)(count * (n + 31) / 32 * 32 * k) + 64 : 0;
}

struct mps_pgemm_prepack {
    const struct mps_pgemm_item *items;
    int64_t n_panels, k, nr;
    float *dst; /* item i's B at dst + i * n_panels * nr * k */
};

/* Packs panels [begin, end) (item * n_panels + panel) of the items' B, all of k. */
static void mps_pgemm_prepack_panels(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_pgemm_prepack *pp = ctx;
    for (int64_t t = begin; t < end; t++) {
        int64_t item = t / pp->n_panels, j = t % pp->n_panels * pp->nr;
        const struct mps_pgemm_operand *b = &pp->items[item].b;
        b->pack(b->ctx, j, pp->nr, 0, pp->k, (int)pp->nr, pp->dst + (item * pp->n_panels * pp->nr + j) * pp->k);
    }
}

/* A batch split by rows whose B is packed per run: every task would pack all
   of B, so it is packed once, in parallel, into shared, and the batch run on
   that. Apart from mps_pgemm_batch, whose every call (a 64 x 64 x 64 product
   a run) paid for the items' copies on its stack. */
static __attribute__((noinline)) void mps_pgemm_batch_prepacked(struct mps_pool *pool, const struct mps_ukernels *uk,
                                                               int64_t count, const struct mps_pgemm_item *items,
                                                               int64_t m, int64_t n, int64_t k, int64_t ldc,
                                                               const struct mps_tile_epi *epi,
                                                               const struct mps_fused_act *act, void *scratch,
                                                               void *shared)
{
    int64_t n_panels = (n + uk->nr - 1) / uk->nr;
    struct mps_pgemm_prepack pp = {items, n_panels, k, uk->nr, (float *)(((uintptr_t)shared + 63) & ~(uintptr_t)63)};
    mps_pool_for(pool, count * n_panels, 8 * uk->nr * (k > 0 ? k : 1), mps_pgemm_prepack_panels, &pp);
    struct mps_pgemm_item packed[MPS_PGEMM_PREPACK_MAX];
    for (int64_t i = 0; i < count; i++) {
        packed[i] = items[i];
        packed[i].b = (struct mps_pgemm_operand){.packed = pp.dst + i * n_panels * uk->nr * k};
    }
    mps_pgemm_batch(pool, uk, count, packed, m, n, k, ldc, epi, act, scratch, NULL);
}

void mps_pgemm_batch(struct mps_pool *pool, const struct mps_ukernels *uk, int64_t count,
                     const struct mps_pgemm_item *items, int64_t m, int64_t n, int64_t k, int64_t ldc,
                     const struct mps_tile_epi *epi, const struct mps_fused_act *act, void *scratch, void *shared)
{
    if (m <= 0 || n <= 0 || count <= 0)
        return;
    if (shared && !items[0].b.packed && mps_pgemm_rows_first(m, n, false) && count <= MPS_PGEMM_PREPACK_MAX) {
        mps_pgemm_batch_prepacked(pool, uk, count, items, m, n, k, ldc, epi, act, scratch, shared);
        return;
    }
    int64_t n_panels = (n + uk->nr - 1) / uk->nr;
    struct mps_pgemm_job jb = {.pool = pool, .uk = uk, .m = m, .n = n, .k = k, .ldc = ldc, .items = items,
                               .epi = epi ? *epi : mps_tile_epi_none(),
                               .act = act && act->on ? act : NULL,
                               .scratch = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63)};
    /* tasks: about two a thread over the batch (a slow thread is evened out),
       each product split along its larger side first: tasks of other columns
       each read all of A (a 512-channel layer's 9.4 MB of weights, four times
       over for 49 output pixels), tasks of other rows each pack or read all of
       B; on a tie, along the side of the operand packed per run, whose
       packing is the dearer copy. Along the other side too when the first
       has too few panels for the threads. */
    int64_t threads = mps_pool_threads(pool), m_panels = (m + uk->mr - 1) / uk->mr,
            want = (2 * threads + count - 1) / count;
    bool keep_rows = mps_pgemm_keeps_rows(count, items, m, n, threads);
    bool rows_first = keep_rows || mps_pgemm_rows_first(m, n, items[0].b.packed != NULL);
    int64_t first = rows_first ? m_panels : n_panels, second = rows_first ? n_panels : m_panels;
    int64_t t1 = first < want ? first : want, t2 = t1 * count >= threads ? 1 : (want + t1 - 1) / t1;
    t2 = t2 < second ? t2 : second;
    jb.mt = rows_first ? t1 : t2;
    jb.nt = rows_first ? t2 : t1;
    jb.n_step = (n_panels + jb.nt - 1) / jb.nt * uk->nr;
    jb.m_step = (m_panels + jb.mt - 1) / jb.mt * uk->mr;
    /* A not packed in panels: as many tasks of equal rows as a multiple of the threads (parts of
       one panel where it has fewer panels than threads). By panels, avx2's 8 rows (6 + 2) left one
       thread three quarters of the work: mnist_mlp at batch 8, two threads, 0.84-0.88 of the time */
    if (keep_rows) {
        jb.mt = m_panels < threads ? threads : t1 / threads * threads, jb.nt = 1;
        jb.m_step = (m + jb.mt - 1) / jb.mt, jb.n_step = n_panels * uk->nr;
    }
    /* a task's work counts the rows and columns it has, not the whole panels they round up to
       (a batch-1 layer, one row: mnist_mlp's 128 -> 64 counted 8 rows, went to two threads,
       and took 1.2 us there instead of 0.2 with the cores on two core complexes) */
    int64_t rows = m < jb.m_step ? m : jb.m_step, cols = n < jb.n_step ? n : jb.n_step;
    mps_pool_for(pool, count * jb.mt * jb.nt, 2 * rows * cols * (k > 0 ? k : 1), mps_pgemm_tasks, &jb);
}

void mps_pgemm(struct mps_pool *pool, const struct mps_ukernels *uk, int64_t m, int64_t n, int64_t k,
               const struct mps_pgemm_operand *a, const struct mps_pgemm_operand *b, float *c, int64_t ldc,
               const struct mps_tile_epi *epi, const struct mps_fused_act *act, void *scratch)
{
    struct mps_pgemm_item it = {.a = *a, .b = *b, .c = c, .bias = epi ? epi->bias : NULL, .res = epi ? epi->res : NULL};
    mps_pgemm_batch(pool, uk, 1, &it, m, n, k, ldc, epi, act, scratch, NULL);
}
