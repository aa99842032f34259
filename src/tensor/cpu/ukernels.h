/* ukernels.h: one family of the CPU backend's register-blocked kernels
   (avx512, avx2, neon, c; isa.h chooses). Internal to the CPU backend.

   The GEMM micro-kernel computes one tile of C = A B:

       C[rows x cols] (=, or += with MPS_TILE_ACCUMULATE) sum over k of a[k][r] * b[k][c]

   for rows <= mr, cols <= nr, from two packed panels (pgemm.h packs them):
   a: k groups of mr floats (row r of the tile at a[kk * mr + r]), b: k groups
   of nr floats. Panels are padded with zeros to mr and nr; C is row-major
   with leading dimension ldc, and only rows x cols of it are touched. With
   MPS_TILE_FINISH the store applies the epilogue: + bias, + residual, then
   the clamp and the slope (Relu, Clip, LeakyRelu), then HardSwish, in that
   order. */
#ifndef MPS_CPU_UKERNELS_H
#define MPS_CPU_UKERNELS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum {
    MPS_TILE_ACCUMULATE = 1, /* add to C (a later block of k) instead of overwriting it */
    MPS_TILE_FINISH = 2,     /* the last block of k: apply the epilogue */
};

/* What a finished tile's store applies; positions are the tile's own. */
struct mps_tile_epi {
    const float *bias;   /* NULL, or bias[r] for each row (bias_cols: bias[c] for each column) */
    bool bias_cols;
    const float *res;    /* NULL, or a tile laid out like C, added before the activation */
    int64_t ldr;
    float lo, hi, slope; /* y = min(max(y, lo), hi), then y < 0 ? slope * y : y */
    bool hswish;         /* then y * min(max(y / 6 + 1 / 2, 0), 1) (unary.c's HardSwish) */
};

/* The low n (< 8) bytes of w to out in constant-size moves (the int8 stores, the byte MaxPool). */
static inline void mps_put_bytes(void *to, uint64_t w, int n)
{
    unsigned char *out = to;
    if (n & 4) {
        uint32_t v = (uint32_t)w;
        memcpy(out, &v, 4);
        out += 4, w >>= 32;
    }
    if (n & 2) {
        uint16_t v = (uint16_t)w;
        memcpy(out, &v, 2);
        out += 2, w >>= 16;
    }
    if (n & 1)
        *out = (unsigned char)w;
}

/* The epilogue that does nothing: no bias, no residual, identity activation. */
struct mps_tile_epi mps_tile_epi_none(void);

typedef void (*mps_ugemm_fn)(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int rows, int cols,
                             int flags, const struct mps_tile_epi *epi);
/* The same with A's rows read in place: row r's k floats at a + r lda (only
   rows < rows of them), no packed panel: a GEMM's run-time A (a layer's
   input) need not be packed (at 64 x 64 x 64 the packing cost half the
   products). Optional: NULL where a family has none (pgemm.c packs A). */
typedef void (*mps_ugemm_rows_fn)(int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,
                                  int rows, int cols, int flags, const struct mps_tile_epi *epi);

/* A product's last few columns (cols <= 4), A's rows in place, as gemm_rows
   computes them:

       c[r ldc + j] = sum over kk < k of a[r lda + kk] * b[kk nr + j],  r < rows, j < cols

   b the columns' packed panel (as gemm_rows reads it), any number of rows,
   the store as gemm_rows's (flags, the epilogue, row r's bias and residual
   at r). Along k in the vectors: the dot products of A's rows with B's
   columns, where a tile's vectors hold a row's columns and would compute 4
   in 8 lanes or 1 in 8 (n = 1 ran at 0.2 of OpenBLAS's kernel). Optional. */
typedef void (*mps_ugemm_dot_fn)(int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,
                                 int64_t rows, int cols, int flags, const struct mps_tile_epi *epi);
enum { MPS_UGEMM_DOT_COLS = 4, MPS_UGEMM_DOT_ROWS = 16 };

