/* ref_window.c: the sliding-window ops of the reference (ref.h): Conv,
   ConvTranspose, the pools and the global pools, in double, an output
   element at a time. */
#include "ref_window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Begin and end pads of a window as ONNX defines them, computed here afresh. */
static void ref_window_pads(const struct mps_window *w, int sp, const int64_t *in, const int64_t *k, int64_t *pb,
                            int64_t *pe)
{
    for (int i = 0; i < sp; i++) {
        if (w->auto_pad == MPS_AUTO_PAD_NOTSET) {
            pb[i] = w->pad[i], pe[i] = w->pad[i + sp];
        } else if (w->auto_pad == MPS_AUTO_PAD_VALID) {
            pb[i] = pe[i] = 0;
        } else {
            int64_t out = (int64_t)ceil((double)in[i] / (double)w->stride[i]);
            int64_t total = (out - 1) * w->stride[i] + (k[i] - 1) * w->dilation[i] + 1 - in[i];
            if (total < 0)
                total = 0;
            pb[i] = w->auto_pad == MPS_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            pe[i] = total - pb[i];
        }
    }
}

/* ref_conv's 2-D case, the same sums in the same order with each index
   written out: the general loop below, an unravel and two ravels a product,
   took most of the op test's time on its layers of 8 MiB. */
static void ref_conv2d(const struct mps_conv_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out,
                       const int64_t *pb)
{
    const struct mps_shape *xs = &in[0].shape, *ws = &in[1].shape, *ys = &out[0].shape;
    int64_t n_img = ys->dim[0], m_out = ys->dim[1], oh_n = ys->dim[2], ow_n = ys->dim[3];
    int64_t c_in = xs->dim[1], h = xs->dim[2], w = xs->dim[3], kh = ws->dim[2], kw = ws->dim[3];
    int64_t cg = c_in / p->group, mg = m_out / p->group;
    const double *x = in[0].d, *wt = in[1].d, *bias = n_in > 2 ? in[2].d : NULL;
    double *y = out[0].d;
    for (int64_t b = 0; b < n_img; b++)
        for (int64_t m = 0; m < m_out; m++)
            for (int64_t oh = 0; oh < oh_n; oh++)
                for (int64_t ow = 0; ow < ow_n; ow++) {
                    double s = bias ? bias[m] : 0;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t th = 0; th < kh; th++)
                            for (int64_t tw = 0; tw < kw; tw++) {
                                int64_t ih = oh * p->win.stride[0] - pb[0] + th * p->win.dilation[0];
                                int64_t iw = ow * p->win.stride[1] - pb[1] + tw * p->win.dilation[1];
                                if (ih >= 0 && ih < h && iw >= 0 && iw < w)
                                    s += x[((b * c_in + m / mg * cg + c) * h + ih) * w + iw] *
                                         wt[((m * cg + c) * kh + th) * kw + tw];
                            }
                    y[((b * m_out + m) * oh_n + oh) * ow_n + ow] = s;
                }
}

void ref_conv(const struct mps_conv_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape, *ws = &in[1].shape, *ys = &out[0].shape;
    int sp = xs->ndim - 2;
    int64_t k[3], pb[3], pe[3];
    for (int i = 0; i < sp; i++)
        k[i] = ws->dim[2 + i];
    ref_window_pads(&p->win, sp, xs->dim + 2, k, pb, pe);
    if (sp == 2) {
        ref_conv2d(p, in, n_in, out, pb);
        return;
    }
    int64_t cg = xs->dim[1] / p->group, mg = ys->dim[1] / p->group;
    int64_t idx[MPS_MAX_DIMS], xi[MPS_MAX_DIMS] = {0}, wi[MPS_MAX_DIMS] = {0};
    for (int64_t o = 0; o < ref_numel(ys); o++) {
        ref_unravel(ys, o, idx);
        int64_t m = idx[1], g = m / mg;
        double s = n_in > 2 && in[2].d ? in[2].d[m] : 0;
        struct mps_shape ks = {sp, {0}};
        memcpy(ks.dim, k, sizeof(int64_t) * (size_t)sp);
        for (int64_t c = 0; c < cg; c++)
            for (int64_t t = 0; t < ref_numel(&ks); t++) {
                int64_t kk[3];
                ref_unravel(&ks, t, kk);
                bool inside = true;
                xi[0] = idx[0], xi[1] = g * cg + c;
                wi[0] = m, wi[1] = c;
                for (int i = 0; i < sp; i++) {
                    xi[2 + i] = idx[2 + i] * p->win.stride[i] - pb[i] + kk[i] * p->win.dilation[i];
                    wi[2 + i] = kk[i];
                    inside = inside && xi[2 + i] >= 0 && xi[2 + i] < xs->dim[2 + i];
                }
                if (inside)
                    s += in[0].d[ref_ravel(xs, xi)] * in[1].d[ref_ravel(ws, wi)];
            }
        out[0].d[o] = s;
    }
}

