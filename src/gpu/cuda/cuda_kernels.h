/* cuda_kernels.h: the launchers of the CUDA backend's kernels, callable from
   C. Plain C types only: no CUDA type reaches a file that C compiles
   (STYLE.md). Each enqueues its kernels on stream (a cudaStream_t) and
   returns the cudaError_t of the launch, 0 on success. Pointers are device
   memory; sizes are in elements. ops are enum mps_op values. */
#ifndef MPS_CUDA_KERNELS_H
#define MPS_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPS_CU_MAX_DIMS 8

/* An n-d walk: dims, and strides (elements) of up to three operands. */
struct mps_cu_walk {
    int nd;
    int64_t dim[MPS_CU_MAX_DIMS];
    int64_t s0[MPS_CU_MAX_DIMS], s1[MPS_CU_MAX_DIMS], s2[MPS_CU_MAX_DIMS];
};

/* A window in 3-D terms (op.h's struct mps_window3). */
struct mps_cu_window {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
};

/* launch.cu: once the device is set, before the first launch. */
int mps_cu_setup(void);

/* elementwise.cu */
int mps_cu_unary(int op, float alpha, float beta, const float *x, float *y, int64_t n, void *stream);
/* y = act(a op b) over w (s0: a, s1: b, s2: y), dtype an enum mps_dtype (f32, i64, i32);
   act an activation op with its alpha, beta (f32 only), 0 for none. */
/* op: enum mps_op; act, alpha, beta: a fused activation (Mod: alpha != 0 is its fmod flag). */
int mps_cu_binary(int op, int dtype, const void *a, const void *b, void *y, const struct mps_cu_walk *w, int act,
                  float alpha, float beta, void *stream);
int mps_cu_scale(float *y, float s, int64_t n, void *stream);
/* Comparisons, And/Or/Xor, Not, IsNaN, IsInf (op: enum mps_op) of a and b (a twice for the unary
   ones) of dtype into bool y; w: s0 a, s1 b, s2 y. inf: IsInf's 1 positive | 2 negative. */
int mps_cu_logic(int op, int dtype, int inf, const void *a, const void *b, void *y, const struct mps_cu_walk *w,
                 void *stream);
/* Where: out (contiguous, walked in order) = cond ? x : y; w: s0 cond, s1 x, s2 y. */
int mps_cu_where(const void *cond, const void *x, const void *y, void *out, const struct mps_cu_walk *w, size_t elem,
                 void *stream);
int mps_cu_cast(int from, int to, const void *x, void *y, int64_t n, void *stream);
int mps_cu_fill(int dtype, double v, void *y, int64_t n, void *stream);
/* y[i] = start + i * delta, converted as Cast converts. */
int mps_cu_range(int dtype, double start, double delta, void *y, int64_t n, void *stream);

/* quant.cu: the int8 products on the tensor cores (mma), exact in int32. The store (kernels.h's
   mps_qlinear_cols): v = (acc + corr[c] - zw[c] rowsum) mult[c] + add[c] in [lo, hi];
   quant: rounded half to even plus yz, a byte; else below 0 times slope, a float. */
struct mps_cu_qstore {
    const float *mult, *add;
    const int32_t *corr, *zw;
    float lo, hi, slope;
    int32_t yz;
    int quant, rowsums;
};
/* rows: a conv's output positions an image (oh ow), QLinearMatMul's rows; cols: output
   channels, features; k_real: the summed length; image: x's bytes an image; a conv's
   input plane, output width, strides and begin pads; zx: x's zero point (flip: x is
   int8, made unsigned by flipping its sign bit, zx so already). */
struct mps_cu_qgeom {
    int64_t rows, cols, images, k_real, image;
    int ih, iw, ow, sh, sw, ph, pw;
    uint32_t zx;
    int flip;
};
/* A depthwise conv's taps and dilations. */
struct mps_cu_qwin {
    int kh, kw, dh, dw;
};
/* y = the product of x and w ([k / 4][cols] words of four signed k); ktab: a conv's
   per-k (channel offset, tap row offset, tap column offset), NULL for QLinearMatMul.
   Where the output's tiles are too few to fill the GPU, k is summed in parts into int32
   scratch (mps_cu_qgemm_scratch's bytes; exact in any order), then stored. */
