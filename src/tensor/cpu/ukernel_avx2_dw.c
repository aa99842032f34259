/* ukernel_avx2_dw.c: the avx2 family's blocks of sixteen depthwise planes
   (ukernels.h's dwb), the channels in the vectors, as ukernel_avx512_dw.c's
   dwb with two 8-lane halves: the same buffer (sixteen floats a position),
   each half's sums eight positions a step, tap by tap (a weight loaded once
   for the eight: loaded for each position, as the sixteen registers could
   not hold nine weights beside the sums, the loads were twice the FMAs:
   576 x 14x14 at batch 8 0.87 of the time, 144 x 56x56 0.85-0.89, 960 x 7x7
   0.94), transposed out to the planes, and the 1x1 convolution before the
   layer made six positions a step, each position's sixteen planes in two
   accumulators (the GEMM tile's 6 x 16). Built with -mavx2 -mfma. */
#include "ukernel_avx2.h"
#include "ukernel_avx2_qreq.h"
#include "ukernel_dwb.h"

/* Floats of the buffer (128 KB, as avx512's): a band's zero-padded input rows, sixteen channels a position. */
enum { MPS_AVX2_DWB_BUF = 32768 };

/* n (<= 8) bytes of a plane of a depthwise QLinearConv as dwb's floats,
   (x ^ flip) - zx (ukernels.h's mps_dwb_q). */
static inline __m256 mps_avx2_dwb_bytes(const uint8_t *x, int n, const struct mps_dwb_q *q)
{
    __m128i b = _mm_xor_si128(_mm_cvtsi64_si128((long long)mps_dwb_get_bytes(x, n)), _mm_set1_epi8((char)q->flip));
    return _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)), _mm256_set1_ps(q->zx));
}

/* Eight positions of sixteen planes of a depthwise QLinearConv, each plane's
   eight bytes at x + c plane, as dwb's floats (x ^ flip) - zx, position i's
   planes 0-7 in lo[i] and 8-15 in hi[i]: transposed as bytes, in three
   rounds of 128-bit interleaves, and widened after (ukernel_avx512_dw.c's
   mps_avx512_dwb_bytes16 at eight positions; two 8 x 8 transposes of floats
   are 48 shuffles of 256 bits, the bytes' 24 of 128). */
static inline void mps_avx2_dwb_bytes8(const uint8_t *x, int64_t plane, const struct mps_dwb_q *q, __m256 *lo,
                                       __m256 *hi)
{
    const __m128i flip = _mm_set1_epi8((char)q->flip);
    __m128i a[8], b[8];
    /* a[i]: planes 2 i and 2 i + 1 interleaved, positions 0-7 */
    for (int i = 0; i < 8; i++) {
        uint64_t u, v;
        memcpy(&u, x + 2 * i * plane, 8), memcpy(&v, x + (2 * i + 1) * plane, 8);
        a[i] = _mm_xor_si128(_mm_unpacklo_epi8(_mm_cvtsi64_si128((long long)u), _mm_cvtsi64_si128((long long)v)), flip);
    }
    /* b[2 j + e]: planes 4 j .. 4 j + 3 at positions 4 e .. 4 e + 3 */
    for (int j = 0; j < 4; j++)
        b[2 * j] = _mm_unpacklo_epi16(a[2 * j], a[2 * j + 1]),
              b[2 * j + 1] = _mm_unpackhi_epi16(a[2 * j], a[2 * j + 1]);
    /* a[4 o + 2 e + f]: planes 8 o .. 8 o + 7 at positions 4 e + 2 f (low half) and 4 e + 2 f + 1 (high) */
    for (int o = 0; o < 2; o++)
        for (int e = 0; e < 2; e++) {
            a[4 * o + 2 * e] = _mm_unpacklo_epi32(b[4 * o + e], b[4 * o + 2 + e]);
            a[4 * o + 2 * e + 1] = _mm_unpackhi_epi32(b[4 * o + e], b[4 * o + 2 + e]);
        }
    const __m256 zx = _mm256_set1_ps(q->zx);
    for (int i = 0; i < 8; i++) { /* position i: half i % 2 of a[i / 2] (planes 0-7) and a[4 + i / 2] (8-15) */
        __m128i l = a[i / 2], h = a[4 + i / 2];
        if (i % 2)
            l = _mm_unpackhi_epi64(l, l), h = _mm_unpackhi_epi64(h, h);
        lo[i] = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(l)), zx);
        hi[i] = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(h)), zx);
    }
}