void ref_conv_transpose(const struct mps_conv_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape, *ws = &in[1].shape, *ys = &out[0].shape;
    int sp = xs->ndim - 2;
    int64_t pb[3];
    const struct mps_window *w = &p->win;
    for (int i = 0; i < sp; i++) {
        int64_t full = w->stride[i] * (xs->dim[2 + i] - 1) + p->output_padding[i] +
                       (ws->dim[2 + i] - 1) * w->dilation[i] + 1;
        bool same = w->auto_pad == MPS_AUTO_PAD_SAME_UPPER || w->auto_pad == MPS_AUTO_PAD_SAME_LOWER;
        if (p->has_output_shape || same) {
            int64_t want = p->has_output_shape ? p->output_shape[i] : xs->dim[2 + i] * w->stride[i];
            int64_t total = full - want, half = (int64_t)floor((double)total / 2);
            pb[i] = w->auto_pad == MPS_AUTO_PAD_SAME_UPPER ? half : total - half;
        } else {
            pb[i] = w->auto_pad == MPS_AUTO_PAD_VALID ? 0 : w->pad[i];
        }
    }
    int64_t cg = xs->dim[1] / p->group, mg = ws->dim[1];
    int64_t xi[MPS_MAX_DIMS], wi[MPS_MAX_DIMS] = {0}, yi[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(ys); o++) {
        ref_unravel(ys, o, yi);
        out[0].d[o] = n_in > 2 && in[2].d ? in[2].d[yi[1]] : 0;
    }
    for (int64_t f = 0; f < ref_numel(xs); f++) {
        ref_unravel(xs, f, xi);
        int64_t c = xi[1], g = c / cg;
        for (int64_t wf = 0; wf < ref_numel(ws) / ws->dim[0]; wf++) {
            struct mps_shape wsub = *ws;
            wsub.dim[0] = 1;
            ref_unravel(&wsub, wf, wi);
            wi[0] = c;
            bool inside = true;
            yi[0] = xi[0], yi[1] = g * mg + wi[1];
            for (int i = 0; i < sp; i++) {
                yi[2 + i] = xi[2 + i] * w->stride[i] - pb[i] + wi[2 + i] * w->dilation[i];
                inside = inside && yi[2 + i] >= 0 && yi[2 + i] < ys->dim[2 + i];
            }
            if (inside)
                out[0].d[ref_ravel(ys, yi)] += in[0].d[f] * in[1].d[ref_ravel(ws, wi)];
        }
    }
}

void ref_pool(enum mps_op op, const struct mps_pool_params *p, const struct ref_tensor *in, struct ref_tensor *out,
              int n_out)
{
    const struct mps_shape *xs = &in[0].shape, *ys = &out[0].shape;
    int sp = xs->ndim - 2;
    int64_t pb[3], pe[3];
    ref_window_pads(&p->win, sp, xs->dim + 2, p->win.kernel, pb, pe);
    struct mps_shape ks = {sp, {0}};
    memcpy(ks.dim, p->win.kernel, sizeof(int64_t) * (size_t)sp);
    int64_t idx[MPS_MAX_DIMS], xi[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(ys); o++) {
        ref_unravel(ys, o, idx);
        double best = -INFINITY, sum = 0;
        int64_t count = 0, padded = 0, arg = -1;
        for (int64_t t = 0; t < ref_numel(&ks); t++) {
            int64_t kk[3];
            ref_unravel(&ks, t, kk);
            bool inside = true, in_pad = true;
            xi[0] = idx[0], xi[1] = idx[1];
            for (int i = 0; i < sp; i++) {
                int64_t v = idx[2 + i] * p->win.stride[i] - pb[i] + kk[i] * p->win.dilation[i];
                xi[2 + i] = v;
                inside = inside && v >= 0 && v < xs->dim[2 + i];
                in_pad = in_pad && v >= -pb[i] && v < xs->dim[2 + i] + pe[i];
            }
            padded += in_pad;
            if (!inside)
                continue;
            double v = in[0].d[ref_ravel(xs, xi)];
            if (v > best || arg < 0) {
                best = v;
                arg = ref_ravel(xs, xi);
                if (p->column_major) { /* spatial index with the first spatial dim fastest */
                    int64_t plane = 1, at = 0;
                    for (int i = 0; i < sp; i++) {
                        at += xi[2 + i] * plane;
                        plane *= xs->dim[2 + i];
                    }
                    arg = (xi[0] * xs->dim[1] + xi[1]) * plane + at;
                }
            }
            sum += v;
            count++;
        }
        out[0].d[o] = op == MPS_OP_MAX_POOL ? best : sum / (double)(p->count_include_pad ? padded : count);
        if (n_out > 1)
            out[1].d[o] = (double)arg;
    }
}

