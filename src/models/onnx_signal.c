/* onnx_signal.c: the signal ops, loaded as products with constant bases so
   that every backend runs them on its fastest kernels. A DFT along an axis
   is one MatMul of the signal (real, or real and imaginary interleaved) by
   the [n C, 2 K] matrix of cos and sin (computed in double), between the
   Transposes that bring the axis next to the last; an STFT is one Conv whose
   filters are that basis times the window, strided by the frame step. The
   window functions and MelWeightMatrix, whose inputs are sizes known once
   the model is loaded, are constants. Each row ends in an Identity of the
   result (removed by the passes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

enum mps_status mps_onnx_add(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, enum mps_op op, const int *in,
                             int n_in, const union mps_op_params *p, int *out, struct mps_error *err)
{
    int args[8]; /* in may point at *out (x = f(x)) */
    if (n_in > 8)
        return mps_onnx_fail(n, err, "a composition of more than 8 inputs");
    memcpy(args, in, sizeof(int) * (size_t)n_in);
    for (int i = 0; i < n_in; i++)
        if (args[i] < 0)
            return mps_onnx_fail(n, err, "an input it needs is omitted");
    if ((*out = mps_onnx_temp(c, n->name)) < 0)
        return mps_onnx_oom(err);
    return mps_graph_add_node(c->g, op, n->name, args, n_in, out, 1, p, err);
}

enum mps_status mps_onnx_reshape(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int *x,
                                 const struct mps_shape *s, struct mps_error *err)
{
    struct mps_shape d = {1, {s->ndim}};
    int to = mps_onnx_const(c, n->name, MPS_I64, &d, s->dim);
    return to < 0 ? mps_onnx_oom(err) : mps_onnx_add(c, n, MPS_OP_RESHAPE, (int[]){*x, to}, 2, NULL, x, err);
}

/* x transposed by perm[rank]. */
static enum mps_status mps_sig_transpose(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int *x, const int *perm,
                                         int rank, struct mps_error *err)
{
    union mps_op_params p;
    mps_op_params_default(MPS_OP_TRANSPOSE, &p);
    p.transpose.n_perm = rank;
    memcpy(p.transpose.perm, perm, sizeof(int) * (size_t)rank);
    return mps_onnx_add(c, n, MPS_OP_TRANSPOSE, x, 1, &p, x, err);
}

enum mps_status mps_onnx_shape_of(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int v, struct mps_shape *s,
                                  struct mps_error *err)
{
    bool known;
    if (v < 0)
        return mps_onnx_fail(n, err, "an input it needs is omitted");
    enum mps_status st = mps_passes_fold_value(c->g, v, &known, err);
    if (st)
        return st;
    if (!c->g->values[v].shape_known)
        return mps_onnx_fail(n, err, "its input's shape is not known at load");
    *s = c->g->values[v].shape;
    return MPS_OK;
}

/* Input i of n as a known integer (absent: def), else a failure. */
static enum mps_status mps_sig_int(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int i, int64_t def,
                                   int64_t *v, struct mps_error *err)
{
    *v = def;
    if (i < n->n_in && n->in[i] >= 0 && !mps_onnx_known_int(c, n->in[i], v, err))
        return mps_onnx_fail(n, err, "input %d must be a constant: it sets the output's shape", i);
    return MPS_OK;
}

enum mps_status mps_onnx_number(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int i, double def, double *v,
                                struct mps_error *err)
{
    bool known = false;
    *v = def;
    if (i >= n->n_in || n->in[i] < 0)
        return MPS_OK;
    enum mps_status st = mps_passes_fold_value(c->g, n->in[i], &known, err);
    const struct mps_value *x = &c->g->values[n->in[i]];
    if (st || !known || mps_shape_numel(&x->shape) != 1)
        return st ? st : mps_onnx_fail(n, err, "input %d must be a constant of one element", i);
    *v = mps_elem_get(x->data, x->dtype, 0);
    return MPS_OK;
}