/* One output plane of a 3x3 depthwise convolution (the mobilenets' layer):
   for oh < out_h, ow < out_w,

       y[oh out_w + ow] = act(bias + sum over th, tw < 3 of k[3 th + tw] * x(oh s - pt + th, ow s - pl + tw))

   x(i, j) = x[i w + j] inside the h x w input plane, else 0 (the padding);
   nothing outside the plane is read. act is the epilogue's clamp and slope
   (its bias and residual must be NULL). */
struct mps_dw3_geom {
    int64_t h, w;         /* the input plane */
    int64_t pt, pl;       /* padding before the first row and column */
    int64_t out_h, out_w; /* the output plane */
    int s;                /* stride, 1 or 2, along both axes */
};
typedef void (*mps_udw3_fn)(const struct mps_dw3_geom *g, const float *x, const float *k, float bias, float *y,
                            const struct mps_tile_epi *epi);

/* The direct convolution's tile (conv_direct.c): as the GEMM tile, over the
   whole k, but row kk of B's panel is read in place at b + off[kk]: the nr
   floats there, all of them (the caller makes them readable). With b a
   zero-padded image and off[kk] the offset of input channel and tap kk, the
   columns are output positions and no im2col is ever built. The store
   applies the epilogue (bias a row, the residual where the family has
   conv_res, clamp and slope) and keeps the columns whose bit is set in
   keep, packed one after another from c + r ldc: the output positions a
   tile holds are one run of the output plane, with the padding's columns
   between them dropped (the residual is read at the same places, row r at
   res + r ldr). Bits of keep at or past nr are 0. */
typedef void (*mps_uconv_fn)(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,
                             int rows, uint64_t keep, const struct mps_tile_epi *epi);

/* The direct convolution's tile with a 2x2 stride-2 MaxPool after it
   (optional; conv_direct.c): as conv, but the tile's columns are nr / 2
   positions of each of two output rows, pitch apart (B's row kk at
   b + off[kk] and b + off[kk] + pitch), and the store applies the epilogue
   (bias a row, clamp and slope; no residual) to both, then keeps the
   maximum of each 2x2 window (columns 2 j and 2 j + 1 of both rows; a NaN
   kept): nr / 4 outputs of row r a tile (avx512's 8, avx2's 4), the n of a
   whole row to c + r ldc in one call, the tile moving nr / 2 columns of B
   and nr / 4 of c a step. The Conv's rows are never stored. */
typedef void (*mps_upconv_fn)(int64_t k, const float *a, const float *b, const int32_t *off, int64_t pitch, float *c,
                              int64_t ldc, int rows, int n, const struct mps_tile_epi *epi);

/* The direct convolution's transposed tile (conv_direct.c): the output
   channels in the vectors, the positions broadcast, for rows <= mt
   positions and cols <= nr channels:

       c[o ldc + j] = sum over kk < k of a[kk nr + o] * b[off[kk] + j]

   a: W's channels packed as the GEMM's B panels (k groups of nr floats,
   zeros past the channels). The positions are one run of the output (an
   output row's, or the plane's for a pointwise layer), so no column is
   computed to be dropped: on narrow planes (7x7: 49 outputs in 64 lanes, 14
   of them padding) it keeps every lane busy where the conv tile cannot.
   Only b[off[kk] + j] for j < rows is read. The store applies the
   epilogue (bias[o] a channel, clamp and slope; no residual) and writes
   the rows floats of each of the cols channels, nothing else. NULL in a
   family without one (the conv tile then runs every layer). */
typedef void (*mps_uconvt_fn)(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,
                              int rows, int cols, const struct mps_tile_epi *epi);

/* Copies the floats of row whose bit is set in keep to c, one after another
   (a conv tile's store, run by run). */
static inline void mps_tile_keep_copy(float *c, const float *row, uint64_t keep)
{
    while (keep) {
        int j = __builtin_ctzll(keep), len = ~(keep >> j) ? __builtin_ctzll(~(keep >> j)) : 64 - j;
        for (int i = 0; i < len; i++)
            *c++ = row[j + i];
        keep = j + len >= 64 ? 0 : keep & ~0ull << (j + len);
    }
}

/* min(max(t, 0), 1) where t < 1, else 1 (NaN included): HardSigmoid's clamp,
   as selects (a loop of them vectorizes; fminf and fmaxf were library
   calls). unary.c and the epilogue below share it, so that a HardSwish
   fused into a Conv and one run alone agree to the bit. */
