/* ukernel_avx2_q.c: the avx2 family's int8 tile and store (ukernels.h),
   which the avx512 family falls back on where the CPU lacks VNNI. Built
   with -mavx2 and without contraction (ukernel_q.h). */
#include <immintrin.h>

#include "ukernel_avx2_qreq.h"
#include "ukernel_q.h"
#include "ukernel_x86.h"

/* The int8 tile, 6 x 8: each group of four k widened to int16 (B's eight
   columns in two vectors, a row's four values broadcast) and multiplied in
   pairs (vpmaddwd), which cannot saturate as vpmaddubsw's int16 sums of two
   byte products can; each column's two pair sums are added at the end. */
enum { MPS_AVX2_QMR = 6, MPS_AVX2_QNR = 8 };

/* One row's step: x, its four values broadcast (from int16 w, or widened
   from four bytes: wide false), times b0 and b1 added to a0 and a1. In asm
   with named accumulators: GCC -O3 hoisted the six rows' broadcasts ahead
   of the products and spilled half the accumulators to the stack every
   group (the tile at two thirds of its speed). */
static inline __attribute__((always_inline)) void mps_avx2_qrow(__m256i *a0, __m256i *a1, __m256i b0, __m256i b1,
                                                                const void *w, bool wide)
{
    __m256i x, t;
    if (wide)
        __asm__("vpbroadcastq %[w], %[x]\n\t"
                "vpmaddwd %[x], %[b0], %[t]\n\t"
                "vpmaddwd %[x], %[b1], %[x]\n\t"
                "vpaddd %[t], %[a0], %[a0]\n\t"
                "vpaddd %[x], %[a1], %[a1]"
                : [a0] "+x"(*a0), [a1] "+x"(*a1), [x] "=&x"(x), [t] "=&x"(t)
                : [b0] "x"(b0), [b1] "x"(b1), [w] "m"(*(const int64_t(*)[1])w));
    else
        __asm__("vmovd %[w], %x[x]\n\t"
                "vpmovzxbw %x[x], %x[x]\n\t"
                "vpbroadcastq %x[x], %[x]\n\t"
                "vpmaddwd %[x], %[b0], %[t]\n\t"
                "vpmaddwd %[x], %[b1], %[x]\n\t"
                "vpaddd %[t], %[a0], %[a0]\n\t"
                "vpaddd %[x], %[a1], %[a1]"
                : [a0] "+x"(*a0), [a1] "+x"(*a1), [x] "=&x"(x), [t] "=&x"(t)
                : [b0] "x"(b0), [b1] "x"(b1), [w] "m"(*(const int32_t(*)[1])w));
}

/* The tile's rows [0, rows) over k4 groups: row r's four values of group g
   at a + (r rs + g gs) elements (int16 where wide, else unsigned bytes),
   b's eight columns 32 bytes a group (unsigned where wide, else signed);
   sums[r] holds row r's eight columns. rows is MPS_AVX2_QMR (a constant:
   the rows unrolled without tests) or fewer. */
static inline __attribute__((always_inline)) void mps_avx2_qsums(int64_t k4, const void *a, int64_t rs, int64_t gs,
                                                                 const uint8_t *b, int rows, bool wide,
                                                                 __m256i sums[MPS_AVX2_QMR])
{
    const unsigned char *pa = a;
    int64_t el = wide ? 2 : 1;
    __m256i z = _mm256_setzero_si256(), c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z,
            c41 = z, c50 = z, c51 = z;
    for (int64_t g = 0; g < k4; g++, b += 32, pa += gs * el) {
        __m128i l0 = _mm_loadu_si128((const __m128i *)b), l1 = _mm_loadu_si128((const __m128i *)(b + 16));
        __m256i b0 = wide ? _mm256_cvtepu8_epi16(l0) : _mm256_cvtepi8_epi16(l0),
                b1 = wide ? _mm256_cvtepu8_epi16(l1) : _mm256_cvtepi8_epi16(l1);
        mps_avx2_qrow(&c00, &c01, b0, b1, pa, wide);
        if (rows > 1)
            mps_avx2_qrow(&c10, &c11, b0, b1, pa + 1 * rs * el, wide);
        if (rows > 2)
            mps_avx2_qrow(&c20, &c21, b0, b1, pa + 2 * rs * el, wide);
        if (rows > 3)
            mps_avx2_qrow(&c30, &c31, b0, b1, pa + 3 * rs * el, wide);
        if (rows > 4)
            mps_avx2_qrow(&c40, &c41, b0, b1, pa + 4 * rs * el, wide);
        if (rows > 5)
            mps_avx2_qrow(&c50, &c51, b0, b1, pa + 5 * rs * el, wide);
    }
    /* lanes (2 j, 2 j + 1) hold column j's two halves */
    sums[0] = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c00, c01), 0xd8);
    sums[1] = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c10, c11), 0xd8);
    sums[2] = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c20, c21), 0xd8);
    sums[3] = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c30, c31), 0xd8);
    sums[4] = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c40, c41), 0xd8);
    sums[5] = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c50, c51), 0xd8);
}

