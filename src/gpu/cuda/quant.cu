// quant.cu: the int8 products QLinearConv and QLinearMatMul on the tensor
// cores (mma.sync m16n8k32, unsigned bytes by signed ones into int32), exact,
// with the requantizing store every backend shares (kernels.h's
// mps_qlinear_cols); DequantizeLinear, QuantizeLinear and MaxPool of bytes.
//
// A product is C[r][c] = sum over k of x[r][k] w[k][c]: rows r are a conv's
// output positions of one image (blockIdx.z) or QLinearMatMul's rows,
// columns c the output channels or features, x unsigned bytes (an int8 x
// plus 128), w signed (packed at compile as words of four k, [k / 4][cols]).
// A block of eight warps computes 64 x 64 of C through shared memory, 64 k
// at a time; a warp 32 x 16 (two by two mma tiles of 16 x 8). A conv's x is
// read straight from the image (no im2col): k's channel offset and tap
// offsets come from a table made at compile, a tap outside the image reads
// x's zero point (it adds nothing). Every value the store computes is
// rounded as the cpu's store rounds it (no contraction).
#include "common.cuh"

#define MPS_CU_QBM 64  /* rows a block */
#define MPS_CU_QBN 64  /* columns a block */
#define MPS_CU_QBK 16  /* words of four k a step: two mma k-steps */
#define MPS_CU_QPAD 72 /* a shared row of words: 8t + g distinct banks for a fragment's loads; 16-byte rows */