int mps_cu_qgemm(const uint8_t *x, const int32_t *w, const int32_t *ktab, void *y, const struct mps_cu_qgeom *q,
                 const struct mps_cu_qstore *s, void *scratch, void *stream);
size_t mps_cu_qgemm_scratch(const struct mps_cu_qgeom *q);
/* Depthwise QLinearConv: taps [cols][kh kw], the weights less their zero point. */
int mps_cu_qdepthwise(const uint8_t *x, const int32_t *taps, void *y, const struct mps_cu_qgeom *q,
                      const struct mps_cu_qwin *d, const struct mps_cu_qstore *s, void *stream);
/* DequantizeLinear (dq) of bytes into floats, or QuantizeLinear of floats into bytes; sgn:
   the bytes are int8; element i's scale and zero point (NULL: 0) those of (i / inner) % per. */
int mps_cu_quantize(const void *x, const float *scale, const void *zp, void *y, int64_t n, int64_t inner, int64_t per,
                    int dq, int sgn, void *stream);
/* MaxPool of bytes over planes (sgn: int8). */
int mps_cu_pool_bytes(const uint8_t *x, uint8_t *y, int64_t planes, const struct mps_cu_window *w, int sgn,
                      void *stream);

/* layout.cu */
/* dst[walk s0] = src[walk s1], elements of elem bytes. */
int mps_cu_copy(void *dst, const void *src, const struct mps_cu_walk *w, size_t elem, void *stream);
int mps_cu_gather(const void *x, const void *idx, int idx64, void *y, int64_t outer, int64_t len, int64_t count,
                  int64_t inner, size_t elem, void *stream);
/* mode: enum mps_pad_mode; pads[2*nd] begin then end; fill: elem bytes of the constant. */
int mps_cu_pad(const void *x, void *y, int nd, const int64_t *xdim, const int64_t *ydim, const int64_t *pads, int mode,
               const void *fill, size_t elem, void *stream);
/* TopK along the middle of [outer, len, inner]: values (elem bytes, dtype f32/i64/i32) and int64 indices. */
int mps_cu_topk(const void *x, int dtype, void *y, int64_t *iy, int64_t outer, int64_t len, int64_t inner, int64_t k,
                int largest, size_t elem, void *stream);
/* OneHot into [outer, depth, inner]; idx f32/i64/i32, y f32/i64/i32 (enum mps_dtype). */
int mps_cu_onehot(const void *idx, int idt, void *y, int ydt, int64_t outer, int64_t depth, int64_t inner, double off,
                  double on, void *stream);
/* y[i] = x[off[i]] for n elements of elem bytes (offsets prepared at compile). */
int mps_cu_gather_flat(const void *x, const int64_t *off, void *y, int64_t n, size_t elem, void *stream);
/* Scatters n updates u onto y at off[i] (-1: skipped) by reduction (enum mps_scatter_reduction). */
int mps_cu_scatter_flat(void *y, const int64_t *off, const void *u, int64_t n, size_t elem, int dtype, int reduction,
                        void *stream);
/* Trilu of n elements ([mats, rows, cols]) of elem bytes. */
int mps_cu_trilu(const void *x, void *y, int64_t n, int64_t rows, int64_t cols, int upper, int64_t k, size_t elem,
                 void *stream);
/* CumSum along the middle of [outer, len, inner]; dtype f32, i64 or i32. */
int mps_cu_cumsum(const void *x, void *y, int dtype, int64_t outer, int64_t len, int64_t inner, int exclusive,
                  int reverse, void *stream);
/* ArgMax (max) or ArgMin along the middle of [outer, len, inner]; x f32, i64 or i32 (enum mps_dtype);
   y int64 indices, or (hard: Hardmax) f32 of x's shape, 1 at ArgMax's index. */
int mps_cu_arg(const void *x, int dtype, void *y, int64_t outer, int64_t len, int64_t inner, int max, int last,
               int hard, void *stream);
struct mps_resize_params;
/* Resize of an f32 tensor (op.h, resize.h). */
int mps_cu_resize(const float *x, float *y, int nd, const int64_t *xdim, const int64_t *ydim,
                  const struct mps_resize_params *p, void *stream);

/* conv.cu */
/* im2col of batch images side by side: col[channels * taps][batch * plane], image b read
   from x + b * x_stride and written to columns b * plane on. */
int mps_cu_im2col(const float *x, float *col, int64_t channels, int64_t batch, int64_t x_stride,
                  const struct mps_cu_window *w, void *stream);
