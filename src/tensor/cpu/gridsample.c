/* gridsample.c: GridSample and RoiAlign on the CPU (op.h has their rules).
   GridSample, one output pixel at a time over the planes of each image: the
   grid point mapped into the image, then its 1, 2 x 2 or 4 x 4 taps read
   with the padding rule and weighted in double. RoiAlign, one bin at a time:
   its samples interpolated bilinearly as Caffe2 and onnxruntime do. */
#include <math.h>

#include "kernels.h"

struct mps_gs_job {
    const struct mps_gridsample_params *p;
    const float *x, *grid;
    float *y;
    int64_t c, h, w, ho, wo;
    double lo[2], hi[2]; /* the extent a coordinate reflects at: x, then y */
};

/* x reflected at lo and hi until it lies between them. */
static double mps_gs_reflect(double x, double lo, double hi)
{
    double range = hi - lo;
    if (!(range > 0))
        return lo;
    if (x < lo || x > hi) {
        double d = x < lo ? lo - x : x - hi, k = floor(d / range), r = d - k * range;
        bool even = fmod(k, 2) == 0;
        x = (x < lo) == even ? lo + r : hi - r;
    }
    return x;
}

/* The image's pixel at row r, column c by the padding rule. */
static double mps_gs_pixel(const struct mps_gs_job *q, const float *img, double r, double c)
{
    double h = (double)q->h, w = (double)q->w;
    if (q->p->padding == MPS_PAD_CONSTANT && (r < 0 || r >= h || c < 0 || c >= w))
        return 0;
    if (q->p->padding == MPS_PAD_REFLECT) {
        c = trunc(mps_gs_reflect(c, q->lo[0], q->hi[0]));
        r = trunc(mps_gs_reflect(r, q->lo[1], q->hi[1]));
    }
    /* border, and the reflected index kept inside whatever rounding did */
    r = r < 0 ? 0 : r > h - 1 ? h - 1 : r;
    c = c < 0 ? 0 : c > w - 1 ? w - 1 : c;
    return img[(int64_t)r * q->w + (int64_t)c];
}

