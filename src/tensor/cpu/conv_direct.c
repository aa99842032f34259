/* conv_direct.c: a 2-D convolution with constant weights as Y = W B, B read in place by the family's conv tile
   (conv.h, ukernels.h).

   The copy: for strides sh x sw, each input channel of an item becomes phase planes of ph x pw floats, phase (a, b)
   holding the padded input's rows a, a + sh, ... and columns b, b + sw, ...: the phases some tap reads (uh x uw of
   the sh x sw; a 1x1 stride-2 layer reads one of four). Output (oh, ow) reads, for tap (th, tw), phase ((th dh) %
   sh, (tw dw) % sw) at row oh + (th dh) / sh, column ow + (tw dw) / sw. Over "virtual" positions v = oh pw + ow, the
   inputs of one channel and tap kk are then one run, x + off[kk] + v: a tile of nr consecutive v is a block of B
   read in place. Columns ow >= out_w are computed and dropped (pw - out_w of every pw; the path is taken only where
   that is small). A pointwise layer reads the input itself (v is the output position).

   Where the family has a transposed tile (convt: the output channels in the vectors, a run of positions broadcast)
   and it wastes fewer lanes than the conv tile, a tile is instead up to mt positions of one output row (or of the
   plane, pointwise), W packed as the GEMM's B, nothing dropped: on 7x7 planes the conv tile computes 64 columns for
   49 outputs. */
#include <string.h>

#include "conv.h"
#include "pgemm.h"

enum {
    MPS_DIRECT_NR = 32,                  /* the widest: the slack after a copy, the in-place rule */
    MPS_DIRECT_COPY_BYTES = 8 << 20,     /* the copies of one job's items share this (or hold one item) */
    MPS_DIRECT_BAND_BYTES = 256 << 10,   /* B's columns a unit reads, so that they stay in L2 over W's panels */
    MPS_DIRECT_W_BYTES = 512 << 10,      /* W's rows a unit reads again for each few tiles: they stay in L2 */
    MPS_DIRECT_L1_BYTES = 32 << 10,      /* tiles' columns of B that stay in L1 over W's panels */
    MPS_DIRECT_SUB = 16,                 /* and at most so many tiles */
    MPS_DIRECT_PREFETCH_BYTES = 1 << 20, /* an item's input from which B's rows are asked for ahead */
    MPS_DIRECT_WIDE_PLANE = 512,         /* and a quarter of it on planes of so many positions */
    MPS_DIRECT_POOL_BYTES = 256 << 10,   /* a fused MaxPool's band of the Conv's rows, every channel: in L2 */
    MPS_DIRECT_BAND_HEAD = 8,            /* int64s (a cache line) before each thread's band: what it made last */
    MPS_DIRECT_BRIEF_ROW = 32,           /* a copy's rows up to so many floats are copied inline */
};

struct mps_direct {
    int64_t sh, sw, ph, pw; /* strides, a phase plane's rows and pitch */
    int64_t uh, uw;         /* phases some tap reads along each axis (a channel's copy holds uh x uw planes) */
    int64_t plane;          /* ph * pw */
    int64_t item;           /* floats of one item's copy: channels x phases x planes, slack; a multiple of 16 */
    int64_t cg, mg, k;      /* a group's input and output channels; k = cg * taps */
    int64_t tiles;          /* tiles: of nr virtual positions, or (transposed) of mt positions of a row */
    bool in_place;          /* pointwise: B is the input itself (ph = out_h, pw = out_w) */
    bool transposed;        /* the family's convt runs it (mt positions x nr channels a tile) */
    bool pack;              /* transposed in place, each tile's B packed first (mps_direct_packed_units) */
    int64_t wstep;          /* W's rows (output channels) a panel: mr, or nr transposed */
};

/* Whether some tap t < k (dilation d) reads phase a of stride s. */
static bool mps_direct_phase_used(int64_t k, int64_t d, int64_t s, int64_t a)
{
    for (int64_t t = 0; t < k; t++)
        if (t * d % s == a)
            return true;
    return false;
}

/* The phases below a that taps read: phase a's place among the copied ones,
   or (a = s) their count. */
static int64_t mps_direct_phases(int64_t k, int64_t d, int64_t s, int64_t a)
{
    int64_t n = 0;
    for (int64_t p = 0; p < a; p++)
        n += mps_direct_phase_used(k, d, s, p);
    return n;
}

/* Lanes a tile of width step fills over n outputs taken step at a time, per mille. */
static int64_t mps_direct_fill(int64_t n, int64_t step)
{
    return 1000 * n / ((n + step - 1) / step * step);
}

/* An input read in place that no L2 holds (an item's, over 1 MB; or over 256 KB on planes of 512 positions or
   more, where the transposed tile fills 1-2% more lanes at most): the conv tile asks for B's rows ahead for W's
   first panel (conv_pf; batch 8, one thread: 32 -> 16 on 112x112 avx2 2.60 -> 1.82 ms; 128 -> 16 on 55x55
   avx512 3.1 -> 1.0-1.4; later panels and 14x14 planes lost), and not the transposed tile: it read a third of a
   line of each of 96-256 planes at L3's latency (that layer, avx2: 3.3-3.7 -> 1.27-1.29 ms; two threads, per
   node: 64 -> 16 on 55x55 0.52-0.71, 192 -> 32 on 28x28 0.89-0.91, LR-ASPP's 56x56 projections 0.66-0.87). */
static bool mps_direct_streams(const struct mps_conv_geom *q, bool in_place)
{
    int64_t bytes = q->c / q->g * q->in_plane * (int64_t)sizeof(float);
    return in_place && (bytes >= MPS_DIRECT_PREFETCH_BYTES ||
                        (bytes >= MPS_DIRECT_PREFETCH_BYTES / 4 && q->out_plane >= MPS_DIRECT_WIDE_PLANE));
}

/* The geometry for the family uk (NULL: the widest tile any family has, for
   the checks that do not depend on it). */
