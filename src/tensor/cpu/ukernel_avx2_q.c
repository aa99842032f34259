/* ukernel_avx2_q.c: the avx2 family's int8 tile and store (ukernels.h),
   which the avx512 family falls back on where the CPU lacks VNNI. Built
   with -mavx2 and without contraction (ukernel_q.h). */
#include <immintrin.h>

#include "ukernel_avx2_qreq.h"
#include "ukernel_q.h"
#include "ukernel_x86.h"

/* The int8 tile, 4 x 8: each group of four k widened to int16 (B's eight
   columns in two vectors, a row's four bytes broadcast) and multiplied in
   pairs (vpmaddwd), which cannot saturate as vpmaddubsw's int16 sums of two
   byte products can; each column's two pair sums are added at the end. */
enum { MPS_AVX2_QMR = 4, MPS_AVX2_QNR = 8 };
/* Row r's four bytes of group g at a + r rs + g gs; signed_a: a's bytes
   signed and b's unsigned (by_weights), else the other way. Called with
   rows MPS_AVX2_QMR (a constant: the row loop unrolled without tests) or
   fewer. */
static inline __attribute__((always_inline)) void mps_avx2_qtile(int64_t k4, const void *a, int64_t rs, int64_t gs,
                                                                 const void *b, int32_t *c, int rows, bool signed_a)
{
    const unsigned char *pa = a, *pb = b;
    __m256i acc[MPS_AVX2_QMR][2];
    for (int r = 0; r < MPS_AVX2_QMR; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (int64_t g = 0; g < k4; g++, pb += 32) {
        __m128i l0 = _mm_loadu_si128((const __m128i *)pb), l1 = _mm_loadu_si128((const __m128i *)(pb + 16));
        __m256i b0 = signed_a ? _mm256_cvtepu8_epi16(l0) : _mm256_cvtepi8_epi16(l0),
                b1 = signed_a ? _mm256_cvtepu8_epi16(l1) : _mm256_cvtepi8_epi16(l1);
        for (int r = 0; r < MPS_AVX2_QMR; r++) {
            if (r >= rows)
                break;
            int32_t four;
            __builtin_memcpy(&four, pa + r * rs + g * gs, 4);
            __m128i f = _mm_cvtsi32_si128(four);
            __m256i x = _mm256_broadcastq_epi64(signed_a ? _mm_cvtepi8_epi16(f) : _mm_cvtepu8_epi16(f));
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(b0, x));
            acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(b1, x));
        }
    }
    for (int r = 0; r < rows; r++) /* lanes (2 j, 2 j + 1) hold column j's two halves */
        _mm256_storeu_si256((__m256i *)(c + r * MPS_AVX2_QNR),
                            _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xd8));
}

static void mps_avx2_qgemm(int64_t k4, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *c, int rows)
{
    if (rows == MPS_AVX2_QMR)
        mps_avx2_qtile(k4, a, lda, 4, b, c, MPS_AVX2_QMR, false);
    else
        mps_avx2_qtile(k4, a, lda, 4, b, c, rows, false);
}

/* The by-weights tile (a conv's: rows are output channels, the weights
   packed four k of each of the MPS_AVX2_QMR rows a group, 24 bytes): a
   group's weights widened in two loads, each row's four then broadcast from
   the register (vpermq), not loaded and widened a row at a time (18
   instructions a group down to 8: resnet18 int8 on the avx2 family, ...). */
static void mps_avx2_qgemm_w(int64_t k4, const int8_t *a, const uint8_t *b, int32_t *c)
{
    __m256i acc[MPS_AVX2_QMR][2];
    for (int r = 0; r < MPS_AVX2_QMR; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (int64_t g = 0; g < k4; g++, b += 32, a += 4 * MPS_AVX2_QMR) {
        __m256i b0 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)b)),
                b1 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(b + 16)));
        __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)a)); /* the four rows, a quad each */
        __m256i x[MPS_AVX2_QMR] = {_mm256_permute4x64_epi64(w, 0x00), _mm256_permute4x64_epi64(w, 0x55),
                                   _mm256_permute4x64_epi64(w, 0xaa), _mm256_permute4x64_epi64(w, 0xff)};
        for (int r = 0; r < MPS_AVX2_QMR; r++) {
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(b0, x[r]));
            acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(b1, x[r]));
        }
    }
    for (int r = 0; r < MPS_AVX2_QMR; r++) /* lanes (2 j, 2 j + 1) hold column j's two halves */
        _mm256_storeu_si256((__m256i *)(c + r * MPS_AVX2_QNR),
                            _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xd8));
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

const struct mps_uqgemm mps_uqgemm_avx2 = {
    "avx2",          MPS_AVX2_QMR,      MPS_AVX2_QNR,       mps_x86_has_avx2,     mps_avx2_qgemm, mps_avx2_qgemm_w,
    mps_avx2_qstore, mps_avx2_qrequant, mps_avx2_qquantize, mps_avx2_qdequantize, NULL,           mps_avx2_qstore_f,
    mps_avx2_lut};
