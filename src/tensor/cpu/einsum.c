/* einsum.c: Einsum on the CPU, as its definition reads: every output
   element the sum, over the labels the output drops, of the product of the
   inputs' elements those labels and the output's index (einsum.h), in
   double. The general form, for the small equations models carry; a
   contraction that is one MatMul does not yet run on the packed product. */
#include "../einsum.h"
#include "kernels.h"

struct mps_einsum_job {
    const struct mps_cpu_args *a;
    struct mps_einsum e;
    int n_red;
    signed char red[MPS_EINSUM_MAX_LABELS]; /* the labels summed over */
    int64_t red_count;
    int64_t stride[MPS_EINSUM_MAX_IN][MPS_EINSUM_MAX_LABELS]; /* each input's step per label (0: absent, or size 1) */
};

static void mps_einsum_outputs(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_einsum_job *q = ctx;
    const struct mps_einsum *e = &q->e;
    const struct mps_tensor *in = q->a->in;
    for (int64_t o = begin; o < end; o++) {
        int64_t base[MPS_EINSUM_MAX_IN] = {0}, rem = o;
        for (int d = e->out_ndim - 1; d >= 0; d--) {
            int64_t i = rem % e->size[e->out[d]];
            rem /= e->size[e->out[d]];
            for (int k = 0; k < e->n_in; k++)
                base[k] += i * q->stride[k][e->out[d]];
        }
        double acc = 0;
        for (int64_t r = 0; r < q->red_count; r++) {
            int64_t off[MPS_EINSUM_MAX_IN], rr = r;
            for (int k = 0; k < e->n_in; k++)
                off[k] = base[k];
            for (int j = q->n_red - 1; j >= 0; j--) {
                int64_t i = rr % e->size[q->red[j]];
                rr /= e->size[q->red[j]];
                for (int k = 0; k < e->n_in; k++)
                    off[k] += i * q->stride[k][q->red[j]];
            }
            double prod = 1;
            for (int k = 0; k < e->n_in; k++)
                prod *= mps_elem_get(in[k].data, in[k].dtype, off[k]);
            acc += prod;
        }
        mps_elem_set(q->a->out[0].data, q->a->out[0].dtype, o, acc);
    }
}

enum mps_status mps_cpu_einsum(const struct mps_cpu_args *a, struct mps_error *err)
{
    struct mps_einsum_job q = {.a = a, .red_count = 1};
    const struct mps_shape *shapes[MPS_EINSUM_MAX_IN] = {NULL};
    char why[160];
    int n_in = a->node->n_in;
    for (int k = 0; k < n_in; k++)
        shapes[k] = &a->in[k].shape;
    if (!mps_einsum_parse(a->node->p.einsum.equation, n_in, shapes, &q.e, why, sizeof why))
        return mps_fail(err, MPS_ERR_MODEL, "node '%s' (Einsum): %s", a->node->name, why);
    for (int k = 0; k < n_in; k++) { /* a label repeated in one input (a diagonal) steps both dims at once */
        int64_t st[MPS_MAX_DIMS];
        mps_shape_strides(shapes[k], st);
        for (int d = 0; d < q.e.ndim[k]; d++)
            if (shapes[k]->dim[d] != 1)
                q.stride[k][q.e.label[k][d]] += st[d];
    }
    for (int l = 0; l < q.e.n_labels; l++)
        if (!q.e.in_out[l]) {
            q.red[q.n_red++] = (signed char)l;
            q.red_count *= q.e.size[l];
        }
    mps_pool_for(a->pool, mps_shape_numel(&a->out[0].shape), q.red_count * n_in, mps_einsum_outputs, &q);
    return MPS_OK;
}