static struct mps_direct mps_direct_of(const struct mps_conv_geom *q, const struct mps_ukernels *uk)
{
    const struct mps_window3 *w = &q->w;
    struct mps_direct d = {
        .sh = w->s[1], .sw = w->s[2], .cg = q->c / q->g, .mg = q->m / q->g, .in_place = mps_conv_is_pointwise(q)};
    int64_t nr = uk ? uk->nr : MPS_DIRECT_NR, mr = uk ? uk->mr : 8;
    d.k = d.cg * q->taps;
    d.ph = w->out[1] + (w->k[1] - 1) * w->d[1] / d.sh;
    d.pw = w->out[2] + (w->k[2] - 1) * w->d[2] / d.sw;
    d.plane = d.ph * d.pw;
    d.uh = mps_direct_phases(w->k[1], w->d[1], d.sh, d.sh);
    d.uw = mps_direct_phases(w->k[2], w->d[2], d.sw, d.sw);
    /* the last tile's rows run past the last plane by at most a row's column shift and a tile */
    int64_t slack = (w->k[2] - 1) * w->d[2] / d.sw + MPS_DIRECT_NR;
    d.item = d.in_place ? 0 : (d.cg * d.uh * d.uw * d.plane + slack + 15) / 16 * 16;
    int64_t virt = d.in_place ? q->out_plane : w->out[1] * d.pw; /* the conv tile's columns */
    d.tiles = (virt + nr - 1) / nr;
    d.wstep = mr;
    if (uk && uk->convt) {
        /* the lanes each tile keeps busy: the conv tile's kept columns and W's rows in its
           panels, against the transposed tile's positions (a run in tiles as even as they
           go, each counted as the largest) and channels, whose store (a transpose) costs
           about 8 more steps of k: measured on single layers here,
           7x7 512 channels 0.66 -> 0.49 ms, 14x14 32 -> 64 channels (k 288) 0.023 ->
           0.020, but a pointwise 16 -> 64 (k 16) 0.035 -> 0.045; with the transpose in
           registers (avx512) the rule still picks the faster of the two on 14x14 and 7x7
           layers of k 16 to 72, 32 -> 128 pointwise on 14x14 a tie */
        int64_t run = d.in_place ? q->out_plane : w->out[2], per = (run + uk->mt - 1) / uk->mt;
        int64_t conv = 1000 * q->out_plane / (d.tiles * nr) * mps_direct_fill(d.mg, mr) / 1000;
        int64_t convt = mps_direct_fill(run, (run + per - 1) / per) * mps_direct_fill(d.mg, nr) / 1000 * d.k /
                        (d.k + 8);
        /* not where the conv tile asks for B's rows ahead (mps_direct_streams) */
        d.transposed = convt > conv && !(uk->conv_pf && mps_direct_streams(q, d.in_place));
    }
    /* a pointwise transposed tile of fewer positions than half a cache line (avx2's 6) reads k lines
       of the input for k * mt floats, again for every panel of W: packed once into k * mt floats that
       stay in L1, on planes of 64 positions or fewer (avx2, batch 8, one / two threads: 960 -> 320 on
       7x7 0.88 / 0.95, 320 -> 1280 0.83 / 0.85, 160 -> 960 0.84-0.94 / 0.80; on 13x13 and 14x14
       0.99-1.01, 576 -> 96 at two threads 1.09; avx512's 14 positions fill most of a line: 0.99-1.03).
       So is the conv tile's on planes up to 16x16 where k and W's rows are both 256 or more
       (squeezenet1_1's 512 -> 1000 on 13x13, avx2, one thread: 1.93 -> 1.66 ms, batch 8 16.5 ->
       14.7; avx512 even; with either fewer, even or dearer) */
    d.pack = (d.transposed && d.in_place && uk->mt * (int64_t)sizeof(float) < 32 && q->out_plane <= 64) ||
             (uk && !d.transposed && d.in_place && q->out_plane <= 256 && d.k >= 256 && d.mg >= 256);
    if (d.transposed) {
        d.tiles = d.in_place ? (q->out_plane + uk->mt - 1) / uk->mt : w->out[1] * ((w->out[2] + uk->mt - 1) / uk->mt);
        d.wstep = nr;
    }
    return d;
}

bool mps_direct_applies(const struct mps_conv_geom *q)
{
    const struct mps_window3 *w = &q->w;
    if (w->in[0] != 1 || w->out[0] != 1 || w->k[0] != 1 || w->pb[0] != 0) /* 2-D (and 1-D) layers */
        return false;
    struct mps_direct d = mps_direct_of(q, NULL);
    if (d.in_place) /* a tile at the plane's end is moved back inside it, so one must fit */
        return q->out_plane >= MPS_DIRECT_NR && d.cg * q->in_plane < INT32_MAX;
    /* offsets are int32; the dropped columns at most about a quarter */
    return d.item < INT32_MAX && w->out[1] * d.pw <= q->out_plane * 5 / 4 + MPS_DIRECT_NR;
}

/* Items (images x groups) whose copies one job holds. */
static int64_t mps_direct_chunk(const struct mps_conv_geom *q, const struct mps_direct *d)
{
    int64_t total = q->n * q->g, fit = d->item ? MPS_DIRECT_COPY_BYTES / (int64_t)sizeof(float) / d->item : total;
    fit = fit > 1 ? fit : 1;
    return total < fit ? total : fit;
}

/* A fused MaxPool's pool rows a band: as many as make the Conv's rows they
   read fit MPS_DIRECT_POOL_BYTES, at least one. */
static int64_t mps_direct_pool_rows(const struct mps_conv_geom *q, const struct mps_maxpool_geom *pg)
{
    int64_t fit = MPS_DIRECT_POOL_BYTES / (int64_t)sizeof(float) / (q->m * q->w.out[2]);
    return fit > pg->kh ? (fit - pg->kh) / pg->sh + 1 : 1;
}

/* The Conv's rows a thread's band holds for rows pool rows: those they read,
   and those the last tile runs on past them (from the end of a row of pitch
   pw, MPS_DIRECT_NR columns at most), which the next band then need not make. */
static int64_t mps_direct_band_cap(const struct mps_maxpool_geom *pg, int64_t rows, int64_t pw)
{
    return (rows - 1) * pg->sh + pg->kh + (MPS_DIRECT_NR + pw - 2) / pw;
}

/* Floats of a thread's band: its head, then every channel's band_cap rows. */
static int64_t mps_direct_band_floats(const struct mps_conv_geom *q, const struct mps_maxpool_geom *pg, int64_t rows,
                                      int64_t pw)
{
    return 2 * MPS_DIRECT_BAND_HEAD + (q->m * mps_direct_band_cap(pg, rows, pw) * q->w.out[2] + 15) / 16 * 16;
}

/* Floats of one thread's packed B (d->pack): a tile's k x mt (the conv tile's: k x nr), then its offsets (int32). */
static int64_t mps_direct_pack_floats(const struct mps_direct *d, const struct mps_ukernels *uk)
{
    return (d->k * ((d->transposed ? uk->mt : uk->nr) + 1) + 15) / 16 * 16;
}

