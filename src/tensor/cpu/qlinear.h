/* qlinear.h: what qlinear.c (the int8 products) and qimage.c (a conv's
   images made into the int8 tile's panels) share: the packed header of a
   QLinearConv or QLinearMatMul, and a conv's run over its images. */
#ifndef MPS_CPU_QLINEAR_H
#define MPS_CPU_QLINEAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

/* The compile-time data: this header, then per column mult, add (float),
   corr, zw (int32), then the packed weights. */
struct mps_qpack {
    const struct mps_uqgemm *q;
    int64_t k;               /* the reduced length, padding channels included (a multiple of 4) */
    int64_t k_real;          /* without them */
    int64_t cols, panels;    /* QLinearMatMul: panels of nr columns */
    int64_t row_blocks;      /* QLinearConv: blocks of mr output channels */
    int64_t cin, cp, kh, kw; /* Conv: channels, channels as packed (cin below 4, else padded to 4), taps */
    bool conv, flip;         /* flip: x is int8 (add 128) */
    bool dw;                 /* a depthwise QLinearConv (group = channels): k taps a channel, as floats */
    bool dw_bytes;           /* 3x3, each tap less its zero point a signed byte: after the floats, the taps
                                as ukernels.h's mps_uqdw3_fn takes them, 16 bytes a channel */
    bool fdirect;            /* one input channel on the float direct conv (mps_qlinear_fdirect) */
    size_t fd_bytes;         /* its packed weights (off_b on), then k taps a channel as floats */
    bool rowsums;            /* some zw is not 0 */
    bool quant;              /* the output is quantized (else f32) */
    bool out_signed;
    uint8_t zx;          /* x's zero point, unsigned */
    float lo, hi, slope; /* the activation (quantized: in output steps, less y's zero point) */
    int32_t yz;
    size_t off_mult, off_add, off_corr, off_zw, off_req, off_b; /* off_req: per column the store's mps_qreq */
};
/* A conv's images: the padded channels-last copies its panels are gathered
   from, and how its output positions (image b's position i at b plane + i)
   make panels of nr: each image's own (ppi of them), or, where those would
   leave a tenth of the lanes empty (7x7, 13x13 and 14x14 planes on the
   32-lane tile) and there are several images, the batch's positions in one
   run (flat), a panel spanning two images where they meet. */
struct mps_qimage {
    const struct mps_qpack *h;
    const struct mps_conv_params *p;
    const uint8_t *x; /* [N][C][H][W] */
    int64_t n, in_h, in_w, hp, wp, out_h, out_w;
    int64_t ppi; /* panels an image */
    bool flat;
    uint8_t *buf; /* per image, buf_stride bytes apart: [hp][wp][cp] */
    int64_t buf_stride;
};
/* Panel pg's positions [*first, *first + return value). */
static inline int mps_qpanel_span(const struct mps_qimage *im, int64_t pg, int64_t *first)
{
    int64_t plane = im->out_h * im->out_w, nr = im->h->q->nr;
    *first = im->flat ? pg * nr : pg / im->ppi * plane + pg % im->ppi * nr;
    int64_t end = im->flat ? im->n * plane : (pg / im->ppi + 1) * plane;
    return (int)(end - *first < nr ? end - *first : nr);
}
/* An mps_pool_for body over a conv's images, [begin, end): rows of the
   padded channels-last copies (image rg / hp, row rg % hp). */
void mps_qimage_fill(void *ctx, int64_t begin, int64_t end);
/* Panel pg into dst, [k / 4][nr][4] bytes, and, where some zw is not 0, its
   positions' byte sums into sums: gathered from the padded copy, or read
   straight from the planes for a 1x1 stride-1 conv without padding (_1x1). */
void mps_qimage_panel(const struct mps_qimage *im, int64_t pg, uint8_t *dst, int32_t *sums);
void mps_qimage_panel_1x1(const struct mps_qimage *im, int64_t pg, uint8_t *dst, int32_t *sums);

#endif