static inline float mps_tile_hard_sigmoid(float t)
{
    t = t < 1.0f ? t : 1.0f;
    return t > 0.0f ? t : 0.0f;
}

/* The epilogue's activation on one value, its fields in registers: what the
   kernels' stores do, and what the plain-C loops of ukernel_wino.h and
   ukernel_dw.h vectorize (one select a line, which GCC's if-conversion takes;
   NaN stays NaN). A loop over many elements should pass hswish as a
   constant: the Winograd output transform, reading it as a variable, stayed
   scalar (ukernel_wino.h now has a loop per value); dwk's 64-wide step
   vectorizes either way (its object code has no scalar compares). */
static inline float mps_tile_act(float v, float lo, float hi, float slope, bool hswish)
{
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    float s = slope * v; /* outside the select: a product inside one is not if-converted (it might trap) */
    v = v < 0 ? s : v;
    if (hswish)
        v = v * mps_tile_hard_sigmoid(v / 6.0f + 0.5f); /* as unary.c computes it */
    return v;
}

static inline float mps_tile_epi_act(const struct mps_tile_epi *e, float v)
{
    return mps_tile_act(v, e->lo, e->hi, e->slope, e->hswish);
}

/* Output planes of a depthwise convolution of any 2-D window (dwk;
   ukernel_dw.h has it once, each family compiles it for its vectors): for
   each p < planes, the plane x + p h w, taps k + p kh kw, bias bias[p]
   (NULL: 0) give y + p out_h out_w:

       y[oh out_w + ow] = act(bias + sum over th < kh, tw < kw of
                              k[th kw + tw] * x(oh sh - pt + th dh, ow sw - pl + tw dw))

   x(i, j) as for dw3; sw is 1 or 2; act the epilogue's activation (its bias
   and residual unused). The band of input rows a step of output rows reads
   is copied, zero-padded, into MPS_DWK_BAND floats on the stack (and the
   sums kept in as many); false (nothing written) where not even one output
   row's fits, or the window has more than 128 taps. */
enum { MPS_DWK_BAND = 8192 };
struct mps_dwk_geom {
    int64_t h, w, pt, pl, out_h, out_w;
    int kh, kw, sh, sw, dh, dw;
    int64_t oh0, oh1; /* dwb only: the output rows it makes, [oh0, oh1) (oh1 0: all) */
};
typedef bool (*mps_udwk_fn)(const struct mps_dwk_geom *g, const float *x, const float *k, const float *bias, float *y,
                            int64_t planes, const struct mps_tile_epi *epi);

/* Depthwise planes sixteen at once, the channels in the vectors (dwb;
   optional, NULL where a family has none): the geometry as dwk's; blocks
   of MPS_DWB_PLANES planes, each block's input planes one after another in
   x, then the next block's (y likewise), k their taps (taps floats a
   plane), bias NULL or a float a plane; false (nothing written) where the
   window has more than MPS_DWB_TAPS taps or not one output row's input fits
   the family's buffer, or ex's terms below are not met (blocks 0: only
   whether it takes the layer). */
enum { MPS_DWB_PLANES = 16, MPS_DWB_TAPS = 25, MPS_DWB_EXPAND_K = 256 };
/* Output rows under which dwb runs a layer rather than the plane kernels
   (conv_depthwise.c's mps_dwb_applies says why) */
enum { MPS_DWB_WIDE = 64 };
/* ex (NULL: none): the input planes are not in x but made as they are read,
   by the 1x1 convolution before the layer: plane m of the blocks (m counted
   from the first block's first) is act(bias[m] + sum over c < k of w[m k + c]
   times plane c of ex->x, whose k planes are h x w, at least 16 floats);
   k <= MPS_DWB_EXPAND_K. The padding stays zero (not act(bias)). */