size_t mps_direct_scratch(const struct mps_conv_geom *q, const struct mps_maxpool_geom *pool,
                          const struct mps_ukernels *uk, int threads)
{
    struct mps_direct d = mps_direct_of(q, uk);
    size_t copies = d.in_place ? 0 : sizeof(float) * (size_t)(mps_direct_chunk(q, &d) * d.item) + 64;
    if (!pool)
        return copies + (d.pack ? sizeof(float) * (size_t)(threads * mps_direct_pack_floats(&d, uk)) + 64 : 0);
    int64_t band = mps_direct_band_floats(q, pool, mps_direct_pool_rows(q, pool), d.pw);
    return (copies + 63) / 64 * 64 + sizeof(float) * (size_t)(threads * band) + 64;
}

/* A tile of nr virtual positions from v: the columns it keeps (a bit each)
   and where in the output plane they go, one after another. */
struct mps_direct_tile {
    int64_t v, at;
    uint64_t keep;
};

/* The tiles of a plane: each nr positions from t nr; in place, the last
   moved back to end with the plane, keeping only the columns not yet
   written. Transposed: mt positions of an output row (in place: of the
   plane) at a time, keep's low bits counting them. */
static void mps_direct_tiles(const struct mps_conv_geom *q, const struct mps_direct *d, const struct mps_ukernels *uk,
                             struct mps_direct_tile *tiles)
{
    int64_t ow_n = q->w.out[2], oh_n = q->w.out[1], nr = uk->nr, mt = uk->mt;
    for (int64_t t = 0; t < d->tiles; t++) {
        struct mps_direct_tile *tl = &tiles[t];
        if (d->transposed) {
            /* a run's tiles as even as they go (169 positions in 13 tiles of 13, not 12 of 14
               and one of 1, which took as long as 4) */
            int64_t per_row = (ow_n + mt - 1) / mt, oh = d->in_place ? 0 : t / per_row;
            int64_t j = d->in_place ? t : t % per_row, count = d->in_place ? d->tiles : per_row;
            int64_t run = d->in_place ? q->out_plane : ow_n, ow = run * j / count, n = run * (j + 1) / count - ow;
            *tl = (struct mps_direct_tile){
                .v = d->in_place ? ow : oh * d->pw + ow, .at = oh * ow_n + ow, .keep = (1ull << n) - 1};
            continue;
        }
        if (d->in_place) {
            int64_t v0 = t * nr, back = v0 + nr <= q->out_plane ? v0 : q->out_plane - nr;
            uint64_t all = nr == 64 ? ~0ull : (1ull << nr) - 1;
            *tl = (struct mps_direct_tile){.v = back, .at = v0, .keep = all & all << (v0 - back)};
            continue;
        }
        *tl = (struct mps_direct_tile){.v = t * nr, .at = -1};
        for (int j = 0; j < nr; j++) {
            int64_t v = t * nr + j, oh = v / d->pw, ow = v % d->pw;
            if (oh < oh_n && ow < ow_n) {
                tl->keep |= 1ull << j;
                tl->at = tl->at < 0 ? oh * ow_n + ow : tl->at;
            }
        }
        tl->at = tl->at < 0 ? 0 : tl->at;
    }
}

/* Where the offsets and the tiles lie in the compile-time data. */
static size_t mps_direct_offsets_at(const struct mps_conv_geom *q, const struct mps_direct *d,
                                    const struct mps_ukernels *uk)
{
    return mps_pgemm_packed_bytes(uk, d->mg, d->k, !d->transposed) * (size_t)q->g;
}
static size_t mps_direct_tiles_at(const struct mps_conv_geom *q, const struct mps_direct *d,
                                  const struct mps_ukernels *uk)
{
    return mps_direct_offsets_at(q, d, uk) + (sizeof(int32_t) * (size_t)d->k + 7) / 8 * 8;
}

size_t mps_direct_pack(const struct mps_conv_geom *q, const float *w, const struct mps_ukernels *uk, void *dst)
{
    struct mps_direct d = mps_direct_of(q, uk);
    size_t per = mps_pgemm_packed_bytes(uk, d.mg, d.k, !d.transposed);
    if (dst) {
        mps_direct_tiles(q, &d, uk, (struct mps_direct_tile *)((unsigned char *)dst + mps_direct_tiles_at(q, &d, uk)));
        for (int64_t gi = 0; gi < q->g; gi++) /* W as the GEMM's A (rows of mr), or transposed as its B */
            mps_pgemm_pack(uk, w + gi * d.mg * d.k, d.k, 1, d.mg, d.k, !d.transposed,
                           (float *)((unsigned char *)dst + per * (size_t)gi));
        int32_t *off = (int32_t *)((unsigned char *)dst + mps_direct_offsets_at(q, &d, uk));
        const struct mps_window3 *win = &q->w;
        for (int64_t kk = 0; kk < d.k; kk++) {
            int64_t c = kk / q->taps, th = kk % q->taps / win->k[2], tw = kk % win->k[2];
            int64_t rh = th * win->d[1], rw = tw * win->d[2];
            off[kk] = (int32_t)(d.in_place ? c * q->in_plane
                                           : (c * d.uh * d.uw +
                                              mps_direct_phases(win->k[1], win->d[1], d.sh, rh % d.sh) * d.uw +
                                              mps_direct_phases(win->k[2], win->d[2], d.sw, rw % d.sw)) *
                                                     d.plane +
                                                 rh / d.sh * d.pw + rw / d.sw);
        }
    }
    return mps_direct_tiles_at(q, &d, uk) + sizeof(struct mps_direct_tile) * (size_t)d.tiles;
}

