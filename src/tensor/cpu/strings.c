/* strings.c: the cpu's string tensors (tensor.h, MPS_STRING): a plan's
   store for the characters its nodes make, Cast to and from strings, and
   StringNormalizer (op.h). */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels.h"

struct mps_strings_block {
    struct mps_strings_block *next;
    size_t size, used;
    char data[];
};

struct mps_strings {
    struct mps_strings_block *head, *at; /* at: the block being filled this run */
};

struct mps_strings *mps_strings_new(void)
{
    return calloc(1, sizeof(struct mps_strings));
}

void mps_strings_reset(struct mps_strings *s)
{
    for (struct mps_strings_block *b = s ? s->head : NULL; b; b = b->next)
        b->used = 0;
    if (s)
        s->at = s->head;
}

void mps_strings_free(struct mps_strings *s)
{
    while (s && s->head) {
        struct mps_strings_block *b = s->head;
        s->head = b->next;
        free(b);
    }
    free(s);
}

/* A copy of the len bytes at p, NUL-terminated, in the store; NULL when out of memory. */
static char *mps_strings_put(struct mps_strings *s, const char *p, size_t len)
{
    while (s->at && s->at->size - s->at->used < len + 1)
        s->at = s->at->next;
    if (!s->at) { /* a block of its own at the head: the blocks after at are full this run */
        size_t size = len + 1 > 65536 ? len + 1 : 65536;
        struct mps_strings_block *b = malloc(sizeof *b + size);
        if (!b)
            return NULL;
        *b = (struct mps_strings_block){.next = s->head, .size = size};
        s->head = s->at = b;
    }
    char *d = s->at->data + s->at->used;
    memcpy(d, p, len);
    d[len] = '\0';
    s->at->used += len + 1;
    return d;
}

/* Element i of x (a number) as a string: a float in the fewest significant
   digits that read back to it (%g: 0.6048455, 1e-05, 3), NaN, INF, -INF;
   integers exactly. */
static void mps_string_of(const struct mps_tensor *x, int64_t i, char *buf, size_t size)
{
    double v = mps_elem_get(x->data, x->dtype, i);
    if (!mps_dtype_is_float(x->dtype))
        snprintf(buf, size, x->dtype == MPS_U64 ? "%" PRIu64 : "%" PRId64,
                 x->dtype == MPS_U64 ? ((const uint64_t *)x->data)[i]
                                     : (uint64_t)mps_elem_get_int(x->data, x->dtype, i));
    else if (isnan(v))
        snprintf(buf, size, "NaN");
    else if (isinf(v))
        snprintf(buf, size, v < 0 ? "-INF" : "INF");
    else
        for (int digits = 1; digits <= 17; digits++) { /* read back in x's own type: f16's, f32's, f64's */
            uint64_t back;
            snprintf(buf, size, "%.*g", digits, v);
            mps_elem_set(&back, x->dtype, 0, strtod(buf, NULL));
            if (mps_elem_get(&back, x->dtype, 0) == v)
                break;
        }
}

enum mps_status mps_cpu_cast_string(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0], *y = &a->out[0];
    int64_t n = mps_shape_numel(&x->shape);
    const char **ys = y->data;
    const char *const *xs = x->data;
    char buf[64];
    if (y->dtype == MPS_STRING && !a->strings)
        return mps_fail(err, MPS_ERR_RUNTIME, "node '%s' (Cast): no store for the strings it makes", a->node->name);
    for (int64_t i = 0; i < n; i++) {
        if (x->dtype == MPS_STRING && y->dtype == MPS_STRING) {
            ys[i] = xs[i];
        } else if (y->dtype == MPS_STRING) {
            mps_string_of(x, i, buf, sizeof buf);
            if (!(ys[i] = mps_strings_put(a->strings, buf, strlen(buf))))
                return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        } else {
            char *end, *iend;
            double v = strtod(xs[i], &end);
            long long iv = strtoll(xs[i], &iend, 10); /* integers exactly, where the string is one */
            while (end != xs[i] && isspace((unsigned char)*end))
                end++;
            while (iend != xs[i] && isspace((unsigned char)*iend))
                iend++;
            if (end == xs[i] || *end)
                return mps_fail(err, MPS_ERR_INPUT, "node '%s' (Cast): element %lld, \"%.40s\", is not a number",
                                a->node->name, (long long)i, xs[i]);
            if (mps_dtype_is_int(y->dtype) && iend != xs[i] && !*iend)
                mps_elem_set_int(y->data, y->dtype, i, iv);
            else
                mps_elem_set(y->data, y->dtype, i, v);
        }
    }
    return MPS_OK;
}

/* Whether word is one of the n stopwords (ASCII letters compared without their case unless sensitive). */
static bool mps_stopword(const char *word, const char *const *stop, int64_t n, bool sensitive)
{
    for (int64_t k = 0; k < n; k++)
        if (sensitive ? !strcmp(word, stop[k]) : !strcasecmp(word, stop[k]))
            return true;
    return false;
}

enum mps_status mps_cpu_strnorm(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_strnorm_params *p = &a->node->p.strnorm;
    const struct mps_tensor *x = &a->in[0];
    bool has_stop = a->node->n_in > 1 && a->node->in[1] >= 0;
    const char *const *xs = x->data, *const *stop = has_stop ? a->in[1].data : NULL;
    int64_t n = mps_shape_numel(&x->shape), n_stop = has_stop ? mps_shape_numel(&a->in[1].shape) : 0, kept = 0;
    const char **ys = a->out[0].data;
    if (!a->strings)
        return mps_fail(err, MPS_ERR_RUNTIME, "node '%s' (StringNormalizer): no store for its strings", a->node->name);
    for (int64_t i = 0; i < n; i++) {
        if (mps_stopword(xs[i], stop, n_stop, p->case_sensitive))
            continue;
        size_t len = strlen(xs[i]);
        char *w = p->change == MPS_STRNORM_NONE ? NULL : mps_strings_put(a->strings, xs[i], len);
        if (p->change != MPS_STRNORM_NONE && !w)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        for (size_t c = 0; w && c < len; c++) /* ASCII letters; other bytes (UTF-8) as they are */
            if (!((unsigned char)w[c] & 0x80))
                w[c] = (char)(p->change == MPS_STRNORM_LOWER ? tolower((unsigned char)w[c])
                                                             : toupper((unsigned char)w[c]));
        ys[kept++] = w ? w : xs[i];
    }
    if (kept == 0) /* all removed: one empty string, as onnxruntime gives */
        ys[kept++] = "";
    a->out[0].shape.dim[a->out[0].shape.ndim - 1] = kept;
    return MPS_OK;
}