struct mps_dwb_expand {
    const float *x, *w, *bias; /* bias NULL: none */
    int64_t k;
    struct mps_tile_epi act; /* its clamp, slope and HardSwish */
};
/* q (NULL: floats): a depthwise QLinearConv's bytes in and out. x's bytes are
   the sums' operands as (x ^ flip) - zx (exact), and output plane m's sums
   (integers below 2^24 in magnitude, so exact too) are stored by req[m] (m
   counted from the first block's first plane) as the family's int8 store
   stores them (ukernel_q.h: bytes, or floats where req says so), with no
   pass over floats before or after; bias and epi are then none. */
struct mps_qreq;
struct mps_dwb_q {
    float zx;
    uint8_t flip;
    const struct mps_qreq *req;
};
typedef bool (*mps_udwb_fn)(const struct mps_dwk_geom *g, const void *x, const float *k, const float *bias, void *y,
                            int64_t blocks, const struct mps_tile_epi *epi, const struct mps_dwb_expand *ex,
                            const struct mps_dwb_q *q);

/* A 2-D MaxPool of one plane (pooling.c's plane path): y[oh][ow] = the
   maximum of x over rows oh sh - pt .. + kh and columns ow sw - pl .. + kw
   that lie inside the h x w plane, a NaN anywhere in a window giving NaN.
   Every window reaches at least one cell of the plane; sw is 1 or 2;
   (out_w - 1) sw + kw <= MPS_UMAXPOOL_SPAN. Nothing outside the plane is
   read. Optional: NULL where a family has none (pooling.c's loops run). */
enum { MPS_UMAXPOOL_SPAN = 4096 };
struct mps_maxpool_geom {
    int64_t h, w, pt, pl, out_h, out_w;
    int kh, kw, sh, sw;
};
typedef void (*mps_umaxpool_fn)(const struct mps_maxpool_geom *g, const float *x, float *y);

/* Winograd F(2x2, 3x3)'s transforms around its products (winograd.c;
   ukernel_wino.h has them once, each C-loop family compiles them for its
   vectors; avx512 and avx2 have their own, ukernel_avx512_wino.c and
   ukernel_avx2_wino.c).
   wino_in: for count tiles of the plane x (struct mps_wino_plane) from its
   tile j on, row by row of tiles, V = B^T d B, its element k (row-major)
   to v[k vk + t] for the t-th; it may write anything to the room (0 .. 7)
   floats past each v + k vk + count (the caller's lanes written after).
   The plane is the input itself: the windows' cells outside it (the pads)
   are read as zeros. wino_out:
   for count tiles, M's element k at m[k mk + t], Y = A^T M A + bias through
   the epilogue's activation (its bias and res unused): the 2x2 outputs of
   tile t to y0[2 t], y0[2 t + 1] and y1[2 t], y1[2 t + 1]. wino_pool: as
   wino_out, then the maximum of tile t's four outputs to y[t] (a NaN kept):
   a 2x2 stride-2 MaxPool whose windows are the tiles. */
struct mps_wino_plane {
    int64_t h, w;   /* the plane: h rows of w floats */
    int64_t pt, pl; /* tile (ty, tx)'s 4x4 window from row 2 ty - pt, column 2 tx - pl */
    int64_t tw;     /* tiles a row */
};
typedef void (*mps_uwino_in_fn)(const float *x, const struct mps_wino_plane *p, int64_t j, int64_t count, int64_t room,
                                float *v, int64_t vk);
typedef void (*mps_uwino_out_fn)(const float *m, int64_t mk, int64_t count, float bias, float *y0, float *y1,
                                 const struct mps_tile_epi *epi);
typedef void (*mps_uwino_pool_fn)(const float *m, int64_t mk, int64_t count, float bias, float *y,
                                  const struct mps_tile_epi *epi);

/* v[i] = sigmoid or tanh of v[i] clipped to [-clip, clip], i < n (ukernel_act.h). */
typedef void (*mps_uact_fn)(float *v, int64_t n, float clip);

/* The int8 product's tile (qlinear.c):

       c[r nr + j] = sum over kk < 4 k4 of a[r lda + kk] * B[kk][j]

   for r < rows <= mr and every j < nr: a's rows are unsigned bytes read in
   place (4 k4 of them each, lda bytes apart), B a panel of signed bytes in
   groups of four k, b[(g nr + j) 4 + i] = B[4 g + i][j] (zeros past the
   columns), c int32 with nr per row. Exact in every family: the sums are
   integers and no step saturates (a product of a byte and a signed byte
   and a sum of 2^15 of them fit in int32). */