struct mps_direct_job {
    const struct mps_conv_geom *q;
    const struct mps_direct *d;
    const struct mps_ukernels *uk;
    const float *x;         /* the input */
    float *copy;            /* the job's first item's copy (not in place) */
    float *y;               /* the output */
    const unsigned char *w; /* each group's packed W, per bytes apart */
    size_t per;
    const int32_t *off; /* [k] */
    const struct mps_direct_tile *tiles;
    const float *bias; /* [m], or NULL */
    const float *res;  /* laid out as y: added after the tile, then act (which the tile leaves out); or NULL */
    struct mps_tile_epi epi;
    const struct mps_fused_act *act;   /* what the tile's store does not apply, or NULL */
    int64_t first;                     /* the job's first item (image * groups + group) */
    int64_t copy_parts;                /* the copy's items a channel: parts of its phase planes' rows */
    int64_t bands, parts, m_panels;    /* a unit: an item's band of tiles and part of W's panels */
    int64_t mstep;                     /* panels a part, or 0: parts a panel apart in size */
    int64_t y_image;                   /* floats from an image's output to the next's */
    int64_t sub;                       /* tiles whose B sits in L1 while W's panels pass (0: panels outside) */
    bool prefetch;                     /* W's first panel over each tile by the family's conv_pf */
    float *packed;                     /* d->pack: each thread's packed B, pack_floats apart */
    int64_t pack_floats;
    bool copy_own;                     /* each unit is a whole item and copies its own input */
    /* a fused MaxPool (mps_cpu_args.pool_out): units are bands of prows of its rows */
    const struct mps_maxpool_geom *pg;
    float *pooled;       /* its output */
    float *band_rows;          /* each thread's band of the Conv's rows, band_floats apart */
    int64_t prows, band_floats;
    bool pooled_tile;          /* the family's pconv makes the pool's outputs: no band */
    struct mps_pool *pool;
};

/* The copies of items' channels (item * channels + channel), phase plane by
   phase plane: [begin, end) counts copy_parts a channel, each a part of the
   rows of every phase plane. */
/* n floats from s to d, four at a time inline (a copy's brief rows). */
static void mps_direct_copy_brief(float *d, const float *s, int64_t n)
{
    int64_t j = 0;
    for (; j + 4 <= n; j += 4)
        memcpy(d + j, s + j, 4 * sizeof(float));
    for (; j < n; j++)
        d[j] = s[j];
}

static void mps_direct_copy(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_direct_job *jb = ctx;
    const struct mps_conv_geom *q = jb->q;
    const struct mps_direct *d = jb->d;
    int64_t in_h = q->w.in[1], in_w = q->w.in[2], pt = q->w.pb[1], pl = q->w.pb[2];
    /* rows of a few vectors (stride 1): each phase plane's part zeroed at once, then the input's
       columns copied inline. Three libc calls a row, two for a float of padding each, had the
       small CNNs' second layers (14x14) spend more on their copies than on their pools: mnist_cnn
       0.94 / 0.95 of before at batch 8 / 1, fashion_cnn 0.98 / 0.95 */
    bool brief = d->sw == 1 && d->pw <= MPS_DIRECT_BRIEF_ROW;
    for (int64_t rp = begin; rp < end; rp++) {
        int64_t r = rp / jb->copy_parts, part = rp % jb->copy_parts;
        int64_t row0 = d->ph * part / jb->copy_parts, row1 = d->ph * (part + 1) / jb->copy_parts;
        int64_t i = r / d->cg, c = r % d->cg, it = jb->first + i;
        const float *src = jb->x + (it / q->g * q->c + it % q->g * d->cg + c) * q->in_plane;
        float *dst = jb->copy + i * d->item + c * d->uh * d->uw * d->plane;
        for (int64_t a = 0; a < d->sh; a++)
            for (int64_t b = 0; b < d->sw; b++) {
                /* columns [lo, hi) of a phase row lie inside the input: iw = j sw + b - pl */
                int64_t lo = pl - b <= 0 ? 0 : (pl - b + d->sw - 1) / d->sw;
                int64_t hi = in_w - 1 + pl - b < 0 ? 0 : (in_w - 1 + pl - b) / d->sw + 1;
                hi = hi < d->pw ? hi : d->pw;
                lo = lo < hi ? lo : hi;
                if (!mps_direct_phase_used(q->w.k[1], q->w.d[1], d->sh, a) ||
                    !mps_direct_phase_used(q->w.k[2], q->w.d[2], d->sw, b))
                    continue; /* read by no tap: not copied */
                dst += row0 * d->pw;
                if (brief)
                    memset(dst, 0, sizeof(float) * (size_t)((row1 - row0) * d->pw));
                for (int64_t row = row0; row < row1; row++, dst += d->pw) {
                    int64_t ih = row * d->sh + a - pt;
                    if (ih < 0 || ih >= in_h) {
                        if (!brief)
                            memset(dst, 0, sizeof(float) * (size_t)d->pw);
                        continue;
                    }
                    const float *sr = src + ih * in_w + b - pl;
                    if (brief) {
                        mps_direct_copy_brief(dst + lo, sr + lo, hi - lo);
                        continue;
                    }
                    memset(dst, 0, sizeof(float) * (size_t)lo);
                    if (d->sw == 1)
                        memcpy(dst + lo, sr + lo, sizeof(float) * (size_t)(hi - lo));
                    else if (d->sw == 2) /* a constant stride: vectorized (the stems' copies were scalar) */
                        for (int64_t j = lo; j < hi; j++)
                            dst[j] = sr[2 * j];
                    else
                        for (int64_t j = lo; j < hi; j++)
                            dst[j] = sr[j * d->sw];
                    memset(dst + hi, 0, sizeof(float) * (size_t)(d->pw - hi));
                }
                dst += (d->ph - row1) * d->pw;
            }
        if (c == d->cg - 1 && part == jb->copy_parts - 1) /* read by the last tiles' dropped columns */
            memset(dst, 0, sizeof(float) * (size_t)(jb->copy + (i + 1) * d->item - dst));
    }
}

/* The copies of count items as one job: a channel an item, or where the
   channels are few (a stem's 3 for 2 threads: 2 and 1), parts of their
   rows, so that every thread has about as much. */
static void mps_direct_copy_job(struct mps_pool *pool, struct mps_direct_job *jb, int64_t count, int64_t threads)
{
    const struct mps_direct *d = jb->d;
    int64_t planes = count * d->cg;
    jb->copy_parts = planes < 4 * threads ? (4 * threads + planes - 1) / planes : 1;
    jb->copy_parts = jb->copy_parts < d->ph ? jb->copy_parts : d->ph;
    mps_pool_for(pool, planes * jb->copy_parts, MPS_POOL_COPY_COST * d->uh * d->uw * d->plane / jb->copy_parts,
                 mps_direct_copy, jb);
    jb->copy_parts = 1; /* a unit that copies its own item later copies whole channels */
}

/* Tile tl of an item of group gi (input x, output y, planes plane floats
   apart) against W's panel of rows p. */