/* The outputs of one band of one half (eight planes) of a block: output rows
   [oh0, oh0 + rows) from buf (the half's floats of each position: buf's row
   0 is the input row oh0 sh - pt), eight positions (across rows) a step,
   transposed out to the planes y + c out_plane. three and rest are
   constants where called: the 3x3 window, and the activation past the clamp. */
__attribute__((always_inline)) static inline void
mps_avx2_dwb_outputs(const struct mps_dwk_geom *g, const float *buf, int64_t pw, int64_t oh0, int64_t rows,
                     const __m256 *kv, const int64_t *off, __m256 bv, const struct mps_avx2_actc *act, void *y,
                     const struct mps_qreq *req, bool three, bool rest)
{
    size_t el = req && req->quant ? 1 : 4;
    int taps = g->kh * g->kw;
    int64_t ow = 0, end = (oh0 + rows) * g->out_w, step = 16 * g->sw, down = 16 * g->sh * pw;
    int64_t out_plane = g->out_h * g->out_w;
    const float *row = buf, *b = buf; /* the output row's first window; the position's */
    __m256 r[8];
    const int64_t pr = 16 * pw;
    for (int64_t o = oh0 * g->out_w; o < end; o += 8) {
        int n = end - o < 8 ? (int)(end - o) : 8;
        const float *bp[8]; /* the positions' windows (past n: the last again, not stored) */
        for (int i = 0; i < 8; i++) {
            bp[i] = b;
            if (i + 1 < n) {
                b += step;
                if (++ow == g->out_w)
                    ow = 0, row += down, b = row;
            }
        }
        b += step; /* the next step's first position */
        if (++ow == g->out_w)
            ow = 0, row += down, b = row;
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            r[i] = bv;
        /* tap by tap over the eight positions: each weight loaded once a step, not once a position */
        for (int u = 0; u < (three ? 9 : taps); u++) { /* 9 a constant: unrolled, no u / 3 a tap */
            const __m256 k = kv[u];
            const int64_t d = three ? (u / 3) * pr + (u % 3) * 16 : off[u];
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++)
                r[i] = _mm256_fmadd_ps(k, _mm256_load_ps(bp[i] + d), r[i]);
        }
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            __m256 a = _mm256_min_ps(act->hi, _mm256_max_ps(act->lo, r[i])); /* a NaN stays: max and min return it */
            r[i] = rest ? mps_avx2_actc(a, act) : a;
        }
        mps_avx2_transpose8(r);
        __m256i m = mps_avx2_mask(n);
        for (int c = 0; c < 8; c++) {
            unsigned char *at = (unsigned char *)y + (size_t)(c * out_plane + o) * el;
            if (req)
                mps_avx2_qreq(_mm256_cvttps_epi32(r[c]), NULL, n, req + c, at); /* exact integers */
            else
                mps_avx2_put((float *)at, m, n == 8, r[c]);
        }
    }
}

/* A block's input rows [r0, r1) made by the 1x1 convolution ex (ukernels.h)
   into the buffer: six positions (across rows) a step, the last one moved
   back inside the plane, each position's sixteen planes two accumulators
   that take a broadcast of the position's input per input channel; wt: the
   block's weights, its sixteen planes' a channel. The stores are
   branch-free (a position the buffer does not take goes to trash), so that
   the accumulators stay in registers; rest (a constant where called): the
   activation past the clamp. */