typedef void (*mps_uqgemm_fn)(int64_t k4, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *c, int rows);
/* The same tile with the signs the other way, always mr rows: a's rows
   signed (a conv's weights, one output channel a row, packed at compile in
   groups as B is, a[(g mr + r) 4 + i] = row r's weight 4 g + i, zeros past
   the channels: int8, or int16 where the family's wide_w says so), B's
   panel unsigned (nr output positions of the image), so that a row of c is
   nr neighbouring values of one output plane. */
typedef void (*mps_uqgemm_w_fn)(int64_t k4, const void *a, const uint8_t *b, int32_t *c);
/* The requantizing store of n sums of one output channel (ukernel_q.h
   says how; qlinear.c fills the parameters from its packed header). rs:
   the row sums zw multiplies, NULL where zw is 0. */
struct mps_qreq {
    float mult, add, lo, hi, slope;
    uint32_t corr, zw;
    int32_t yz;
    bool quant; /* bytes out, else floats */
};
typedef void (*mps_uqstore_fn)(const int32_t *t, const int32_t *rs, int n, const struct mps_qreq *r, void *out);
/* The store of n sums held as floats, each an integer below 2^24 in
   magnitude (a depthwise conv's, made by the f32 plane kernels), no row sums. */
typedef void (*mps_uqstore_f_fn)(const float *s, int64_t n, const struct mps_qreq *r, void *out);
/* y[i] = table[x[i]] for i < n (a QLinearConcat's requantization, made a
   table of the 256 bytes). */
typedef void (*mps_ulut_fn)(const uint8_t *table, const uint8_t *x, int64_t n, uint8_t *y);
/* by_weights and the store in one, the sums never leaving registers (a
   conv's tile): row r < rows (an output channel) requantized by rq[r] into
   y + r ldy elements (bytes or floats, as rq says), its first cols lanes;
   rs as the store's. NULL where the family has none (then by_weights and
   store). */
typedef void (*mps_uqgemm_ws_fn)(int64_t k4, const void *a, const uint8_t *b, const struct mps_qreq *rq, int rows,
                                 const int32_t *rs, int cols, void *y, int64_t ldy);
/* Bytes dequantized, ((float)(x ^ flip) - z) * s, and a quantizer,
   round(v / s) + z saturated to [lo, hi] (ukernel_q.h's mps_qto_byte). */
struct mps_qdeq {
    float s, z;
    uint8_t flip;
};
struct mps_qto {
    float s, z, lo, hi, tlo, thi;
};
/* y[i] = Q(clamp(DQa(a[i]) + DQb(b[i]), lo, hi)) for i < n; b NULL: DQa(a[i]) alone (QLinearAdd, QLinearConcat). */
typedef void (*mps_uqrequant_fn)(const uint8_t *a, const struct mps_qdeq *da, const uint8_t *b,
                                 const struct mps_qdeq *db, float lo, float hi, const struct mps_qto *q, int64_t n,
                                 uint8_t *y);
/* y[i] = round(x[i] / s) + z saturated, and y[i] = ((float)(x[i] ^ flip) - z) * s, for i < n
   (QuantizeLinear and DequantizeLinear per tensor, qcast.c). */
typedef void (*mps_uquantize_fn)(const float *x, int64_t n, const struct mps_qto *q, uint8_t *y);
typedef void (*mps_udequantize_fn)(const uint8_t *x, int64_t n, const struct mps_qdeq *d, float *y);
/* y[i] = Q(DQa(a[i]) * m[i * mstep]) for i < n, mstep 0 or 1 (QLinearMul:
   the product of two dequantized floats, then quantized). */
typedef void (*mps_uqmul_fn)(const uint8_t *a, const struct mps_qdeq *da, const float *m, int64_t mstep,
                             const struct mps_qto *q, int64_t n, uint8_t *y);
/* s plus x[0 .. n) (n <= 256) dequantized, summed as mps_cpu_sum_run sums
   floats (QLinearGlobalAveragePool). */
