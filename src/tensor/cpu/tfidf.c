/* tfidf.c: TfIdfVectorizer on the cpu (op.h): per row and start position,
   each n-gram length and skip, the pool's n-grams of that length compared
   in turn (pools are small: a vectorizer's vocabulary of n-grams). */
#include <string.h>

#include "kernels.h"

enum mps_status mps_cpu_tfidf(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tfidf_params *p = &a->node->p.tfidf;
    const struct mps_tensor *x = &a->in[0];
    const int64_t *pool = a->in[1].data, *starts = a->in[2].data, *index = a->in[3].data;
    const float *w = a->node->n_in > 4 ? a->in[4].data : NULL;
    int64_t cols = x->shape.dim[x->shape.ndim - 1], rows = x->shape.ndim == 2 ? x->shape.dim[0] : 1;
    int64_t len = mps_shape_numel(&a->in[1].shape), sizes = mps_shape_numel(&a->in[2].shape);
    float *y = a->out[0].data;
    (void)err;
    memset(y, 0, mps_tensor_bytes(&a->out[0]));
    for (int64_t r = 0; r < rows; r++) {
        float *out = y + r * p->n_out;
        for (int64_t i = 0; i < cols; i++)
            for (int64_t n = p->min_n; n <= p->max_n; n++) {
                int64_t base = 0; /* the n-grams of the lengths before n */
                for (int64_t m = 1; m < n; m++)
                    base += ((m < sizes ? starts[m] : len) - starts[m - 1]) / m;
                int64_t first = starts[n - 1], count = ((n < sizes ? starts[n] : len) - first) / n;
                for (int64_t s = 0; s <= (n == 1 ? 0 : p->max_skip) && i + (n - 1) * (s + 1) < cols; s++)
                    for (int64_t gram = 0; gram < count; gram++) {
                        int64_t k = 0;
                        while (k < n && mps_elem_get_int(x->data, x->dtype, r * cols + i + k * (s + 1)) ==
                                            pool[first + gram * n + k])
                            k++;
                        if (k == n) {
                            out[index[base + gram]] += 1;
                            break;
                        }
                    }
            }
        for (int64_t g = 0; p->mode != MPS_TFIDF_TF && g < mps_shape_numel(&a->in[3].shape); g++) {
            float *v = &out[index[g]], weight = w ? w[g] : 1;
            *v = p->mode == MPS_TFIDF_IDF ? (*v > 0 ? weight : 0) : *v * weight;
        }
    }
    return MPS_OK;
}