static inline void mps_direct_run(const struct mps_direct_job *jb, const float *x, float *y, int64_t plane, int64_t gi,
                                  const struct mps_direct_tile *tl, int64_t p, int rows, bool pf)
{
    const struct mps_direct *d = jb->d;
    const float *w = (const float *)(jb->w + jb->per * (size_t)gi) + p * d->k; /* W's panel of rows p .. */
    struct mps_tile_epi e = jb->epi;
    e.bias = jb->bias ? jb->bias + gi * d->mg + p : NULL;
    float *yt = y + p * plane + tl->at;
    if (jb->res && !jb->act) /* the family's store adds it (conv_res), before the activation */
        e.res = jb->res + (yt - jb->y), e.ldr = plane;
    if (d->transposed) /* (the count here only: built for any x86-64, a call to libgcc's popcount) */
        jb->uk->convt(d->k, w, x + tl->v, jb->off, yt, plane, __builtin_popcountll(tl->keep), rows, &e);
    else
        (pf ? jb->uk->conv_pf : jb->uk->conv)(d->k, w, x + tl->v, jb->off, yt, plane, rows, tl->keep, &e);
}

static inline void mps_direct_run_tile(const struct mps_direct_job *jb, const float *x, float *y, int64_t gi, int64_t t,
                                       int64_t p, int rows, bool first)
{
    mps_direct_run(jb, x, y, jb->q->out_plane, gi, &jb->tiles[t], p, rows, first && jb->prefetch);
}

/* Tile t cut to the Conv's rows [r0, r1): the columns it keeps there, and
   where they go in a band of those rows. */
static struct mps_direct_tile mps_direct_band_tile(const struct mps_direct_job *jb, int64_t t, int64_t r0, int64_t r1)
{
    const struct mps_direct *d = jb->d;
    struct mps_direct_tile tl = jb->tiles[t];
    int64_t ow_n = jb->q->w.out[2];
    if (!d->transposed) { /* a tile's columns run across rows: keep those of virtual positions in the band */
        int64_t lo = r0 * d->pw - tl.v, hi = r1 * d->pw - tl.v, nr = jb->uk->nr;
        lo = lo > 0 ? lo : 0;
        hi = hi < nr ? hi : nr;
        uint64_t below = lo >= 64 ? ~0ull : (1ull << lo) - 1, upto = hi >= 64 ? ~0ull : hi <= 0 ? 0 : (1ull << hi) - 1;
        if (tl.keep & below) /* the columns cut off before the band's first (rare: libgcc's popcount, a call) */
            tl.at += __builtin_popcountll(tl.keep & below);
        tl.keep &= upto & ~below;
    }
    tl.at -= r0 * ow_n;
    return tl;
}

/* What the tiles' stores left out (a residual, an activation they have not),
   for the outputs of tiles [t0, t1) and channels [m0, m1): once a channel
   over one run of its plane (a tile's channel at a time was 32 calls of 7
   floats a transposed tile on 14x14). The run is the band's tiles that keep
   a column: the plane's last conv tile may keep none. */
static void mps_direct_leftover(const struct mps_direct_job *jb, float *y, int64_t t0, int64_t t1, int64_t m0,
                                int64_t m1)
{
    while (t0 < t1 && !jb->tiles[t0].keep)
        t0++;
    while (t1 > t0 && !jb->tiles[t1 - 1].keep)
        t1--;
    if (t0 == t1)
        return;
    int64_t at = jb->tiles[t0].at, n = jb->tiles[t1 - 1].at + __builtin_popcountll(jb->tiles[t1 - 1].keep) - at;
    for (int64_t m = m0; m < m1; m++) {
        float *ym = y + m * jb->q->out_plane + at;
        if (jb->res)
            mps_cpu_add_act(jb->act, ym, jb->res + (ym - jb->y), n);
        else
            mps_cpu_act_inplace(jb->act, ym, n);
    }
}

/* The first of part p's panels: mstep a part, or (mstep 0) parts a panel apart in size. */
static int64_t mps_direct_panel(int64_t m_panels, int64_t parts, int64_t mstep, int64_t p)
{
    int64_t at = mstep ? p * mstep : m_panels * p / parts;
    return at < m_panels ? at : m_panels;
}

/* W's rows [*m0, *m1) of part p. */
static void mps_direct_part(const struct mps_direct_job *jb, int64_t p, int64_t *m0, int64_t *m1)
{
    int64_t step = jb->d->wstep, end = mps_direct_panel(jb->m_panels, jb->parts, jb->mstep, p + 1) * step;
    *m0 = mps_direct_panel(jb->m_panels, jb->parts, jb->mstep, p) * step;
    *m1 = end < jb->d->mg ? end : jb->d->mg;
}

/* The most work (tiles x panels) one thread's share of count items' units has. */
static int64_t mps_direct_busiest(int64_t count, int64_t tiles, int64_t bands, int64_t m_panels, int64_t parts,
                                  int64_t mstep, int64_t threads)
{
    int64_t n = count * bands * parts, most = 0;
    for (int64_t t = 0; t < threads; t++) {
        int64_t work = 0;
        for (int64_t u = n * t / threads; u < n * (t + 1) / threads; u++) {
            int64_t b = u / parts % bands, p = u % parts;
            work += (tiles * (b + 1) / bands - tiles * b / bands) *
                    (mps_direct_panel(m_panels, parts, mstep, p + 1) - mps_direct_panel(m_panels, parts, mstep, p));
        }
        most = work > most ? work : most;
    }
    return most;
}

/* The tiles [t0, t1) of an in-place item x against W's panels from m0 to m1, each tile's k x mt inputs (the
   conv tile's k x nr) first packed into the thread's buffer (d->pack), read from L1 for every panel. */
static void mps_direct_packed_units(const struct mps_direct_job *jb, const float *x, float *y, int64_t gi, int64_t t0,
                                    int64_t t1, int64_t m0, int64_t m1)
{
    const struct mps_direct *d = jb->d;
    int64_t mt = d->transposed ? jb->uk->mt : jb->uk->nr, plane = jb->q->out_plane;
    float *b = jb->packed + mps_pool_self(jb->pool) * jb->pack_floats;
    int32_t *off = (int32_t *)(b + d->k * mt);
    for (int64_t kk = 0; kk < d->k; kk++)
        off[kk] = (int32_t)(kk * mt);
    struct mps_direct_job packed = *jb; /* the tiles read b at off */
    packed.off = off;
    for (int64_t t = t0; t < t1; t++) {
        struct mps_direct_tile tl = jb->tiles[t];
        int64_t n = d->transposed ? __builtin_popcountll(tl.keep) : mt;
        for (int64_t kk = 0; kk < d->k; kk++)
            mps_cpu_copy_few(b + kk * mt, x + jb->off[kk] + tl.v, n);
        tl.v = 0;
        for (int64_t p = m0; p < m1; p += d->wstep)
            mps_direct_run(&packed, b, y, plane, gi, &tl, p, (int)(m1 - p < d->wstep ? m1 - p : d->wstep), false);
    }
}