/* The basis of a DFT of length len over n input samples of c components
   (1: real, 2: real and imaginary) into k bins: w[(j c + comp) * 2 k + 2 bin
   + part], part 0 the real output, 1 the imaginary; inverse: e^{+i...} / len. */
static void mps_sig_basis(float *w, int64_t n, int64_t c, int64_t k, int64_t len, bool inverse, const float *window)
{
    for (int64_t j = 0; j < n; j++)
        for (int64_t b = 0; b < k; b++) {
            double t = 2 * M_PI * (double)((j * b) % len) / (double)len * (inverse ? 1 : -1);
            double scale = (inverse ? 1.0 / (double)len : 1.0) * (window ? window[j] : 1.0);
            double re = cos(t) * scale, im = sin(t) * scale;
            float *row = w + (j * c) * 2 * k + 2 * b;
            row[0] = (float)re, row[1] = (float)im; /* (a) (cos + i sin) */
            if (c == 2)
                row[2 * k] = (float)-im, row[2 * k + 1] = (float)re; /* (i b) (cos + i sin) */
        }
}

/* DFT (opset 17: axis an attribute, default 1; 20: input 2, default -2):
   dft_length (input 1) cuts or zero-pads the signal, onesided keeps the
   len / 2 + 1 first bins, inverse scales by 1 / len. */
static enum mps_status mps_map_dft(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                   struct mps_error *err)
{
    int64_t axis, inverse, onesided, len;
    struct mps_shape s = {0, {0}};
    enum mps_status st = mps_attr_int(n, "axis", c->opset >= 20 ? INT64_MIN : 1, &axis, err);
    if (st || (st = mps_attr_int(n, "inverse", 0, &inverse, err)) ||
        (st = mps_attr_int(n, "onesided", 0, &onesided, err)) || (st = mps_onnx_shape_of(c, n, n->in[0], &s, err)))
        return st;
    if (c->opset >= 20 && axis != INT64_MIN)
        return mps_onnx_fail(n, err, "axis is an input from opset 20 on, not an attribute");
    if (c->opset >= 20 && (st = mps_sig_int(c, n, 2, -2, &axis, err)))
        return st;
    int r = s.ndim;
    if (r < 2 || (s.dim[r - 1] != 1 && s.dim[r - 1] != 2))
        return mps_onnx_fail(n, err, "its input must end in a dim of 1 (real) or 2 (complex)");
    if (axis < -r || axis > r - 2 || axis == -1)
        return mps_onnx_fail(n, err, "axis %lld is outside [-%d, -2] and [0, %d]", (long long)axis, r, r - 2);
    axis += axis < 0 ? r : 0;
    if ((st = mps_sig_int(c, n, 1, s.dim[axis], &len, err)))
        return st;
    if (len < 1 || len > (1 << 16) || inverse < 0 || inverse > 1 || onesided < 0 || onesided > 1)
        return mps_onnx_fail(n, err, "dft_length %lld is outside [1, 65536], or inverse or onesided not 0 or 1",
                             (long long)len);
    int64_t comps = s.dim[r - 1], used = s.dim[axis] < len ? s.dim[axis] : len, bins = onesided ? len / 2 + 1 : len;
    int x = n->in[0], perm[MPS_MAX_DIMS], back[MPS_MAX_DIMS], k = 0;
    for (int d = 0; d < r - 1; d++)
        if (d != axis)
            perm[k++] = d;
    perm[k++] = (int)axis, perm[k++] = r - 1;
    for (int d = 0; d < r; d++)
        back[perm[d]] = d;
    if (axis != r - 2 && (st = mps_sig_transpose(c, n, &x, perm, r, err)))
        return st;
    struct mps_shape flat = {r - 1, {0}}, out = {r, {0}}, ws = {2, {used * comps, 2 * bins}};
    for (int d = 0; d < r - 2; d++)
        flat.dim[d] = out.dim[d] = s.dim[perm[d]];
    flat.dim[r - 2] = used * comps, out.dim[r - 2] = bins, out.dim[r - 1] = 2;
    if (used < s.dim[axis]) { /* dft_length cuts the signal */
        struct mps_shape one = {1, {1}};
        int64_t zero = 0, a = r - 2;
        int b = mps_onnx_const(c, n->name, MPS_I64, &one, &zero), e = mps_onnx_const(c, n->name, MPS_I64, &one, &used),
            ax = mps_onnx_const(c, n->name, MPS_I64, &one, &a);
        if (b < 0 || e < 0 || ax < 0 || (st = mps_onnx_add(c, n, MPS_OP_SLICE, (int[]){x, b, e, ax}, 4, NULL, &x, err)))
            return st ? st : mps_onnx_oom(err);
    }
    float *w = mps_graph_alloc(c->g, sizeof(float) * (size_t)(ws.dim[0] * ws.dim[1]));
    if (!w)
        return mps_onnx_oom(err);
    mps_sig_basis(w, used, comps, bins, len, inverse != 0, NULL);
    int wv = mps_onnx_temp(c, n->name);
    if (wv < 0)
        return mps_onnx_oom(err);
    c->g->values[wv].dtype = MPS_F32, c->g->values[wv].shape = ws, c->g->values[wv].shape_known = true;
    c->g->values[wv].data = w;
    if ((st = mps_onnx_reshape(c, n, &x, &flat, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_MATMUL, (int[]){x, wv}, 2, NULL, &x, err)) ||
        (st = mps_onnx_reshape(c, n, &x, &out, err)) ||
        (axis != r - 2 && (st = mps_sig_transpose(c, n, &x, back, r, err))))
        return st;
    n->in[0] = x, n->n_in = 1;
    mps_op_params_default(MPS_OP_IDENTITY, p);
    return MPS_OK;
}