void ref_global_pool(enum mps_op op, double lp, const struct ref_tensor *in, struct ref_tensor *out)
{
    int64_t planes = in[0].shape.dim[0] * in[0].shape.dim[1], size = ref_numel(&in[0].shape) / planes;
    for (int64_t p = 0; p < planes; p++) {
        double best = -INFINITY, sum = 0, sum_p = 0;
        for (int64_t i = 0; i < size; i++) {
            double v = in[0].d[p * size + i];
            best = v > best ? v : best;
            sum += v;
            sum_p += pow(fabs(v), lp);
        }
        out[0].d[p] = op == MPS_OP_GLOBAL_MAX_POOL ? best
                      : op == MPS_OP_GLOBAL_LP_POOL ? pow(sum_p, 1 / lp)
                                                    : sum / (double)size;
    }
}

/* A coordinate reflected at lo and hi until inside, as the spec's reference does it: step by step. */
static double ref_gs_reflect(double x, double lo, double hi)
{
    if (hi <= lo)
        return lo;
    while (x < lo || x > hi)
        x = x < lo ? 2 * lo - x : 2 * hi - x;
    return x;
}

static double ref_gs_pixel(const struct mps_gridsample_params *p, const double *img, int64_t h, int64_t w, double r,
                           double c, const double *lo, const double *hi)
{
    if (p->padding == MPS_PAD_CONSTANT)
        return r >= 0 && r < h && c >= 0 && c < w ? img[(int64_t)r * w + (int64_t)c] : 0;
    if (p->padding == MPS_PAD_REFLECT) {
        c = trunc(ref_gs_reflect(c, lo[0], hi[0]));
        r = trunc(ref_gs_reflect(r, lo[1], hi[1]));
    }
    c = fmin(fmax(c, 0), (double)(w - 1));
    r = fmin(fmax(r, 0), (double)(h - 1));
    return img[(int64_t)r * w + (int64_t)c];
}

static double ref_gs_cubic(double d) /* Keys' kernel, A = -0.75, at distance d */
{
    const double a = -0.75;
    d = fabs(d);
    return d <= 1  ? (a + 2) * d * d * d - (a + 3) * d * d + 1
           : d < 2 ? a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a
                   : 0;
}

void ref_gridsample(const struct mps_gridsample_params *p, const struct ref_tensor *in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape, *ys = &out[0].shape;
    int64_t N = xs->dim[0], C = xs->dim[1], H = xs->dim[2], W = xs->dim[3], HO = ys->dim[2], WO = ys->dim[3];
    double e = p->align_corners ? 0 : 0.5, lo[2] = {-e, -e}, hi[2] = {(double)W - 1 + e, (double)H - 1 + e};
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t oy = 0; oy < HO; oy++)
                for (int64_t ox = 0; ox < WO; ox++) {
                    const double *g = in[1].d + ((n * HO + oy) * WO + ox) * 2;
                    double v[2];
                    for (int k = 0; k < 2; k++) {
                        double len = (double)(k ? H : W);
                        v[k] = p->align_corners ? (g[k] + 1) / 2 * (len - 1) : ((g[k] + 1) * len - 1) / 2;
                        if (p->mode == MPS_RESIZE_NEAREST)
                            v[k] = nearbyint(v[k]);
                    }
                    bool outside = v[0] < lo[0] || v[0] > hi[0] || v[1] < lo[1] || v[1] > hi[1];
                    for (int k = 0; outside && k < 2; k++)
                        v[k] = p->padding == MPS_PAD_EDGE      ? fmin(fmax(v[k], 0), (double)((k ? H : W) - 1))
                               : p->padding == MPS_PAD_REFLECT ? ref_gs_reflect(v[k], lo[k], hi[k])
                                                               : v[k];
                    const double *img = in[0].d + (n * C + c) * H * W;
                    double acc = 0;
                    if (p->mode == MPS_RESIZE_NEAREST) {
                        acc = ref_gs_pixel(p, img, H, W, v[1], v[0], lo, hi);
                    } else {
                        int r = p->mode == MPS_RESIZE_LINEAR ? 1 : 2; /* taps on each side */
                        for (double ty = floor(v[1]) - r + 1; ty <= floor(v[1]) + r; ty++)
                            for (double tx = floor(v[0]) - r + 1; tx <= floor(v[0]) + r; tx++) {
                                double wy = r == 1 ? 1 - fabs(v[1] - ty) : ref_gs_cubic(v[1] - ty),
                                       wx = r == 1 ? 1 - fabs(v[0] - tx) : ref_gs_cubic(v[0] - tx);
                                acc += wy * wx * ref_gs_pixel(p, img, H, W, ty, tx, lo, hi);
                            }
                    }
                    out[0].d[((n * C + c) * HO + oy) * WO + ox] = acc;
                }
}