static void mps_direct_units(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_direct_job *jb = ctx;
    const struct mps_conv_geom *q = jb->q;
    const struct mps_direct *d = jb->d;
    int64_t mr = d->wstep;
    for (int64_t u = begin; u < end; u++) {
        int64_t i = u / (jb->bands * jb->parts), band = u / jb->parts % jb->bands, part = u % jb->parts;
        int64_t it = jb->first + i, bi = it / q->g, gi = it % q->g;
        if (jb->copy_own)
            mps_direct_copy(ctx, i * d->cg, (i + 1) * d->cg);
        const float *x = d->in_place ? jb->x + (bi * q->c + gi * d->cg) * q->in_plane : jb->copy + i * d->item;
        float *y = jb->y + bi * jb->y_image + gi * d->mg * q->out_plane;
        /* bands' sizes a tile apart at most */
        int64_t t0 = d->tiles * band / jb->bands, t1 = d->tiles * (band + 1) / jb->bands;
        int64_t m0, m1;
        mps_direct_part(jb, part, &m0, &m1);
        /* a few tiles' columns of B over every panel of W while they sit in L1, where they fit (64 channels 3x3 on
           56x56, batch 8: 6.7 -> 6.0 ms), else each panel of W over the band's tiles. Several tiles, not one: every
           panel writes a run of each of its planes, not 128 bytes of each (a pointwise layer 16 -> 96 channels on
           112x112 wrote to 96 planes a tile) */
        if (jb->packed)
            mps_direct_packed_units(jb, x, y, gi, t0, t1, m0, m1);
        else if (jb->sub)
            for (int64_t tb = t0; tb < t1; tb += jb->sub)
                for (int64_t p = m0; p < m1; p += mr)
                    for (int64_t t = tb; t < t1 && t < tb + jb->sub; t++)
                        mps_direct_run_tile(jb, x, y, gi, t, p, (int)(m1 - p < mr ? m1 - p : mr), p == m0);
        else
            for (int64_t p = m0; p < m1; p += mr)
                for (int64_t t = t0; t < t1; t++)
                    mps_direct_run_tile(jb, x, y, gi, t, p, (int)(m1 - p < mr ? m1 - p : mr), p == m0);
        if (jb->act)
            mps_direct_leftover(jb, y, t0, t1, m0, m1);
    }
}

/* Thread t's record of what it made last (mps_direct_pool_units): the cache
   line before its band. */
static int64_t *mps_direct_band_head(const struct mps_direct_job *jb, int64_t t)
{
    return (int64_t *)(jb->band_rows + t * jb->band_floats) - MPS_DIRECT_BAND_HEAD;
}

/* The Conv's rows [*r0, *r1) that a fused MaxPool's pool rows from p0 read. */
static int64_t mps_direct_band_of(const struct mps_direct_job *jb, int64_t p0, int64_t *r0, int64_t *r1)
{
    const struct mps_maxpool_geom *pg = jb->pg;
    int64_t p1 = p0 + jb->prows < pg->out_h ? p0 + jb->prows : pg->out_h;
    *r0 = p0 * pg->sh - pg->pt, *r1 = (p1 - 1) * pg->sh - pg->pt + pg->kh;
    *r0 = *r0 > 0 ? *r0 : 0;
    *r1 = *r1 < jb->q->w.out[1] ? *r1 : jb->q->w.out[1];
    return p1;
}

/* Whether the family's pooled tile (ukernels.h's pconv) makes the fused
   MaxPool pg's outputs: 2x2 windows of stride 2, no pads, none past the
   Conv's rows, on the conv tile (its rows pitch pw apart, read from a copy). */
static bool mps_direct_pooled_tile(const struct mps_conv_geom *q, const struct mps_direct *d,
                                   const struct mps_maxpool_geom *pg, const struct mps_ukernels *uk)
{
    return uk->pconv && !d->transposed && !d->in_place && pg->kh == 2 && pg->kw == 2 && pg->sh == 2 && pg->sw == 2 &&
           pg->pt == 0 && pg->pl == 0 && pg->out_h == q->w.out[1] / 2 && pg->out_w == q->w.out[2] / 2;
}

/* A unit of a fused MaxPool on the pooled tile: pool rows [p0, p1) of item i, W's panels [m0, m1), a pool row a call
   (the CPU README), from the Conv's rows 2 R and 2 R + 1 at v = 2 R pw. The Conv's rows never leave the registers:
   storing them into the band and pooling them from there had taken a third of the small CNNs' first layers (1 -> 16
   and 1 -> 32 on 28x28, k = 9) at batch 8; one thread, Zen 4: 0.0376 -> 0.0303 and 0.0736 -> 0.0590 ms. */
static void mps_direct_pooled_unit(const struct mps_direct_job *jb, int64_t i, int64_t p0, int64_t p1, int64_t m0,
                                   int64_t m1)
{
    const struct mps_direct *d = jb->d;
    const struct mps_maxpool_geom *pg = jb->pg;
    int64_t out_plane = pg->out_h * pg->out_w, mr = d->wstep;
    const float *x = jb->copy + i * d->item;
    float *y = jb->pooled + (jb->first + i) * jb->q->m * out_plane;
    struct mps_tile_epi e = jb->epi;
    for (int64_t r = p0; r < p1; r++)
        for (int64_t p = m0; p < m1; p += mr) {
            e.bias = jb->bias ? jb->bias + p : NULL;
            jb->uk->pconv(d->k, (const float *)jb->w + p * d->k, x + 2 * r * d->pw, jb->off, d->pw,
                          y + p * out_plane + r * pg->out_w, out_plane, (int)(m1 - p < mr ? m1 - p : mr),
                          (int)pg->out_w, &e);
        }
}

/* Units of a fused MaxPool: an item's band of prows pool rows, from the Conv's rows they read, made into this
   thread's band (every channel, cap rows apart, the tile's store applying bias and activation) and pooled from there.
   A thread that made the band before it (its own share comes in order) moves up the rows it holds past that band's
   first pool row and goes on from the tile after its last: no row is made twice where windows overlap down the rows
   (3x3 stride 2: one row in nine at the stems' 9-row bands), nor a tile across two bands' rows (two in thirty). */