/* STFT of a [batch, length, 1 or 2] signal: frames of frame_length (or the
   window's length) every frame_step samples, each times the window (a
   constant; default ones), onesided by default: [batch, frames, bins, 2]. */
static enum mps_status mps_map_stft(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    int64_t onesided, step, len;
    struct mps_shape s = {0, {0}};
    enum mps_status st = mps_attr_int(n, "onesided", 1, &onesided, err);
    if (st || (st = mps_onnx_shape_of(c, n, n->in[0], &s, err)) || (st = mps_sig_int(c, n, 1, -1, &step, err)) ||
        (st = mps_sig_int(c, n, 3, -1, &len, err)))
        return st;
    const float *window = NULL;
    if (n->n_in > 2 && n->in[2] >= 0) {
        struct mps_shape wsh = {0, {0}};
        bool known;
        if ((st = mps_onnx_shape_of(c, n, n->in[2], &wsh, err)) ||
            (st = mps_passes_fold_value(c->g, n->in[2], &known, err)))
            return st;
        const struct mps_value *wv = &c->g->values[n->in[2]];
        if (!known || wv->dtype != MPS_F32 || wsh.ndim != 1 || (len >= 0 && wsh.dim[0] != len))
            return mps_onnx_fail(n, err, "its window must be a constant: a 1-D f32 tensor of frame_length values");
        window = wv->data, len = wsh.dim[0];
    }
    if (s.ndim != 3 || (s.dim[2] != 1 && s.dim[2] != 2))
        return mps_onnx_fail(n, err, "its signal must be [batch, length, 1 or 2]");
    if (step < 1 || len < 1 || len > s.dim[1] || len > (1 << 16) || onesided < 0 || onesided > 1)
        return mps_onnx_fail(n, err,
                             "frame_step %lld and frame_length %lld must be given, at least 1, the length at "
                             "most the signal's %lld",
                             (long long)step, (long long)len, (long long)s.dim[1]);
    int64_t comps = s.dim[2], bins = onesided ? len / 2 + 1 : len, frames = (s.dim[1] - len) / step + 1;
    struct mps_shape ws = {4, {2 * bins, comps, 1, len}}, x4 = {4, {s.dim[0], comps, 1, s.dim[1]}},
                     y4 = {4, {s.dim[0], bins, 2, frames}};
    float *w = mps_graph_alloc(c->g, sizeof(float) * (size_t)(2 * bins * comps * len)),
          *basis = mps_graph_alloc(c->g, sizeof(float) * (size_t)(2 * bins * comps * len));
    int wv = mps_onnx_temp(c, n->name), x = n->in[0];
    if (!w || !basis || wv < 0)
        return mps_onnx_oom(err);
    mps_sig_basis(basis, len, comps, bins, len, false, window);
    for (int64_t j = 0; j < len; j++) /* [j c][2 bins] to the filters' [2 bins][c][1][j] */
        for (int64_t q = 0; q < comps; q++)
            for (int64_t o = 0; o < 2 * bins; o++)
                w[(o * comps + q) * len + j] = basis[(j * comps + q) * 2 * bins + o];
    c->g->values[wv].dtype = MPS_F32, c->g->values[wv].shape = ws, c->g->values[wv].shape_known = true;
    c->g->values[wv].data = w;
    union mps_op_params conv;
    mps_op_params_default(MPS_OP_CONV, &conv);
    conv.conv.win.kernel[0] = 1, conv.conv.win.kernel[1] = len, conv.conv.win.stride[1] = step;
    if ((st = mps_sig_transpose(c, n, &x, (int[]){0, 2, 1}, 3, err)) || (st = mps_onnx_reshape(c, n, &x, &x4, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_CONV, (int[]){x, wv}, 2, &conv, &x, err)) ||
        (st = mps_onnx_reshape(c, n, &x, &y4, err)) || (st = mps_sig_transpose(c, n, &x, (int[]){0, 3, 1, 2}, 4, err)))
        return st;
    n->in[0] = x, n->n_in = 1;
    mps_op_params_default(MPS_OP_IDENTITY, p);
    return MPS_OK;
}