/* sum of unsigned bytes of a times signed bytes of b, plus c */
__device__ static inline int32_t mps_cu_dp4a_us(uint32_t a, int32_t b, int32_t c)
{
    int32_t d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

/* d += a (16 x 32 unsigned bytes, row-major) times b (32 x 8 signed bytes, column-major). Thread
   (g, t) = (lane / 4, lane % 4) holds a: rows g and g + 8 of words t and t + 4 (a[0] g t, a[1]
   g + 8 t, a[2] g t + 4, a[3] g + 8 t + 4); b: words t and t + 4 of column g; d: rows g (d[0],
   d[1]) and g + 8 (d[2], d[3]) of columns 2t and 2t + 1. */
__device__ static inline void mps_cu_mma_us(int32_t (&d)[4], const uint32_t (&a)[4], int32_t b0, int32_t b1)
{
    asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/* The store of one value (ukernel_q.h's, in the same roundings). */
__device__ static inline void mps_cu_qstore_one(const struct mps_cu_qstore &s, int64_t c, int32_t acc, int32_t rs,
                                                void *y, int64_t at)
{
    uint32_t t = (uint32_t)acc + (uint32_t)s.corr[c] - (s.rowsums ? (uint32_t)s.zw[c] * (uint32_t)rs : 0u);
    float v = __fadd_rn(__fmul_rn((float)(int32_t)t, s.mult[c]), s.add[c]);
    v = v > s.lo ? v : s.lo;
    v = v < s.hi ? v : s.hi;
    if (s.quant)
        ((uint8_t *)y)[at] = (uint8_t)((int32_t)rintf(v) + s.yz);
    else
        ((float *)y)[at] = v < 0.0f ? __fmul_rn(v, s.slope) : v;
}

/* Word wi of the step at k0 = 4 (kb + wi) for four rows from rr: bytes k0..k0 + 3
   of each, a conv's taps from the image (x's zero point outside it, flipped
   already: it adds nothing), QLinearMatMul's x[r][k]; 0 past the rows or past
   k (where the weights are 0 and the row sums must not count it). A k's table
   entry serves the four rows; every load is from a valid address and selected
   after, so that a step's loads have no branches between them. */
template <bool CONV>
__device__ static inline void mps_cu_qwords(const uint8_t *__restrict__ x, const struct mps_cu_qgeom &q,
                                            const int32_t *__restrict__ ktab, int64_t rr, int64_t k0, const int *iy0,
                                            const int *ix0, uint32_t flip, uint32_t *v)
{
#pragma unroll
    for (int b = 0; b < 4; b++) {
        int64_t k = k0 + b;
        bool kin = k < q.k_real;
        int32_t off = 0, dy = 0, dx = 0;
        if (CONV) {
            const int32_t *t = ktab + 3 * (kin ? k : 0);
            off = __ldg(t), dy = __ldg(t + 1), dx = __ldg(t + 2);
        }
#pragma unroll
        for (int j = 0; j < 4; j++) {
            bool in = kin && rr + j < q.rows;
            uint32_t byte;
            if (CONV) {
                int iy = iy0[j] + dy, ix = ix0[j] + dx;
                bool inside = in && iy >= 0 && iy < q.ih && ix >= 0 && ix < q.iw;
                byte = (uint32_t)__ldg(x + (inside ? off + (int64_t)iy * q.iw + ix : 0)) ^ flip;
                byte = inside ? byte : in ? q.zx : 0u;
            } else {
                byte = in ? (uint32_t)__ldg(x + (in ? (rr + j) * q.k_real + k : 0)) ^ flip : 0u;
            }
            v[j] = b ? v[j] | byte << (8 * b) : byte;
        }
    }
}

/* splits > 1: blockIdx.z's split sums its share of k (words of whole steps)
   and adds its int32 sums into acc32 (and, its blocks of the first columns,
   the row sums into rs32): integer sums, the same in any order; the store
   is mps_cu_qstore_k's. */
template <bool CONV>
__global__ static void __launch_bounds__(256)
    mps_cu_qgemm_k(const uint8_t *x, const int32_t *w, const int32_t *ktab, void *y, struct mps_cu_qgeom q,
                   struct mps_cu_qstore s, int32_t *acc32, int32_t *rs32, int64_t split_words)
{
    mps_cu_wait();
    __shared__ __align__(16) uint32_t as[MPS_CU_QBK][MPS_CU_QPAD];
    __shared__ int32_t bs[MPS_CU_QBK][MPS_CU_QPAD];
    int tid = threadIdx.x, lr = tid % MPS_CU_QBM, lw = tid / MPS_CU_QBM, rg = tid % 16 * 4, aw = tid / 16;
    int lane = tid % 32, g = lane / 4, t = lane % 4, wm = tid / 32 % 2 * 32, wn = tid / 64 * 16;
    int64_t r0 = (int64_t)blockIdx.x * MPS_CU_QBM, c0 = (int64_t)blockIdx.y * MPS_CU_QBN;
    int64_t img = blockIdx.z % q.images, kb0 = blockIdx.z / q.images * split_words;
    if (CONV)
        x += img * q.image;
    int64_t words = (q.k_real + 3) / 4;
    words = kb0 + split_words < words ? kb0 + split_words : words;
    int iy0[4] = {}, ix0[4] = {}; /* a: this thread's four rows r0 + rg .. + 3, of word aw */
    for (int j = 0; CONV && j < 4; j++) {
        int64_t r = r0 + rg + j < q.rows ? r0 + rg + j : 0;
        iy0[j] = (int)(r / q.ow) * q.sh - q.ph;
        ix0[j] = (int)(r % q.ow) * q.sw - q.pw;
    }
    uint32_t flip = q.flip ? 0x80u : 0u;
    int32_t acc[2][2][4] = {}, rsum[2][2] = {}; /* [m tile][n tile][fragment], [m tile][row g, g + 8] */
    for (int64_t kb = kb0; kb < words; kb += MPS_CU_QBK) {
        uint32_t v[4];
        mps_cu_qwords<CONV>(x, q, ktab, r0 + rg, (kb + aw) * 4, iy0, ix0, flip, v);
        *(uint4 *)&as[aw][rg] = make_uint4(v[0], v[1], v[2], v[3]);
#pragma unroll
        for (int h = 0; h < MPS_CU_QBK / 4; h++) { /* b: 16 words x 64 columns */
            int wi = lw + 4 * h;
            int64_t c = c0 + lr;
            bs[wi][lr] = c < q.cols && kb + wi < words ? __ldg(w + (kb + wi) * q.cols + c) : 0;
        }
        __syncthreads();
#pragma unroll
        for (int ks = 0; ks < MPS_CU_QBK; ks += 8) {
            uint32_t a[2][4];
            int32_t b[2][2];
#pragma unroll
            for (int mi = 0; mi < 2; mi++) {
                int row = wm + 16 * mi + g;
                a[mi][0] = as[ks + t][row], a[mi][1] = as[ks + t][row + 8];
                a[mi][2] = as[ks + t + 4][row], a[mi][3] = as[ks + t + 4][row + 8];
            }
#pragma unroll
            for (int ni = 0; ni < 2; ni++)
                b[ni][0] = bs[ks + t][wn + 8 * ni + g], b[ni][1] = bs[ks + t + 4][wn + 8 * ni + g];
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int ni = 0; ni < 2; ni++)
                    mps_cu_mma_us(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
            if (s.rowsums) /* this thread's words of rows g and g + 8; the quad's four add up below */
#pragma unroll
                for (int mi = 0; mi < 2; mi++) {
                    rsum[mi][0] =
                        mps_cu_dp4a_us(a[mi][2], 0x01010101, mps_cu_dp4a_us(a[mi][0], 0x01010101, rsum[mi][0]));
                    rsum[mi][1] =
                        mps_cu_dp4a_us(a[mi][3], 0x01010101, mps_cu_dp4a_us(a[mi][1], 0x01010101, rsum[mi][1]));
                }
        }
        __syncthreads();
    }
    if (s.rowsums)
        for (int mi = 0; mi < 2; mi++)
            for (int h = 0; h < 2; h++) {
                rsum[mi][h] += __shfl_xor_sync(0xffffffffu, rsum[mi][h], 1);
                rsum[mi][h] += __shfl_xor_sync(0xffffffffu, rsum[mi][h], 2);
            }
    for (int mi = 0; mi < 2; mi++)
        for (int h = 0; h < 2; h++) {
            int64_t rr = r0 + wm + 16 * mi + 8 * h + g;
            if (rr >= q.rows)
                continue;
            if (acc32 && s.rowsums && blockIdx.y == 0 && wn == 0 && t == 0)
                atomicAdd(rs32 + img * q.rows + rr, rsum[mi][h]);
            for (int ni = 0; ni < 2; ni++)
                for (int e = 0; e < 2; e++) {
                    int64_t c = c0 + wn + 8 * ni + 2 * t + e,
                            at = CONV ? (img * q.cols + c) * q.rows + rr : rr * q.cols + c;
                    if (c < q.cols && acc32)
                        atomicAdd(acc32 + at, acc[mi][ni][2 * h + e]);
                    else if (c < q.cols)
                        mps_cu_qstore_one(s, c, acc[mi][ni][2 * h + e], rsum[mi][h], y, at);
                }
        }
}

/* The store of split sums: element i of y (a conv's [images][cols][rows], else [rows][cols]). */
template <bool CONV>
__global__ static void mps_cu_qstore_k(const int32_t *acc32, const int32_t *rs32, void *y, struct mps_cu_qgeom q,
                                       struct mps_cu_qstore s, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(i, n)
    {
        int64_t c = CONV ? i / q.rows % q.cols : i % q.cols;
        int64_t row = CONV ? i / (q.rows * q.cols) * q.rows + i % q.rows : i / q.cols;
        mps_cu_qstore_one(s, c, acc32[i], s.rowsums ? rs32[row] : 0, y, i);
    }
}

/* How many parts k is summed in, and the words of each (whole steps): one
   where the output's tiles alone fill the GPU, else enough that about 256
   blocks run, each at least one step long. */
static int64_t mps_cu_qsplit_words(const struct mps_cu_qgeom *q, int64_t *splits)
{
    int64_t tiles = (q->rows + MPS_CU_QBM - 1) / MPS_CU_QBM * ((q->cols + MPS_CU_QBN - 1) / MPS_CU_QBN) * q->images;
    int64_t words = (q->k_real + 3) / 4, n = 256 / (tiles ? tiles : 1), most = words / MPS_CU_QBK;
    n = n < most ? n : most;
    n = n < 65535 / q->images ? n : 65535 / q->images;
    n = n < 1 ? 1 : n;
    int64_t per = ((words + n - 1) / n + MPS_CU_QBK - 1) / MPS_CU_QBK * MPS_CU_QBK;
    *splits = (words + per - 1) / per;
    *splits = *splits < 1 ? 1 : *splits;
    return per < MPS_CU_QBK ? MPS_CU_QBK : per;
}

extern "C" size_t mps_cu_qgemm_scratch(const struct mps_cu_qgeom *q)
{
    int64_t splits;
    mps_cu_qsplit_words(q, &splits);
    return splits > 1 ? (size_t)(q->images * q->rows * (q->cols + 1)) * sizeof(int32_t) : 0;
}

extern "C" int mps_cu_qgemm(const uint8_t *x, const int32_t *w, const int32_t *ktab, void *y,
                            const struct mps_cu_qgeom *q, const struct mps_cu_qstore *s, void *scratch, void *stream)
{
    if (q->rows <= 0 || q->cols <= 0 || q->images <= 0)
        return 0;
    int64_t splits, per = mps_cu_qsplit_words(q, &splits), n = q->images * q->rows * q->cols;
    int32_t *acc32 = splits > 1 ? (int32_t *)scratch : NULL, *rs32 = acc32 ? acc32 + n : NULL;
    if (acc32) {
        cudaError_t e =
            cudaMemsetAsync(acc32, 0, (size_t)(n + q->images * q->rows) * sizeof(int32_t), (cudaStream_t)stream);
        if (e != cudaSuccess)
            return (int)e;
    }
    dim3 grid((unsigned)((q->rows + MPS_CU_QBM - 1) / MPS_CU_QBM), (unsigned)((q->cols + MPS_CU_QBN - 1) / MPS_CU_QBN),
              (unsigned)(q->images * splits));
    int e =
        ktab ? mps_cu_launch(mps_cu_qgemm_k<true>, grid, dim3(256), stream, x, w, ktab, y, *q, *s, acc32, rs32, per)
             : mps_cu_launch(mps_cu_qgemm_k<false>, grid, dim3(256), stream, x, w, ktab, y, *q, *s, acc32, rs32, per);
    if (e || !acc32)
        return e;
    return ktab ? mps_cu_launch(mps_cu_qstore_k<true>, mps_cu_blocks(n), MPS_CU_THREADS, stream, acc32, rs32, y, *q, *s,
                                n)
                : mps_cu_launch(mps_cu_qstore_k<false>, mps_cu_blocks(n), MPS_CU_THREADS, stream, acc32, rs32, y, *q,
                                *s, n);
}

/* Depthwise: a thread an output, the taps (less their zero point, int32) summed against x less its own. */
__global__ static void mps_cu_qdepthwise_k(const uint8_t *x, const int32_t *taps, void *y, struct mps_cu_qgeom q,
                                           struct mps_cu_qwin d, struct mps_cu_qstore s, int64_t n)
{
    mps_cu_wait();
    uint32_t flip = q.flip ? 0x80u : 0u;
    MPS_CU_FOR(i, n)
    {
        int64_t plane = i / q.rows, r = i % q.rows, c = plane % q.cols;
        int iy0 = (int)(r / q.ow) * q.sh - q.ph, ix0 = (int)(r % q.ow) * q.sw - q.pw;
        const uint8_t *xp = x + plane * (int64_t)q.ih * q.iw;
        const int32_t *t = taps + c * d.kh * d.kw;
        int32_t acc = 0;
        for (int a = 0; a < d.kh; a++) {
            int iy = iy0 + a * d.dh;
            if (iy < 0 || iy >= q.ih)
                continue;
            for (int b = 0; b < d.kw; b++) {
                int ix = ix0 + b * d.dw;
                if (ix >= 0 && ix < q.iw)
                    acc += ((int32_t)(xp[(int64_t)iy * q.iw + ix] ^ flip) - (int32_t)q.zx) * t[a * d.kw + b];
            }
        }
        mps_cu_qstore_one(s, c, acc, 0, y, i);
    }
}

extern "C" int mps_cu_qdepthwise(const uint8_t *x, const int32_t *taps, void *y, const struct mps_cu_qgeom *q,
                                 const struct mps_cu_qwin *d, const struct mps_cu_qstore *s, void *stream)
{
    int64_t n = q->images * q->cols * q->rows;
    MPS_CU_LAUNCH(mps_cu_qdepthwise_k, n, stream, x, taps, y, *q, *d, *s, n);
}

/* DequantizeLinear (dq) and QuantizeLinear, as the cpu's mps_cpu_quantize:
   element i's scale and zero point are those of index (i / inner) % per. */
__global__ static void mps_cu_quantize_k(const void *x, const float *scale, const void *zp, void *y, int64_t n,
                                         int64_t inner, int64_t per, int dq, int sgn)
{
    mps_cu_wait();
    MPS_CU_FOR(i, n)
    {
        int64_t ch = per > 1 ? (i / inner) % per : 0;
        float sc = scale[ch], z = !zp ? 0.0f : sgn ? ((const int8_t *)zp)[ch] : ((const uint8_t *)zp)[ch];
        if (dq) {
            float v = sgn ? (float)((const int8_t *)x)[i] : (float)((const uint8_t *)x)[i];
            ((float *)y)[i] = __fmul_rn(v - z, sc);
            continue;
        }
        float lo = sgn ? -128.0f : 0.0f, hi = sgn ? 127.0f : 255.0f;
        float t = __fdiv_rn(((const float *)x)[i], sc);
        t = t == t ? t : -z; /* NaN: 0 */
        t = fminf(fmaxf(t, lo - z - 1.0f), hi - z + 1.0f);
        t = rintf(t) + z;
        t = fminf(fmaxf(t, lo), hi);
        ((uint8_t *)y)[i] = (uint8_t)(int32_t)t;
    }
}

extern "C" int mps_cu_quantize(const void *x, const float *scale, const void *zp, void *y, int64_t n, int64_t inner,
                               int64_t per, int dq, int sgn, void *stream)
{
    MPS_CU_LAUNCH(mps_cu_quantize_k, n, stream, x, scale, zp, y, n, inner, per, dq, sgn);
}

/* MaxPool of bytes (u8, or i8 where sgn): each output the largest input its
   window covers inside the image (padding never wins), exact. */
__global__ static void mps_cu_pool_bytes_k(const uint8_t *x, uint8_t *y, int64_t planes, struct mps_cu_window w,
                                           int sgn, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(i, n)
    {
        int64_t plane = w.out[0] * w.out[1] * w.out[2], p = i / plane, o = i % plane;
        int64_t oz = o / (w.out[1] * w.out[2]), oy = o / w.out[2] % w.out[1], ox = o % w.out[2];
        const uint8_t *xp = x + p * w.in[0] * w.in[1] * w.in[2];
        int best = -1000;
        for (int64_t a = 0; a < w.k[0]; a++) {
            int64_t iz = oz * w.s[0] - w.pb[0] + a * w.d[0];
            for (int64_t b = 0; b < w.k[1] && iz >= 0 && iz < w.in[0]; b++) {
                int64_t iy = oy * w.s[1] - w.pb[1] + b * w.d[1];
                for (int64_t c = 0; c < w.k[2] && iy >= 0 && iy < w.in[1]; c++) {
                    int64_t ix = ox * w.s[2] - w.pb[2] + c * w.d[2];
                    if (ix < 0 || ix >= w.in[2])
                        continue;
                    uint8_t v = xp[(iz * w.in[1] + iy) * w.in[2] + ix];
                    int val = sgn ? (int)(int8_t)v : (int)v;
                    best = val > best ? val : best;
                }
            }
        }
        y[i] = (uint8_t)(best == -1000 ? 0 : best); /* a window wholly in the padding: 0, as the cpu */
    }
}

extern "C" int mps_cu_pool_bytes(const uint8_t *x, uint8_t *y, int64_t planes, const struct mps_cu_window *w, int sgn,
                                 void *stream)
{
    int64_t n = planes * w->out[0] * w->out[1] * w->out[2];
    MPS_CU_LAUNCH(mps_cu_pool_bytes_k, n, stream, x, y, planes, *w, sgn, n);
}