typedef double (*mps_uqsum_fn)(double s, const uint8_t *x, const struct mps_qdeq *d, int64_t n);
/* A 3x3 depthwise QLinearConv of one plane of bytes on int8 products
   (optional: NULL where a family has none): dilation 1, sw 1 or 2, the
   geometry as dwk's (oh0, oh1 unused); t the plane's taps less their zero
   point as signed bytes, three rows of four (the fourth 0), then an int32,
   -zx times their sum (qlinear.c packs them where every tap fits a byte);
   the sums of (x ^ flip) times the taps, the pads as zx, stored by q->req
   (bytes, or floats where it says so) into y's out_h x out_w. x NULL: only
   whether it takes g on this CPU (avx512's needs AVX512_VBMI; avx-vnni's
   a plane whose padded copy fits its stack buffer). */
typedef bool (*mps_uqdw3_fn)(const struct mps_dwk_geom *g, const uint8_t *x, const int8_t *t, const struct mps_dwb_q *q,
                             void *y);
struct mps_uqgemm {
    const char *name; /* "avx512-vnni" */
    int mr, nr;
    bool (*supported)(void);
    mps_uqgemm_fn fn;
    mps_uqgemm_w_fn by_weights;
    mps_uqstore_fn store;
    mps_uqrequant_fn requant;
    mps_uquantize_fn quantize;
    mps_udequantize_fn dequantize;
    mps_uqgemm_ws_fn by_weights_store;
    mps_uqstore_f_fn store_f;
    mps_ulut_fn lut; /* optional: NULL where the plain loop does as well */
    bool wide_w;     /* by_weights's weights packed as int16, widened at compile (avx2's exact tile) */
    mps_uqdw3_fn dw3; /* optional */
    mps_uqmul_fn mul;
    mps_uqsum_fn sum;
};
/* The portable one, which every family can fall back on (ukernel_c.c). */
extern const struct mps_uqgemm mps_uqgemm_c;
/* neon's, where the CPU has the dot product instructions (ukernel_neon_q.c,
   arm64 builds only; isa.c asks the OS). */
extern const struct mps_uqgemm mps_uqgemm_neon;
bool mps_neon_has_dotprod(void);

struct mps_ukernels {
    const char *name;     /* "avx512", "avx2", "neon", "c" */
    const char *describe; /* "AVX-512F, 8 x 32 float tiles" */
    int mr, nr;           /* the tile: rows (broadcast from a) x columns (vectors of b) */
    int kc;               /* k per block: an a and a b panel of kc fit the L1 cache together */
    int mt;               /* positions of convt's tile (0 without one) */
    bool (*supported)(void); /* whether this CPU and OS run it */
    void (*clean)(void);     /* optional: called on a thread after the family's kernels ran there,
                                before code built for the baseline ISA runs (ukernel_avx512.c) */
    mps_ugemm_fn gemm;
    mps_ugemm_rows_fn gemm_rows; /* optional */
    mps_ugemm_dot_fn gemm_dot;   /* optional */
    mps_udw3_fn dw3;
    mps_udwk_fn dwk;
    mps_udwb_fn dwb; /* optional */
    mps_uconv_fn conv;
    mps_uconv_fn conv_pf; /* optional: conv that also asks for each row of B a few tiles ahead (prefetch), for
                             the first panel of W over an input no L2 holds (conv_direct.c) */
    bool conv_res;       /* conv adds the epilogue's residual (else, and for convt, conv_direct.c adds it after) */
    mps_uconvt_fn convt; /* optional: NULL where the family has none */
    mps_umaxpool_fn maxpool; /* optional, likewise */
    mps_upconv_fn pconv;     /* optional, likewise */
    mps_uwino_in_fn wino_in;
    mps_uwino_out_fn wino_out;
    mps_uwino_pool_fn wino_pool;
    mps_uact_fn sigmoid, tanh;
    const struct mps_uqgemm *q[2]; /* int8 tiles: the first this CPU runs (avx512's needs VNNI) */
};

/* The families this build holds (isa.c lists them; every entry but the optional ones is set). */
extern const struct mps_ukernels mps_ukernels_avx512, mps_ukernels_avx2, mps_ukernels_neon, mps_ukernels_c;

#endif