/* Output n as the constant v[count] (double) of the output_datatype
   attribute (f32 by default; f64 too). */
static enum mps_status mps_sig_const_out(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                         const double *v, const struct mps_shape *s, struct mps_error *err)
{
    int64_t type;
    enum mps_dtype dt = MPS_F32;
    enum mps_status st = mps_attr_int(n, "output_datatype", 1, &type, err);
    if (st)
        return st;
    if (type != 1 && type != 11)
        return mps_onnx_fail(n, err, "output_datatype %lld is not supported (float and double are)", (long long)type);
    dt = type == 11 ? MPS_F64 : MPS_F32;
    int64_t count = mps_shape_numel(s);
    void *data = mps_graph_alloc(c->g, (size_t)(count + 1) * mps_dtype_size(dt));
    if (!data)
        return mps_onnx_oom(err);
    for (int64_t i = 0; i < count; i++)
        mps_elem_set(data, dt, i, v[i]);
    int k = mps_onnx_const(c, n->name, dt, s, data);
    if (k < 0)
        return mps_onnx_oom(err);
    n->in[0] = k, n->n_in = 1;
    mps_op_params_default(MPS_OP_IDENTITY, p);
    return MPS_OK;
}

/* HannWindow, HammingWindow, BlackmanWindow of a size known at load:
   periodic (N = size) or symmetric (N = size - 1), in double. */
static enum mps_status mps_map_window_fn(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                         struct mps_error *err)
{
    int64_t size, periodic;
    enum mps_status st = mps_sig_int(c, n, 0, -1, &size, err);
    if (st || (st = mps_attr_int(n, "periodic", 1, &periodic, err)))
        return st;
    if (size < 1 || size > (1 << 24))
        return mps_onnx_fail(n, err, "size %lld is outside [1, 2^24]", (long long)size);
    const char *op = n->np->op_type;
    double a[3] = {0.42, 0.5, 0.08}; /* Blackman: a0 - a1 cos + a2 cos 2 */
    if (!strcmp(op, "HannWindow"))
        a[0] = a[1] = 0.5, a[2] = 0;
    else if (!strcmp(op, "HammingWindow"))
        a[0] = 25.0 / 46, a[1] = 21.0 / 46, a[2] = 0;
    double *v = malloc(sizeof *v * (size_t)size), N = (double)(periodic ? size : size - 1);
    if (!v)
        return mps_onnx_oom(err);
    for (int64_t i = 0; i < size; i++) {
        double t = N > 0 ? 2 * M_PI * (double)i / N : 0;
        v[i] = a[0] - a[1] * cos(t) + a[2] * cos(2 * t);
    }
    struct mps_shape s = {1, {size}};
    st = mps_sig_const_out(c, n, p, v, &s, err);
    free(v);
    return st;
}