static void mps_direct_pool_units(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_direct_job *jb = ctx;
    const struct mps_conv_geom *q = jb->q;
    const struct mps_direct *d = jb->d;
    const struct mps_maxpool_geom *pg = jb->pg;
    int64_t mr = d->wstep, ow_n = q->w.out[2], oh_n = q->w.out[1], nr = jb->uk->nr;
    int64_t bands = (pg->out_h + jb->prows - 1) / jb->prows, per_row = (ow_n + jb->uk->mt - 1) / jb->uk->mt;
    int64_t cap = mps_direct_band_cap(pg, jb->prows, d->pw), plane = cap * ow_n;
    float *band = jb->band_rows + mps_pool_self(jb->pool) * jb->band_floats;
    int64_t *last = mps_direct_band_head(jb, mps_pool_self(jb->pool)); /* its last unit, first row, tiles made */
    for (int64_t u = begin; u < end; u++) {
        int64_t i = u / (bands * jb->parts), it = jb->first + i, p0 = u / jb->parts % bands * jb->prows;
        int64_t m0, m1, r0, r1;
        mps_direct_part(jb, u % jb->parts, &m0, &m1);
        int64_t p1 = mps_direct_band_of(jb, p0, &r0, &r1);
        if (jb->pooled_tile) {
            if (jb->copy_own)
                mps_direct_copy(ctx, i * d->cg, (i + 1) * d->cg);
            mps_direct_pooled_unit(jb, i, p0, p1, m0, m1);
            continue;
        }
        int64_t t0 = d->transposed ? r0 * per_row : r0 * d->pw / nr; /* the first tile that holds row r0 */
        int64_t t1 = d->transposed ? r1 * per_row : (r1 * d->pw + nr - 1) / nr;
        t1 = t1 < d->tiles ? t1 : d->tiles;
        if (last[0] == u - 1 && jb->parts == 1 && p0 > 0 && last[2] >= t0) {
            /* rows [r0, held) hold some of what was made: the last partly */
            int64_t made = last[2], held = d->transposed ? made / per_row : (made * nr + d->pw - 1) / d->pw;
            held = held < last[1] + cap ? held : last[1] + cap;
            held = held < oh_n ? held : oh_n;
            for (int64_t c = m0; held > r0 && c < m1; c++)
                memmove(band + c * plane, band + c * plane + (r0 - last[1]) * ow_n,
                        sizeof(float) * (size_t)((held - r0) * ow_n));
            t0 = made;
        }
        last[0] = u, last[1] = r0, last[2] = t1;
        if (jb->copy_own)
            mps_direct_copy(ctx, i * d->cg, (i + 1) * d->cg);
        const float *x = jb->copy + i * d->item;
        int64_t sub = jb->sub ? jb->sub : t1 - t0;
        for (int64_t tb = t0; tb < t1; tb += sub)
            for (int64_t p = m0; p < m1; p += mr)
                for (int64_t t = tb; t < t1 && t < tb + sub; t++) {
                    struct mps_direct_tile tl = mps_direct_band_tile(jb, t, r0, r0 + cap);
                    if (tl.keep)
                        mps_direct_run(jb, x, band, plane, 0, &tl, p, (int)(m1 - p < mr ? m1 - p : mr), false);
                }
        /* the pool rows p0 .. p1 read band rows from (p0 sh - pt) - r0 on: its pads above, if any */
        struct mps_maxpool_geom g = *pg;
        g.h = r1 - r0, g.pt = r0 - (p0 * pg->sh - pg->pt), g.out_h = p1 - p0;
        float *y = jb->pooled + it * q->m * pg->out_h * pg->out_w + p0 * pg->out_w;
        for (int64_t c = m0; c < m1; c++)
            jb->uk->maxpool(&g, band + c * plane, y + c * pg->out_h * pg->out_w);
    }
}