static void mps_avx2_qgemm(int64_t k4, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *c, int rows)
{
    __m256i sums[MPS_AVX2_QMR];
    if (rows == MPS_AVX2_QMR)
        mps_avx2_qsums(k4, a, lda, 4, (const uint8_t *)b, MPS_AVX2_QMR, false, sums);
    else
        mps_avx2_qsums(k4, a, lda, 4, (const uint8_t *)b, rows, false, sums);
    for (int r = 0; r < rows; r++)
        _mm256_storeu_si256((__m256i *)(c + r * MPS_AVX2_QNR), sums[r]);
}

/* The by-weights tile (a conv's: rows are output channels), its weights
   widened to int16 at compile (wide_w), four k of each of the MPS_AVX2_QMR
   rows a group (48 bytes): a row's four are one 64-bit broadcast from
   memory. Widened in the loop, a group's weights took a conversion and a
   permute per row, more shuffles than the tile has products (4 x 8 tiles
   at 25 products a ns against this one's 44, in L1, on a Zen 5 seen as
   AVX2-only). */
static void mps_avx2_qgemm_w(int64_t k4, const void *a, const uint8_t *b, int32_t *c)
{
    __m256i sums[MPS_AVX2_QMR];
    mps_avx2_qsums(k4, a, 4, 4 * MPS_AVX2_QMR, b, MPS_AVX2_QMR, true, sums);
    for (int r = 0; r < MPS_AVX2_QMR; r++)
        _mm256_storeu_si256((__m256i *)(c + r * MPS_AVX2_QNR), sums[r]);
}

/* The same, its rows [0, rows) requantized from the registers (mps_uqgemm_ws_fn). */
static void mps_avx2_qgemm_ws(int64_t k4, const void *a, const uint8_t *b, const struct mps_qreq *rq, int rows,
                              const int32_t *rs, int cols, void *y, int64_t ldy)
{
    __m256i sums[MPS_AVX2_QMR];
    mps_avx2_qsums(k4, a, 4, 4 * MPS_AVX2_QMR, b, MPS_AVX2_QMR, true, sums);
    size_t el = rq->quant ? 1 : 4;
    for (int r = 0; r < rows; r++)
        mps_avx2_qreq(sums[r], rs, cols, &rq[r], (unsigned char *)y + (size_t)(r * ldy) * el);
}

MPS_UQ_REQUANT(mps_avx2)

/* ukernel_avx2_qreq.h's store along a row of n sums. */
void mps_avx2_qstore(const int32_t *t, const int32_t *rs, int n, const struct mps_qreq *r, void *out)
{
    const struct mps_qreq q = *r;
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    size_t el = q.quant ? 1 : 4;
    for (int j = 0; j < n; j += 8)
        mps_avx2_qreq(_mm256_maskload_epi32(t + j, _mm256_cmpgt_epi32(_mm256_set1_epi32(n - j), lanes)),
                      rs ? rs + j : NULL, n - j, &q, (unsigned char *)out + (size_t)j * el);
}

/* ukernels.h's mps_uqstore_f_fn, as avx512's. */
void mps_avx2_qstore_f(const float *s, int64_t n, const struct mps_qreq *r, void *out)
{
    const struct mps_qreq q = *r;
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    size_t el = q.quant ? 1 : 4;
    for (int64_t j = 0; j < n; j += 8) {
        int left = n - j < 8 ? (int)(n - j) : 8;
        __m256 v = _mm256_maskload_ps(s + j, _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lanes));
        mps_avx2_qreq(_mm256_cvttps_epi32(v), NULL, left, &q, (unsigned char *)out + (size_t)j * el);
    }
}

/* ukernels.h's mps_ulut_fn: 32 bytes a step, the table as sixteen rows of
   sixteen (vpshufb looks a byte's low four bits up in each), each byte
   taking the row its high four bits pick; the tail byte by byte. The
   avx-vnni tile shares it. */
void mps_avx2_lut(const uint8_t *table, const uint8_t *x, int64_t n, uint8_t *y)
{
    __m256i rows[16];
    for (int h = 0; h < 16; h++)
        rows[h] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(table + 16 * h)));
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(x + i)), lo = _mm256_and_si256(v, nibble),
                hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), r = _mm256_setzero_si256();
        for (int h = 0; h < 16; h++)
            r = _mm256_or_si256(r, _mm256_and_si256(_mm256_cmpeq_epi8(hi, _mm256_set1_epi8((char)h)),
                                                    _mm256_shuffle_epi8(rows[h], lo)));
        _mm256_storeu_si256((__m256i *)(y + i), r);
    }
    for (; i < n; i++)
        y[i] = table[x[i]];
}

const struct mps_uqgemm mps_uqgemm_avx2 = {"avx2",
                                           MPS_AVX2_QMR,
                                           MPS_AVX2_QNR,
                                           mps_x86_has_avx2,
                                           mps_avx2_qgemm,
                                           mps_avx2_qgemm_w,
                                           mps_avx2_qstore,
                                           mps_avx2_qrequant,
                                           mps_avx2_qquantize,
                                           mps_avx2_qdequantize,
                                           mps_avx2_qgemm_ws,
                                           mps_avx2_qstore_f,
                                           mps_avx2_lut,
                                           true,
                                           NULL,
                                           mps_avx2_qmul,
                                           mps_avx2_qsum};