/* MelWeightMatrix as ONNX's reference computes it: num_mel_bins + 2 points
   evenly spaced in mel (the step the range over num_mel_bins + 2), each
   taken to a DFT bin (floor((dft_length + 1) f / sample_rate)), triangles
   between them: [dft_length / 2 + 1, num_mel_bins]. */
static enum mps_status mps_map_mel(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                   struct mps_error *err)
{
    int64_t mels, len, rate;
    double lo, hi;
    enum mps_status st;
    if ((st = mps_sig_int(c, n, 0, -1, &mels, err)) || (st = mps_sig_int(c, n, 1, -1, &len, err)) ||
        (st = mps_sig_int(c, n, 2, -1, &rate, err)) || (st = mps_onnx_number(c, n, 3, 0, &lo, err)) ||
        (st = mps_onnx_number(c, n, 4, 0, &hi, err)))
        return st;
    if (mels < 1 || mels > 4096 || len < 1 || len > (1 << 16) || rate < 1 || !(lo >= 0) || !(hi > lo) ||
        !(hi <= (double)rate / 2 + 1e-9))
        return mps_onnx_fail(n, err,
                             "num_mel_bins %lld, dft_length %lld and sample_rate %lld must be positive, and "
                             "0 <= lower_edge_hertz < upper_edge_hertz <= sample_rate / 2",
                             (long long)mels, (long long)len, (long long)rate);
    int64_t bins = len / 2 + 1, *at = malloc(sizeof *at * (size_t)(mels + 2));
    double *v = calloc((size_t)(bins * mels), sizeof *v);
    if (!at || !v) {
        free(at);
        free(v);
        return mps_onnx_oom(err);
    }
    double mel_lo = 2595 * log10(1 + lo / 700), mel_hi = 2595 * log10(1 + hi / 700);
    double step = (mel_hi - mel_lo) / (double)(mels + 2);
    for (int64_t i = 0; i < mels + 2; i++) {
        double f = 700 * (pow(10, ((double)i * step + mel_lo) / 2595) - 1);
        at[i] = (int64_t)floor((double)(len + 1) * f / (double)rate);
        at[i] = at[i] < 0 ? 0 : at[i] >= bins ? bins - 1 : at[i];
    }
    for (int64_t i = 0; i < mels; i++) {
        int64_t left = at[i], center = at[i + 1], right = at[i + 2];
        if (center == left)
            v[center * mels + i] = 1;
        for (int64_t j = left; center > left && j <= center; j++)
            v[j * mels + i] = (double)(j - left) / (double)(center - left);
        for (int64_t j = center; j < right; j++)
            v[j * mels + i] = (double)(right - j) / (double)(right - center);
    }
    struct mps_shape s = {2, {bins, mels}};
    st = mps_sig_const_out(c, n, p, v, &s, err);
    free(at);
    free(v);
    return st;
}

const struct mps_onnx_rule mps_onnx_rules_signal[] = {
    {"DFT", MPS_OP_IDENTITY, "axis inverse onesided", mps_map_dft},
    {"STFT", MPS_OP_IDENTITY, "onesided", mps_map_stft},
    {"HannWindow", MPS_OP_IDENTITY, "output_datatype periodic", mps_map_window_fn},
    {"HammingWindow", MPS_OP_IDENTITY, "output_datatype periodic", mps_map_window_fn},
    {"BlackmanWindow", MPS_OP_IDENTITY, "output_datatype periodic", mps_map_window_fn},
    {"MelWeightMatrix", MPS_OP_IDENTITY, "output_datatype", mps_map_mel},
};
const size_t mps_onnx_n_rules_signal = sizeof mps_onnx_rules_signal / sizeof mps_onnx_rules_signal[0];
