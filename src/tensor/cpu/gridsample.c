/* gridsample.c: GridSample on the CPU (op.h has its rule), one output pixel
   at a time over the planes of each image: the grid point mapped into the
   image, then its 1, 2 x 2 or 4 x 4 taps read with the padding rule and
   weighted in double. */
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
    if (q->p->padding == MPS_PAD_CONSTANT && (r < 0 || r >= q->h || c < 0 || c >= q->w))
        return 0;
    if (q->p->padding == MPS_PAD_REFLECT) {
        c = trunc(mps_gs_reflect(c, q->lo[0], q->hi[0]));
        r = trunc(mps_gs_reflect(r, q->lo[1], q->hi[1]));
    }
    /* border, and the reflected index kept inside whatever rounding did */
    int64_t ri = r < 0          ? 0
                 : r > q->h - 1 ? q->h - 1
                                : (int64_t)r,
            ci = c < 0          ? 0
                 : c > q->w - 1 ? q->w - 1
                                : (int64_t)c;
    return img[ri * q->w + ci];
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
