/* pgemm.h: C = A B on the CPU backend's own micro-kernels (ukernels.h), one
   operand packed once at compile (a layer's weights), the other packed per
   run into per-thread panels, blocked for the caches (kc rows of k, mc rows
   of A, nc columns of B at a time) and split over the pool's threads by tiles
   of C. Internal to the CPU backend.

       // at compile: the weights W[m][k] of a convolution, as A
       size_t bytes = mps_pgemm_packed_bytes(uk, m, k, true);
       mps_pgemm_pack(uk, w, k, 1, m, k, true, packed);
       // per run: B packed by a callback (an implicit im2col), C = act(A B + bias)
       struct mps_pgemm_operand A = {.packed = packed}, B = {.pack = my_pack, .ctx = &geom};
       mps_pgemm(pool, uk, m, n, k, &A, &B, y, n, &epi, scratch);

   Packed layout: panels of w = mr (for A) or nr (for B) rows of the operand,
   each k groups of w floats (element (i, kk) of the operand at panel i / w,
   offset kk * w + i % w), zero-padded to whole panels. */
#ifndef MPS_CPU_PGEMM_H
#define MPS_CPU_PGEMM_H

#include <stddef.h>

#include "../op.h"
#include "thread_pool.h"
#include "ukernels.h"

/* An operand of C = A B. Its "rows" are A's rows or B's columns (the
   dimension of C it spans) and its k runs along the product. */
struct mps_pgemm_operand {
    const float *packed; /* packed once (mps_pgemm_pack); NULL when pack is used */
    /* A only, where not NULL: its row i (k floats, unit stride) at rows + i lda,
       read in place by a family's gemm_rows (families without one use pack) */
    const float *rows;
    int64_t lda;
    /* packs rows [i0, i0 + ni) and k [k0, k0 + kc) into panels of w at dst (ni
       rounded up to w, padded with zeros) */
    void (*pack)(const void *ctx, int64_t i0, int64_t ni, int64_t k0, int64_t kc, int w, float *dst);
    const void *ctx;
};

/* A plain strided matrix as an operand packed per run: element (i, kk) at
   data[i * rs + kk * cs]. */
struct mps_pgemm_strided {
    const float *data;
    int64_t rs, cs, rows; /* rows: how many exist (past them: zeros) */
};
void mps_pgemm_pack_strided(const void *ctx, int64_t i0, int64_t ni, int64_t k0, int64_t kc, int w, float *dst);

/* Bytes of an operand of rows x k packed for uk (as A when as_a, else as B). */
size_t mps_pgemm_packed_bytes(const struct mps_ukernels *uk, int64_t rows, int64_t k, bool as_a);
/* Packs the operand whose element (i, kk) is src[i * rs + kk * cs] (rows x k) into dst. */
void mps_pgemm_pack(const struct mps_ukernels *uk, const float *src, int64_t rs, int64_t cs, int64_t rows, int64_t k,
                    bool as_a, float *dst);

/* Scratch bytes mps_pgemm needs for threads threads. */
size_t mps_pgemm_scratch(const struct mps_ukernels *uk, int threads);

/* The fused activation as a tile epilogue: lo, hi and slope for Relu, Clip and
   LeakyRelu; false for the others, which the caller applies after the tile
   (mps_pgemm does, through mps_cpu_act_inplace). */
bool mps_pgemm_act_epi(const struct mps_fused_act *act, struct mps_tile_epi *e);

/* One product of a batch (mps_pgemm_batch): its operands, its C, and its own
   bias and residual (NULL: none; laid out as the batch's epilogue says). */
struct mps_pgemm_item {
    struct mps_pgemm_operand a, b;
    float *c;
    const float *bias, *res;
};

/* count independent products of one shape (a convolution's images and groups,
   Winograd's 16), in one job on the pool's threads: each item's C[m x n]
   (row-major, ldc) = A B, then the epilogue (epi: the bias per row or column,
   the residual's ldr, the clamp and slope; its bias and res are ignored) and
   act (an activation no tile epilogue computes; NULL or off: none). Every
   item's B packed, or every item's B not. scratch: mps_pgemm_scratch bytes.
   shared: NULL, or mps_pgemm_shared_bytes(count, m, n, k) bytes, where a B
   packed per run is packed once for all tasks when they split the rows (more
   rows than columns: a 512-channel layer on a 7 x 7 image), instead of once
   by each (count at most MPS_PGEMM_PREPACK_MAX). */
enum { MPS_PGEMM_PREPACK_MAX = 64 };
size_t mps_pgemm_shared_bytes(int64_t count, int64_t m, int64_t n, int64_t k);
void mps_pgemm_batch(struct mps_pool *pool, const struct mps_ukernels *uk, int64_t count,
                     const struct mps_pgemm_item *items, int64_t m, int64_t n, int64_t k, int64_t ldc,
                     const struct mps_tile_epi *epi, const struct mps_fused_act *act, void *scratch, void *shared);

/* One product: C[m x n] (row-major, ldc) = A B, then epi (bias, residual,
   clamp and slope; NULL: none) and act, as mps_pgemm_batch. */
void mps_pgemm(struct mps_pool *pool, const struct mps_ukernels *uk, int64_t m, int64_t n, int64_t k,
               const struct mps_pgemm_operand *a, const struct mps_pgemm_operand *b, float *c, int64_t ldc,
               const struct mps_tile_epi *epi, const struct mps_fused_act *act, void *scratch);

#endif