void mps_direct_conv(const struct mps_cpu_args *a, const struct mps_conv_geom *q, const void *data)
{
    const struct mps_ukernels *uk = a->uk;
    struct mps_direct d = mps_direct_of(q, uk);
    const struct mps_fused_act *act = mps_cpu_conv_act(a);
    struct mps_direct_job jb = {.q = q,
                                .d = &d,
                                .uk = uk,
                                .x = a->in[0].data,
                                .y = a->out[0].data,
                                .w = data,
                                .per = mps_pgemm_packed_bytes(uk, d.mg, d.k, !d.transposed),
                                .bias = a->in[2].data,
                                .res = a->res,
                                .epi = mps_tile_epi_none(),
                                .copy = (float *)(((uintptr_t)a->scratch + 63) & ~(uintptr_t)63),
                                .pool = a->pool,
                                .copy_parts = 1};
    jb.off = (const int32_t *)(jb.w + mps_direct_offsets_at(q, &d, uk));
    jb.y_image = a->out_stride ? a->out_stride : q->m * q->out_plane;
    jb.tiles = (const struct mps_direct_tile *)(jb.w + mps_direct_tiles_at(q, &d, uk));
    /* with a residual the conv tile of a family with conv_res adds it in its store; else the
       tile stores act's input and the sum and act follow it (a C loop a channel at a time) */
    jb.act = (!a->res || (uk->conv_res && !d.transposed)) && mps_pgemm_act_epi(act, &jb.epi) ? NULL : act;
    int64_t chunk = mps_direct_chunk(q, &d), threads = mps_pool_threads(a->pool);
    int64_t m_panels = (d.mg + d.wstep - 1) / d.wstep, width = d.transposed ? uk->mt : uk->nr; /* a tile's positions */
    jb.m_panels = m_panels;
    /* units: bands of tiles whose columns of B stay in L2 while W's panels pass; where the items are fewer than two a
       thread, each split further: into parts of W's rows when W is the larger (each thread then streams only its part
       of it), else into more bands; as many bands as make the units a multiple of the threads, their sizes a tile
       apart at most (four bands of 32, 32, 32 and 6 tiles kept one of two threads busy 1.7 times as long;
       squeezenet1_1's 25 tiles went 7, 7, 7 and 4: 14 against 11) */
    int64_t tile_bytes = d.cg * d.uh * d.uw * width * (int64_t)sizeof(float);
    int64_t fits = MPS_DIRECT_BAND_BYTES / tile_bytes > 1 ? MPS_DIRECT_BAND_BYTES / tile_bytes : 1;
    bool split_w = d.mg * d.k > d.cg * d.uh * d.uw * d.plane;
    /* the input rows one tile reads: each channel's kernel rows, nr and the kernel's width long */
    int64_t tile_l1 = d.cg * q->w.k[1] * (width + q->w.k[2]) * (int64_t)sizeof(float);
    jb.sub = MPS_DIRECT_L1_BYTES / tile_l1 < MPS_DIRECT_SUB ? MPS_DIRECT_L1_BYTES / tile_l1 : MPS_DIRECT_SUB;
    jb.prefetch = uk->conv_pf && !d.transposed && mps_direct_streams(q, d.in_place);
    /* with tiles in L1 (sub) it is W's part that a unit streams again for each
       few tiles: parts of it that stay in L2, and one band (squeezenet1_1's
       classifier, 512 -> 1000 on 13x13: two bands of 1 MB of W from L3,
       0.393 ms; one band of four 512 KB parts, 0.375) */
    int64_t w_parts = (d.mg * d.k * (int64_t)sizeof(float) + MPS_DIRECT_W_BYTES - 1) / MPS_DIRECT_W_BYTES;
    if (d.pack && !a->pool_geom) {
        jb.packed = (float *)(((uintptr_t)a->scratch + 63) & ~(uintptr_t)63);
        jb.pack_floats = mps_direct_pack_floats(&d, uk);
    }
    if (a->pool_geom) { /* a fused MaxPool: bands of its rows, at least two a thread */
        jb.pg = a->pool_geom, jb.pooled = a->pool_out->data;
        jb.pooled_tile = mps_direct_pooled_tile(q, &d, jb.pg, uk);
        /* a band holds the most rows: fewer where more bands are wanted */
        jb.band_floats = mps_direct_band_floats(q, jb.pg, mps_direct_pool_rows(q, jb.pg), d.pw);
        size_t copies = d.in_place ? 0 : sizeof(float) * (size_t)(chunk * d.item) + 64;
        jb.band_rows = (float *)(((uintptr_t)a->scratch + (copies + 63) / 64 * 64 + 63) & ~(uintptr_t)63) +
                       2 * MPS_DIRECT_BAND_HEAD;
    }
    for (int64_t first = 0; first < q->n * q->g; first += chunk) {
        int64_t count = q->n * q->g - first < chunk ? q->n * q->g - first : chunk;
        if (jb.pg) {
            /* fewer units than two a thread: parts of W's rows where each thread can
               have as many (whole rows, and no thread a band more: fashion_cnn's 7
               pool rows at batch 1 went in bands of 2, 2, 2 and 1, one thread with 4
               of them), else more bands. Where the bands alone are enough, not in
               parts: a unit takes rows from the band before it only in the same part,
               and parts alternate (resnet18's stem and pool at batch 1, 14 bands in 2
               parts: every band made its shared row and edge tiles again, 2 threads
               ran 1.6 times as fast as 1) */
            int64_t oh = jb.pg->out_h, want = 2 * threads, prows = mps_direct_pool_rows(q, jb.pg), parts = 1;
            if (count * ((oh + prows - 1) / prows) < want && m_panels % threads == 0 && count * m_panels >= threads)
                parts = threads / count > 1 ? threads / count : 1;
            if (count * parts * ((oh + prows - 1) / prows) < (parts > 1 ? threads : want)) {
                int64_t bands = (want + count * parts - 1) / (count * parts);
                bands = bands < oh ? bands : oh;
                prows = (oh + bands - 1) / bands;
            }
            jb.parts = parts < m_panels ? parts : m_panels;
            jb.first = first, jb.copy_own = prows >= oh && jb.parts == 1, jb.prows = prows;
            int64_t units = count * ((oh + prows - 1) / prows) * jb.parts;
            if (!jb.copy_own)
                mps_direct_copy_job(a->pool, &jb, count, threads);
            for (int64_t t = 0; t < threads; t++) /* no thread has made a band yet */
                *mps_direct_band_head(&jb, t) = -2;
            mps_pool_for(a->pool, units,
                         2 * (m_panels / jb.parts + 1) * d.wstep * prows * jb.pg->sh * q->w.out[2] * d.k,
                         mps_direct_pool_units, &jb);
            continue;
        }
        int64_t bands = jb.sub ? 1 : (d.tiles + fits - 1) / fits, want = 2 * threads;
        int64_t parts = jb.sub ? (w_parts < m_panels ? w_parts : m_panels) : 1;
        if (split_w && count * bands * parts < want)
            parts = (want + count * bands - 1) / (count * bands) < m_panels
                        ? (want + count * bands - 1) / (count * bands)
                        : m_panels;
        /* W in parts of as many panels as make that many parts (the last short, fewer
           parts), or in parts a panel apart in size: whichever leaves the busiest thread
           less (mobilenet_v2's 960 -> 320 on 7x7 in parts of 3, 3, 3 and 1 panels gave
           one of two threads 6 of 10: 0.101 -> 0.086 ms in parts of 2, 3, 2, 3; its
           960 -> 160 in parts of 1, 1, 1 and 2 gave one 3 of 5, where 2, 2, 1 in two
           bands is even) */
        int64_t least = -1, band0 = bands;
        for (int even = 0; even < 2; even++) {
            int64_t mstep = even ? 0 : (m_panels + parts - 1) / parts;
            int64_t np = even ? (parts < m_panels ? parts : m_panels) : (m_panels + mstep - 1) / mstep, nb = band0;
            if (count * nb * np < want)
                nb = (want + count * np - 1) / (count * np);
            while (nb < d.tiles && count * nb * np % threads)
                nb++;
            nb = nb < d.tiles ? nb : d.tiles;
            int64_t most = mps_direct_busiest(count, d.tiles, nb, m_panels, np, mstep, threads);
            if (least < 0 || most < least)
                least = most, jb.mstep = mstep, jb.parts = np, bands = nb;
        }
        jb.first = first, jb.bands = bands;
        /* a unit that is a whole item copies its input itself, on its own core,
           just before it reads it (fashion_cnn, batch 8: one job a layer, not two) */
        jb.copy_own = !d.in_place && jb.bands * jb.parts == 1;
        if (!d.in_place && !jb.copy_own)
            mps_direct_copy_job(a->pool, &jb, count, threads);
        mps_pool_for(a->pool, count * bands * jb.parts,
                     2 * (m_panels / jb.parts + 1) * d.wstep * (d.tiles / bands + 1) * width * d.k,
                     mps_direct_units, &jb);
    }
}