/* The epilogue of a GEMM over a batch's columns: y[b][c][o] = act(z[c][b * plane + o] + bias[c]). */
int mps_cu_unbatch(const float *z, float *y, const float *bias, int64_t batch, int64_t channels, int64_t plane,
                   int act, float alpha, float beta, void *stream);
/* ConvTranspose: y[m][o] += sum over taps of col[(m*taps + t)][input position of o]. */
int mps_cu_col2im(const float *col, float *y, int64_t channels, const struct mps_cu_window *w, void *stream);
/* Direct convolution (depthwise, or small enough that one kernel beats im2col + GEMM):
   y = act(conv(x, wt) + bias), bias may be NULL, act an enum mps_op or 0; pool: y is instead
   MaxPool 2x2 stride 2 of that (2-D, even output height and width). */
int mps_cu_conv_direct(const float *x, const float *wt, const float *bias, float *y, int64_t batch, int64_t c,
                       int64_t m, int64_t group, const struct mps_cu_window *w, int act, float alpha, float beta,
                       int pool, void *stream);
/* y[b][c][...] = bias[c] (+ y when add) over planes of size plane. */
int mps_cu_bias(float *y, const float *bias, int64_t batch, int64_t channels, int64_t plane, int add, void *stream);
/* The epilogue after a GEMM, one pass: y = act(y + scale * bias[(i / plane) % channels]); bias may be
   NULL, act an enum mps_op or 0 for none (alpha, beta its parameters). */
int mps_cu_epilogue(float *y, const float *bias, float scale, int64_t n, int64_t channels, int64_t plane, int act,
                    float alpha, float beta, void *stream);
/* Winograd F(2x2, 3x3) of n images, c -> m channels, input h x w (begin pads pt, pl), output
   oh x ow in th x tw tiles of 2x2; the n * th * tw tiles are the columns of its 16 GEMMs. */
struct mps_cu_wino {
    int64_t n, c, m, h, w, oh, ow, th, tw, pt, pl;
};
/* v[16][c][n * tiles]: the transformed input tiles. */
int mps_cu_wino_input(const float *x, float *v, const struct mps_cu_wino *q, void *stream);
/* y = act(the 2x2 blocks from p[16][m][n * tiles] + bias); bias may be NULL; pool: y is each
   block's max instead (MaxPool 2x2 stride 2; oh and ow even). */
int mps_cu_wino_output(const float *p, float *y, const float *bias, const struct mps_cu_wino *q, int act, float alpha,
                       float beta, int pool, void *stream);
/* MaxPool (max != 0, optional flat indices) and AveragePool over planes. */
int mps_cu_pool(const float *x, float *y, int64_t *indices, int64_t planes, const struct mps_cu_window *w, int max,
                int include_pad, int column_major, void *stream);
/* GlobalAveragePool, GlobalMaxPool (max), GlobalLpPool (lp > 0: its p). */
int mps_cu_global_pool(const float *x, float *y, int64_t planes, int64_t plane, int max, float lp, void *stream);

/* gemm.cu */
/* Gemm for a few rows, one kernel: y[m,n] = act(alpha x[m,k] w[n,k]^T + beta bias[n]), m <= MPS_CU_GEMV_ROWS,
   bias may be NULL. constant: w and bias are constants (no kernel writes them), which the kernel then starts
   reading before it waits for the kernel before. */
#define MPS_CU_GEMV_ROWS 8
int mps_cu_gemv(const float *x, const float *w, const float *bias, float alpha, float beta, float *y, int64_t m,
                int64_t n, int64_t k, int act, float act_alpha, float act_beta, int constant, void *stream);

/* A chain of such Linear layers, each reading the one before, then optionally a
   (Log)Softmax along the rows (softmax: 0, MPS_OP_SOFTMAX or MPS_OP_LOG_SOFTMAX),
   as one kernel of one block: the weights are staged in shared memory before the
   kernel waits for its predecessor, the activations never leave it. For the small
   last layers of an MLP, where a launch costs more than the work. */