/* Keys' cubic weights of the four taps around a point t past the second (A = -0.75). */
static void mps_gs_cubic(double t, double w[4])
{
    const double a = -0.75;
    double s = 1 + t, u = 1 - t, v = 2 - t;
    w[0] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    w[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
    w[3] = ((a * v - 5 * a) * v + 8 * a) * v - 4 * a;
}

/* The grid coordinate g (-1 .. 1) of an axis of len pixels, in pixels; a
   NaN or a far one pinned far outside, where every padding rule holds. */
static double mps_gs_coord(const struct mps_gs_job *q, float g, int64_t len)
{
    double x = q->p->align_corners ? ((double)g + 1) / 2 * (double)(len - 1) : (((double)g + 1) * (double)len - 1) / 2;
    return !(x > -1e9) ? -1e9 : x > 1e9 ? 1e9 : x;
}

/* Output rows [begin, end) of every plane: row index over (n, oy). */
static void mps_gs_rows(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_gs_job *q = ctx;
    const struct mps_gridsample_params *p = q->p;
    for (int64_t row = begin; row < end; row++) {
        int64_t n = row / q->ho, oy = row % q->ho;
        for (int64_t ox = 0; ox < q->wo; ox++) {
            const float *g = q->grid + ((n * q->ho + oy) * q->wo + ox) * 2;
            double x = mps_gs_coord(q, g[0], q->w), y = mps_gs_coord(q, g[1], q->h);
            if (p->mode == MPS_RESIZE_NEAREST)
                x = nearbyint(x), y = nearbyint(y);
            bool out = x < q->lo[0] || x > q->hi[0] || y < q->lo[1] || y > q->hi[1];
            if (out && p->padding == MPS_PAD_EDGE) /* the pixels' centers, whatever align_corners says */
                x = fmin(fmax(x, 0), (double)(q->w - 1)), y = fmin(fmax(y, 0), (double)(q->h - 1));
            else if (out && p->padding == MPS_PAD_REFLECT)
                x = mps_gs_reflect(x, q->lo[0], q->hi[0]), y = mps_gs_reflect(y, q->lo[1], q->hi[1]);
            double x0 = floor(x), y0 = floor(y), wx[4] = {1}, wy[4] = {1};
            int taps = 1, first = 0;
            if (p->mode == MPS_RESIZE_NEAREST) {
                x0 = x, y0 = y;
            } else if (p->mode == MPS_RESIZE_LINEAR) {
                taps = 2;
                wx[0] = x0 + 1 - x, wx[1] = x - x0, wy[0] = y0 + 1 - y, wy[1] = y - y0;
            } else {
                taps = 4, first = -1;
                mps_gs_cubic(x - x0, wx);
                mps_gs_cubic(y - y0, wy);
            }
            for (int64_t c = 0; c < q->c; c++) {
                const float *img = q->x + (n * q->c + c) * q->h * q->w;
                double acc = 0;
                for (int i = 0; i < taps; i++) {
                    double across = 0;
                    for (int j = 0; j < taps; j++)
                        across += wx[j] * mps_gs_pixel(q, img, y0 + first + i, x0 + first + j);
                    acc += wy[i] * across;
                }
                q->y[((n * q->c + c) * q->ho + oy) * q->wo + ox] = (float)acc;
            }
        }
    }
}

enum mps_status mps_cpu_gridsample(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape *xs = &a->in[0].shape, *ys = &a->out[0].shape;
    const struct mps_gridsample_params *p = &a->node->p.gridsample;
    struct mps_gs_job q = {.p = p,
                           .x = a->in[0].data,
                           .grid = a->in[1].data,
                           .y = a->out[0].data,
                           .c = xs->dim[1],
                           .h = xs->dim[2],
                           .w = xs->dim[3],
                           .ho = ys->dim[2],
                           .wo = ys->dim[3]};
    double edge = p->align_corners ? 0 : 0.5;
    q.lo[0] = q.lo[1] = -edge;
    q.hi[0] = (double)q.w - 1 + edge, q.hi[1] = (double)q.h - 1 + edge;
    (void)err;
    if (q.h == 0 || q.w == 0) { /* nothing to read: every output is padding */
        for (int64_t i = 0; i < mps_shape_numel(ys); i++)
            q.y[i] = 0;
        return MPS_OK;
    }
    mps_pool_for(a->pool, ys->dim[0] * q.ho, q.wo * q.c * 16, mps_gs_rows, &q);
    return MPS_OK;
}

/* The bilinear sample of plane img (h x w) at (y, x), by onnxruntime's rule:
   0 beyond a pixel outside the image; clamped to its edge within that; each
   corner's weighted value into v (for max mode). */
static double mps_roi_sample(const float *img, int64_t h, int64_t w, double y, double x, double v[4])
{
    v[0] = v[1] = v[2] = v[3] = 0;
    if (!(y >= -1.0 && y <= (double)h && x >= -1.0 && x <= (double)w))
        return 0;
    y = y <= 0 ? 0 : y, x = x <= 0 ? 0 : x;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1 = y0 + 1, x1 = x0 + 1;
    if (y0 >= h - 1)
        y1 = y0 = h - 1, y = (double)y0;
    if (x0 >= w - 1)
        x1 = x0 = w - 1, x = (double)x0;
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    v[0] = hy * hx * img[y0 * w + x0], v[1] = hy * lx * img[y0 * w + x1];
    v[2] = ly * hx * img[y1 * w + x0], v[3] = ly * lx * img[y1 * w + x1];
    return v[0] + v[1] + v[2] + v[3];
}

/* Samples along a bin's side: sampling, else ceil(the bin's size), within [0, 4096] (NaN: 0). */
static int64_t mps_roi_grid(int64_t sampling, double bin)
{
    double g = sampling > 0 ? (double)sampling : ceil(bin);
    return g >= 0 ? (g < 4096 ? (int64_t)g : 4096) : 0;
}

enum mps_status mps_cpu_roialign(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_roialign_params *p = &a->node->p.roialign;
    const struct mps_tensor *x = &a->in[0], *bi = &a->in[2];
    const float *rois = a->in[1].data;
    float *y = a->out[0].data;
    int64_t n = x->shape.dim[0], c = x->shape.dim[1], h = x->shape.dim[2], w = x->shape.dim[3],
            regions = a->in[1].shape.dim[0], oh = p->out_h, ow = p->out_w;
    double off = p->half_pixel ? 0.5 : 0;
    for (int64_t r = 0; r < regions; r++) {
        int64_t b = mps_elem_get_int(bi->data, bi->dtype, r);
        if (b < 0 || b >= n)
            return mps_fail(err, MPS_ERR_INPUT, "node '%s' (RoiAlign): batch index %lld is not one of the %lld images",
                            a->node->name, (long long)b, (long long)n);
        const float *roi = rois + r * 4;
        double x1 = roi[0] * (double)p->scale - off, y1 = roi[1] * (double)p->scale - off,
               rw = roi[2] * (double)p->scale - off - x1, rh = roi[3] * (double)p->scale - off - y1;
        if (!p->half_pixel) /* malformed regions as 1 x 1 */
            rw = rw > 1 ? rw : 1, rh = rh > 1 ? rh : 1;
        double bh = rh / (double)oh, bw = rw / (double)ow;
        int64_t gh = mps_roi_grid(p->sampling, bh), gw = mps_roi_grid(p->sampling, bw),
                count = gh * gw > 1 ? gh * gw : 1;
        for (int64_t ch = 0; ch < c; ch++) {
            const float *img = (const float *)x->data + (b * c + ch) * h * w;
            for (int64_t ph = 0; ph < oh; ph++)
                for (int64_t pw = 0; pw < ow; pw++) {
                    double acc = 0, v[4];
                    bool first = true;
                    for (int64_t iy = 0; iy < gh; iy++)
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double sy = y1 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh,
                                   sx = x1 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                            double s = mps_roi_sample(img, h, w, sy, sx, v);
                            if (p->max) { /* onnxruntime's: the largest weighted corner */
                                double m = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
                                acc = first || m > acc ? m : acc;
                                first = false;
                            } else {
                                acc += s;
                            }
                        }
                    y[((r * c + ch) * oh + ph) * ow + pw] = (float)(p->max ? acc : acc / (double)count);
                }
        }
    }
    return MPS_OK;
}