__attribute__((always_inline)) static inline void
mps_avx2_dwb_expand(const struct mps_dwk_geom *g, const struct mps_dwb_expand *ex, const float *wt, __m256 bias0,
                    __m256 bias1, const struct mps_avx2_actc *act, int64_t r0, int64_t r1, int64_t first, int64_t pw,
                    int64_t cols, float *buf, bool rest)
{
    _Alignas(32) float trash[16];
    int64_t plane = g->h * g->w, end = r1 * g->w;
    for (int64_t q0 = r0 * g->w; q0 < end; q0 += 6) {
        /* positions q .. q + 6; those before q0 (a step moved back) are made again and not stored */
        int64_t q = q0 + 6 <= plane ? q0 : plane - 6, ih = q / g->w, iw = q % g->w;
        __m256 lo[6], hi[6];
        for (int i = 0; i < 6; i++)
            lo[i] = bias0, hi[i] = bias1;
        const float *xc = ex->x + q;
        for (int64_t c = 0; c < ex->k; c++, xc += plane) {
            __m256 w0 = _mm256_load_ps(wt + 16 * c), w1 = _mm256_load_ps(wt + 16 * c + 8);
            for (int i = 0; i < 6; i++) {
                __m256 xb = _mm256_broadcast_ss(xc + i);
                lo[i] = _mm256_fmadd_ps(xb, w0, lo[i]);
                hi[i] = _mm256_fmadd_ps(xb, w1, hi[i]);
            }
        }
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            bool keep = q + i >= q0 && q + i < end && iw < cols;
            float *d = keep ? buf + 16 * ((ih - first) * pw + g->pl + iw) : trash;
            __m256 v0 = _mm256_min_ps(act->hi, _mm256_max_ps(act->lo, lo[i])); /* a NaN stays */
            __m256 v1 = _mm256_min_ps(act->hi, _mm256_max_ps(act->lo, hi[i]));
            _mm256_store_ps(d, rest ? mps_avx2_actc(v0, act) : v0);
            _mm256_store_ps(d + 8, rest ? mps_avx2_actc(v1, act) : v1);
            bool wrap = ++iw == g->w;
            iw = wrap ? 0 : iw, ih += wrap;
        }
    }
}

/* Input rows [r0, r1) of a block's sixteen planes (x, in_plane floats
   apart) transposed into the buffer, eight positions (across rows) a step;
   the columns no window reads (iw >= cols) left out. */
static void mps_avx2_dwb_transpose_in(const struct mps_dwk_geom *g, const void *xv, int64_t in_plane, int64_t r0,
                                      int64_t r1, int64_t first, int64_t pw, int64_t cols, float *buf,
                                      const struct mps_dwb_q *q)
{
    const float *x = xv;
    const uint8_t *xb = xv;
    int64_t ih = r0, iw = 0;
    __m256 lo[8], hi[8];
    for (int64_t p = r0 * g->w; p < r1 * g->w; p += 8) {
        int n = r1 * g->w - p < 8 ? (int)(r1 * g->w - p) : 8;
        __m256i m = mps_avx2_mask(n);
        if (q && n == 8)
            mps_avx2_dwb_bytes8(xb + p, in_plane, q, lo, hi);
        else {
            for (int c = 0; c < 8; c++) {
                lo[c] =
                    q ? mps_avx2_dwb_bytes(xb + c * in_plane + p, n, q) : mps_avx2_get(x + c * in_plane + p, m, n == 8);
                hi[c] = q ? mps_avx2_dwb_bytes(xb + (c + 8) * in_plane + p, n, q)
                          : mps_avx2_get(x + (c + 8) * in_plane + p, m, n == 8);
            }
            mps_avx2_transpose8(lo);
            mps_avx2_transpose8(hi);
        }
        for (int i = 0; i < n; i++) {
            if (iw < cols) {
                float *d = buf + 16 * ((ih - first) * pw + g->pl + iw);
                _mm256_store_ps(d, lo[i]);
                _mm256_store_ps(d + 8, hi[i]);
            }
            if (++iw == g->w)
                iw = 0, ih++;
        }
    }
}

/* Blocks of sixteen depthwise planes (ukernels.h's dwb): ukernel_avx512_dw.c's
   design (a band's input rows in a zero-padded buffer, sixteen channels a
   position, the zeros written once a call where a band is the whole plane;
   with ex the rows made by the 1x1 convolution instead of transposed in),
   the sums a half of eight planes at a time, so that a 3x3 window's nine
   weights stay in registers beside the accumulators. */