void ref_unpool(const struct mps_pool_params *p, const struct ref_tensor *in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape, *ys = &out[0].shape;
    int sp = xs->ndim - 2;
    int64_t made[MPS_MAX_DIMS], idx[MPS_MAX_DIMS];
    for (int d = 0; d < xs->ndim; d++) /* the spec: (in - 1) * stride + kernel - pads */
        made[d] = d < 2 ? xs->dim[d]
                        : (xs->dim[d] - 1) * p->win.stride[d - 2] + p->win.kernel[d - 2] - p->win.pad[d - 2] -
                              p->win.pad[sp + d - 2];
    memset(out[0].d, 0, sizeof(double) * (size_t)ref_numel(ys));
    for (int64_t k = 0; k < ref_numel(xs); k++) {
        int64_t v = (int64_t)in[1].d[k];
        for (int d = xs->ndim - 1; d >= 0; d--)
            idx[d] = v % made[d], v /= made[d];
        out[0].d[ref_ravel(ys, idx)] = in[0].d[k];
    }
}

/* One bilinear sample of RoiAlign (Caffe2's rule): 0 past a pixel beyond the image, else clamped to it. */
static double ref_roi_at(const double *img, int64_t h, int64_t w, double y, double x, double *corner_max)
{
    *corner_max = 0;
    if (y < -1 || y > (double)h || x < -1 || x > (double)w)
        return 0;
    y = fmin(fmax(y, 0), (double)(h - 1)), x = fmin(fmax(x, 0), (double)(w - 1));
    int64_t y0 = (int64_t)floor(y), x0 = (int64_t)floor(x), y1 = y0 + 1 < h ? y0 + 1 : y0,
            x1 = x0 + 1 < w ? x0 + 1 : x0;
    double ly = y - (double)y0, lx = x - (double)x0;
    double c[4] = {(1 - ly) * (1 - lx) * img[y0 * w + x0], (1 - ly) * lx * img[y0 * w + x1],
                   ly * (1 - lx) * img[y1 * w + x0], ly * lx * img[y1 * w + x1]};
    *corner_max = fmax(fmax(c[0], c[1]), fmax(c[2], c[3]));
    return c[0] + c[1] + c[2] + c[3];
}

void ref_roialign(const struct mps_roialign_params *p, const struct ref_tensor *in, struct ref_tensor *out)
{
    int64_t C = in[0].shape.dim[1], H = in[0].shape.dim[2], W = in[0].shape.dim[3], R = in[1].shape.dim[0];
    double off = p->half_pixel ? 0.5 : 0;
    for (int64_t r = 0; r < R; r++) {
        const double *roi = in[1].d + r * 4;
        double x1 = roi[0] * p->scale - off, y1 = roi[1] * p->scale - off;
        double rw = roi[2] * p->scale - off - x1, rh = roi[3] * p->scale - off - y1;
        if (!p->half_pixel)
            rw = fmax(rw, 1), rh = fmax(rh, 1);
        double bh = rh / (double)p->out_h, bw = rw / (double)p->out_w;
        int64_t gh = p->sampling ? p->sampling : (int64_t)ceil(bh), gw = p->sampling ? p->sampling : (int64_t)ceil(bw);
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < p->out_h * p->out_w; i++) {
                const double *img = in[0].d + ((int64_t)in[2].d[r] * C + c) * H * W;
                double sum = 0, best = -INFINITY, m;
                for (int64_t s = 0; s < gh * gw; s++) {
                    double y = y1 + (double)(i / p->out_w) * bh + ((double)(s / gw) + 0.5) * bh / (double)gh,
                           x = x1 + (double)(i % p->out_w) * bw + ((double)(s % gw) + 0.5) * bw / (double)gw;
                    sum += ref_roi_at(img, H, W, y, x, &m);
                    best = fmax(best, m);
                }
                out[0].d[(r * C + c) * p->out_h * p->out_w + i] =
                    p->max ? (gh * gw > 0 ? best : 0) : sum / (double)(gh * gw > 1 ? gh * gw : 1);
            }
    }
}