#define MPS_CU_CHAIN_LAYERS 8
#define MPS_CU_CHAIN_BYTES (96 * 1024)
struct mps_cu_layer {
    const float *w, *bias; /* constants: [n, k] and [n] or NULL */
    int n, k, act;
    float alpha, beta, act_alpha, act_beta;
};
struct mps_cu_chain {
    struct mps_cu_layer l[MPS_CU_CHAIN_LAYERS];
    int layers, m, softmax;
};
/* Whether the chain is well formed, its shared memory (weights, biases, two
   activation buffers) fits this device's block (at most MPS_CU_CHAIN_BYTES), and
   one block does its work faster than a kernel a layer: it reads at most
   MPS_CU_CHAIN_READS floats from shared memory (each weight once, each input row
   once a column). On the H100, mnist_mlp's last two layers and Softmax, 8.8k
   weights: 2.1 us faster than three kernels at 1 row, 2.2 us slower at 8. */
#define MPS_CU_CHAIN_READS 36864
int mps_cu_gemv_chain_fits(const struct mps_cu_chain *c);
int mps_cu_gemv_chain(const float *x, float *y, const struct mps_cu_chain *c, void *stream);

/* norm.cu */
int mps_cu_batch_norm(const float *x, const float *scale, const float *bias, const float *mean, const float *var,
                      float eps, float *y, int64_t batch, int64_t channels, int64_t plane, void *stream);
int mps_cu_lrn(const float *x, float *y, int64_t batch, int64_t channels, int64_t plane, int64_t size, float alpha,
               float beta, float bias, void *stream);
/* InstanceNormalization of planes (n, c) planes: mean and population variance in double, by
   chunks of MPS_CU_IN_CHUNK; stats: scratch of mps_cu_instance_norm_scratch bytes. */
#define MPS_CU_IN_CHUNK 4096
int mps_cu_instance_norm(const float *x, const float *scale, const float *bias, float eps, float *y, double *stats,
                         int64_t planes, int64_t channels, int64_t plane, void *stream);
int mps_cu_layer_norm(const float *x, const float *scale, const float *bias, float *y, float *mean, float *inv,
                      int64_t rows, int64_t row, const struct mps_cu_walk *sw, const struct mps_cu_walk *bw, float eps,
                      void *stream);
int mps_cu_softmax(const float *x, float *y, int64_t outer, int64_t len, int64_t inner, int log, void *stream);
/* The Reduce* ops (op: enum mps_op; reduce.h): keep (s0 strides of the kept dims), red (s0 strides of the reduced ones). */
int mps_cu_reduce(int op, const float *x, float *y, int64_t outputs, const struct mps_cu_walk *keep,
                  const struct mps_cu_walk *red, void *stream);

/* rnn.cu: one step of one direction of RNN, GRU or LSTM (the CPU's rnn.c
   has the equations), every unit of every sequence a thread. The products
   come from cuBLAS between the launches: proj (X W^T for all steps, X's own
   row order), rec (h R^T, the first gate blocks) and, for GRU without
   linear_before_reset, rec2 ((r * h) R^T of its third block). */
struct mps_cu_rnn {
    int op; /* enum mps_op */
    int64_t steps, batch, hidden, dirs, dir;
    int reverse, batch_first, input_forget, linear_before_reset;
    float clip; /* > 0: each gate's sum clipped first */
    int fn[3];  /* f, g, h as enum mps_rnn_fn, with their alpha and beta */
    float alpha[3], beta[3];
    const float *proj, *rec, *rec2; /* rec2: NULL unless GRU's late product */
    const float *wb, *rb, *peep;    /* this direction's W and R biases and LSTM peepholes (NULL: none) */
    const int32_t *lens;            /* sequence_lens (NULL: every sequence has every step) */
    const float *h0, *c0;           /* initial states, [dirs, batch, hidden] or batch first (NULL: 0) */
    float *h, *c, *rh;              /* the state [batch, hidden] and GRU's r * h */
    float *y, *yh, *yc;             /* the outputs (yc: LSTM's) */
};
/* The state from h0 and c0 (or 0) into h, c, yh and yc (a sequence of no steps keeps them). */
int mps_cu_rnn_start(const struct mps_cu_rnn *q, void *stream);
/* GRU without linear_before_reset: r * h of step s into rh, before rec2's product. */
int mps_cu_rnn_reset(const struct mps_cu_rnn *q, int64_t s, void *stream);
/* Step s: the gates, the new state into h (c), y at its time (0 at the times past a sequence's end), yh, yc. */
int mps_cu_rnn_step(const struct mps_cu_rnn *q, int64_t s, void *stream);

#ifdef __cplusplus
}
#endif

#endif