bool mps_avx2_dwb(const struct mps_dwk_geom *g, const void *xv, const float *k, const float *bias, void *yv,
                  int64_t blocks, const struct mps_tile_epi *e, const struct mps_dwb_expand *ex,
                  const struct mps_dwb_q *q)
{
    /* bytes (q) or floats, a block's planes apart */
    const unsigned char *x = xv;
    unsigned char *y = yv;
    size_t in_el = q ? 1 : 4, out_el = q && q->req->quant ? 1 : 4;
    struct mps_dwb_geom d;
    if (!mps_dwb_geom_of(g, MPS_AVX2_DWB_BUF, &d) || (ex && (ex->k > MPS_DWB_EXPAND_K || g->h * g->w < 6)))
        return false;
    const int taps = d.taps;
    const int64_t pw = d.pw, cols = d.cols, *off = d.off, in_plane = g->h * g->w, out_plane = g->out_h * g->out_w;
    _Alignas(32) float buf[MPS_AVX2_DWB_BUF];
    _Alignas(32) float wt[16 * MPS_DWB_EXPAND_K]; /* the 1x1's weights of a block, sixteen floats a channel */
    __m256 kv[2][MPS_DWB_TAPS];
    const struct mps_avx2_actc act = mps_avx2_actc_of(e);
    bool three = taps == 9 && g->dw == 1 && g->dh == 1, rest = act.leaky || act.hswish;
    const struct mps_avx2_actc ex_act = mps_avx2_actc_of(ex ? &ex->act : e);
    const bool ex_rest = ex_act.leaky || ex_act.hswish;
    for (int64_t blk = 0; blk < blocks;
         blk++, x += 16 * in_plane * in_el, y += 16 * out_plane * out_el, k += 16 * taps) {
        const struct mps_qreq *req = q ? q->req + 16 * blk : NULL;
        for (int u = 0; u < taps; u++) { /* kv[h][u]: tap u of the half's eight planes */
            _Alignas(32) float t[16];
            for (int c = 0; c < 16; c++)
                t[c] = k[c * taps + u];
            kv[0][u] = _mm256_load_ps(t), kv[1][u] = _mm256_load_ps(t + 8);
        }
        /* the block's rows of the 1x1's weights, a channel's sixteen together */
        for (int64_t c = 0; ex && c < ex->k; c++)
            for (int m = 0; m < 16; m++)
                wt[16 * c + m] = ex->w[(16 * blk + m) * ex->k + c];
        __m256 ex_b[2], bv[2];
        for (int h = 0; h < 2; h++) {
            ex_b[h] = ex && ex->bias ? _mm256_loadu_ps(ex->bias + 16 * blk + 8 * h) : _mm256_setzero_ps();
            bv[h] = bias ? _mm256_loadu_ps(bias + 16 * blk + 8 * h) : _mm256_setzero_ps();
        }
        for (int64_t oh0 = g->oh0; oh0 < d.oh_end; oh0 += d.band) {
            const struct mps_dwb_band bd = mps_dwb_band_of(g, &d, oh0);
            const int64_t rows = bd.rows, first = bd.first, r0 = bd.r0, r1 = bd.r1;
            if (!d.whole || blk == 0)
                mps_dwb_zeros(g, &d, &bd, buf);
            if (ex && ex_rest)
                mps_avx2_dwb_expand(g, ex, wt, ex_b[0], ex_b[1], &ex_act, r0, r1, first, pw, cols, buf, true);
            else if (ex)
                mps_avx2_dwb_expand(g, ex, wt, ex_b[0], ex_b[1], &ex_act, r0, r1, first, pw, cols, buf, false);
            else
                mps_avx2_dwb_transpose_in(g, x, in_plane, r0, r1, first, pw, cols, buf, q);
            for (int h = 0; h < 2; h++) {
                unsigned char *yh = y + 8 * h * out_plane * out_el;
                const struct mps_qreq *rh = req ? req + 8 * h : NULL;
                if (three && !rest)
                    mps_avx2_dwb_outputs(g, buf + 8 * h, pw, oh0, rows, kv[h], off, bv[h], &act, yh, rh, true, false);
                else if (three)
                    mps_avx2_dwb_outputs(g, buf + 8 * h, pw, oh0, rows, kv[h], off, bv[h], &act, yh, rh, true, true);
                else
                    mps_avx2_dwb_outputs(g, buf + 8 * h, pw, oh0, rows, kv[h], off, bv[h], &act, yh, rh, false, rest);
            }
        }
    }
    return true;
}
