/* det.c: Det on the CPU: each n x n matrix's determinant by Gaussian
   elimination with partial pivoting, in double (f32 and f64 inputs). */
#include <math.h>
#include <stdlib.h>

#include "kernels.h"

enum mps_status mps_cpu_det(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0];
    int r = x->shape.ndim;
    int64_t n = x->shape.dim[r - 1], count = mps_shape_numel(&a->out[0].shape);
    double *m = malloc(sizeof(double) * (size_t)(n * n + 1));
    if (!m)
        return mps_fail(err, MPS_ERR_RUNTIME, "node '%s' (Det): out of memory", a->node->name);
    for (int64_t k = 0; k < count; k++) {
        for (int64_t i = 0; i < n * n; i++)
            m[i] = mps_elem_get(x->data, x->dtype, k * n * n + i);
        double det = 1;
        for (int64_t c = 0; c < n && det != 0; c++) {
            int64_t p = c; /* the largest pivot in the column: the stablest */
            for (int64_t i = c + 1; i < n; i++)
                if (fabs(m[i * n + c]) > fabs(m[p * n + c]))
                    p = i;
            if (m[p * n + c] == 0) {
                det = 0;
                break;
            }
            if (p != c) {
                for (int64_t j = 0; j < n; j++) {
                    double t = m[c * n + j];
                    m[c * n + j] = m[p * n + j];
                    m[p * n + j] = t;
                }
                det = -det;
            }
            det *= m[c * n + c];
            for (int64_t i = c + 1; i < n; i++) {
                double f = m[i * n + c] / m[c * n + c];
                for (int64_t j = c; j < n; j++)
                    m[i * n + j] -= f * m[c * n + j];
            }
        }
        mps_elem_set(a->out[0].data, a->out[0].dtype, k, det);
    }
    free(m);
    return MPS_OK;
}
