/* onnx_train.c: what the suite tests of training mode and of random numbers
   need, composed of existing ops: BatchNormalization with its batch
   statistics and running averages, Dropout with a random mask, and the
   random ops (RandomUniform, RandomNormal and their Like forms, Bernoulli)
   on one counter-based generator (op.h: mps_random): a model gets the same
   numbers on every run and every backend (a seed not given is 0), and as
   they depend on the shape alone they are folded at load into constants.
   Also the text ops' constants: TfIdfVectorizer's, StringNormalizer's. */
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* The seed attribute as the generator's seed: a float's bits (the random
   ops'), an int itself (Dropout's); 0 when absent. */
static enum mps_status mps_tr_seed(const struct mps_onnx_node *n, uint64_t *seed, struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, "seed");
    float f = 0;
    uint32_t bits = 0;
    *seed = 0;
    if (a && a->has_i && !a->has_f) {
        *seed = (uint64_t)a->i;
        return MPS_OK;
    }
    enum mps_status st = mps_attr_float(n, "seed", 0, &f, err);
    if (!st && f != 0)
        memcpy(&bits, &f, sizeof bits);
    *seed = bits;
    return st;
}

/* The dtype attribute (absent: def) as a float dtype. */
static enum mps_status mps_tr_dtype(const struct mps_onnx_node *n, enum mps_dtype def, enum mps_dtype *dt,
                                    struct mps_error *err)
{
    int64_t v;
    enum mps_status st = mps_attr_int(n, "dtype", -1, &v, err);
    *dt = def;
    if (st || v < 0)
        return st;
    if (v == 10 || v == 16) /* f16, bf16: computed in f32 as the model's other halves are */
        v = 1;
    if (v != 1 && v != 11)
        return mps_onnx_fail(n, err, "dtype %s is not supported (float and double are)",
                             mps_onnx_dtype_name((int32_t)v));
    *dt = v == 11 ? MPS_F64 : MPS_F32;
    return MPS_OK;
}

/* A RandomLike node of x's shape into *out: uniform in [a, b), or normal of mean a, scale b. */
static enum mps_status mps_tr_random(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int x, bool normal, float a,
                                     float b, enum mps_dtype dt, int *out, struct mps_error *err)
{
    union mps_op_params p;
    mps_op_params_default(MPS_OP_RANDOM_LIKE, &p);
    p.random.dtype = dt, p.random.normal = normal, p.random.a = a, p.random.b = b;
    enum mps_status st = mps_tr_seed(n, &p.random.seed, err);
    return st ? st : mps_onnx_add(c, n, MPS_OP_RANDOM_LIKE, &x, 1, &p, out, err);
}

/* RandomUniform, RandomNormal and their Like forms. */
static enum mps_status mps_map_random(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    const char *op = n->np->op_type;
    bool normal = strstr(op, "Normal") != NULL, like = strstr(op, "Like") != NULL;
    float a, b;
    enum mps_dtype dt;
    int x = like && n->n_in > 0 ? n->in[0] : -1, y;
    enum mps_status st = mps_attr_float(n, normal ? "mean" : "low", 0, &a, err);
    if (st || (st = mps_attr_float(n, normal ? "scale" : "high", 1, &b, err)) ||
        (st = mps_tr_dtype(n, like ? MPS_DTYPE_COUNT : MPS_F32, &dt, err)))
        return st;
    if (like && x < 0)
        return mps_onnx_fail(n, err, "it needs an input");
    if (!like) { /* a constant of the shape attribute */
        int64_t dims[MPS_MAX_DIMS];
        int count;
        if ((st = mps_attr_ints(n, "shape", dims, MPS_MAX_DIMS, &count, err)))
            return st;
        struct mps_shape s = {count < 0 ? 0 : count, {0}};
        for (int d = 0; d < s.ndim; d++)
            s.dim[d] = dims[d];
        int64_t numel = mps_shape_numel(&s);
        void *zeros =
            numel >= 0 && numel <= (1 << 26) ? mps_graph_alloc(c->g, sizeof(float) * (size_t)(numel + 1)) : NULL;
        if (count < 0 || !zeros)
            return count < 0 ? mps_onnx_fail(n, err, "it needs a shape") : mps_onnx_fail(n, err, "shape too large");
        if ((x = mps_onnx_const(c, n->name, MPS_F32, &s, zeros)) < 0)
            return mps_onnx_oom(err);
    }
    if ((st = mps_tr_random(c, n, x, normal, a, b, dt, &y, err)))
        return st;
    n->in[0] = y, n->n_in = 1;
    mps_op_params_default(MPS_OP_IDENTITY, p);
    return MPS_OK;
}

/* Bernoulli: 1 where a uniform number is below the input's probability,
   as the dtype given (or the input's). */
static enum mps_status mps_map_bernoulli(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                         struct mps_error *err)
{
    int64_t v;
    int u, below;
    struct mps_shape s;
    enum mps_status st = mps_onnx_shape_of(c, n, n->in[0], &s, err); /* its dtype too */
    if (st)
        return st;
    enum mps_dtype dt = c->g->values[n->in[0]].dtype;
    st = mps_attr_int(n, "dtype", -1, &v, err);
    if (st || (v >= 0 && (v > INT32_MAX || !mps_onnx_dtype((int32_t)v, &dt))))
        return st ? st : mps_onnx_fail(n, err, "dtype %lld is not supported", (long long)v);
    if ((st = mps_tr_random(c, n, n->in[0], false, 0, 1, MPS_DTYPE_COUNT, &u, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_LESS, (int[]){u, n->in[0]}, 2, NULL, &below, err)))
        return st;
    mps_op_params_default(MPS_OP_CAST, p);
    p->cast.to = dt == MPS_F16 || dt == MPS_BF16 ? MPS_F32 : dt;
    n->in[0] = below, n->n_in = 1;
    n->last_op = MPS_OP_CAST;
    return MPS_OK;
}

enum mps_status mps_onnx_dropout_training(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                          bool *training, struct mps_error *err)
{
    double on, ratio;
    *training = false;
    if (c->opset < 12 || n->n_in < 3 || n->in[2] < 0)
        return MPS_OK;
    enum mps_status st = mps_onnx_number(c, n, 2, 0, &on, err);
    if (st || on == 0)
        return st;
    *training = true;
    if ((st = mps_onnx_number(c, n, 1, 0.5, &ratio, err)))
        return st;
    if (!(ratio >= 0 && ratio < 1))
        return mps_onnx_fail(n, err, "its ratio %g is outside [0, 1)", ratio);
    struct mps_shape one = {0, {0}}, xs;
    int x = n->in[0], u, keep, scaled;
    if ((st = mps_onnx_shape_of(c, n, x, &xs, err)))
        return st;
    enum mps_dtype dt = c->g->values[x].dtype; /* the scale and the zero in x's dtype */
    double k[3] = {ratio, 1 / (1 - ratio), 0};
    float kf[3] = {(float)k[0], (float)k[1], 0};
    const void *ks = dt == MPS_F64 ? (const void *)&k[1] : &kf[1], *kz = dt == MPS_F64 ? (const void *)&k[2] : &kf[2];
    int cr = mps_onnx_const(c, n->name, MPS_F32, &one, &kf[0]), cs = mps_onnx_const(c, n->name, dt, &one, ks),
        cz = mps_onnx_const(c, n->name, dt, &one, kz);
    if (cr < 0 || cs < 0 || cz < 0 || (dt != MPS_F32 && dt != MPS_F64))
        return cr < 0 || cs < 0 || cz < 0 ? mps_onnx_oom(err)
                                          : mps_onnx_fail(n, err, "training mode needs f32 or f64 data");
    if ((st = mps_tr_random(c, n, x, false, 0, 1, MPS_F32, &u, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_GREATER_OR_EQUAL, (int[]){u, cr}, 2, NULL, &keep, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_MUL, (int[]){x, cs}, 2, NULL, &scaled, err)))
        return st;
    if (n->n_out > 1 && n->out[1] >= 0 &&
        (st = mps_graph_add_node(c->g, MPS_OP_IDENTITY, n->name, &keep, 1, &n->out[1], 1, NULL, err)))
        return st;
    n->in[0] = keep, n->in[1] = scaled, n->in[2] = cz, n->n_in = 3, n->n_out = 1;
    mps_op_params_default(MPS_OP_WHERE, p);
    n->last_op = MPS_OP_WHERE;
    return MPS_OK;
}

/* BatchNormalization in training mode (training_mode 1, opset 14 on), as
   ONNX defines it: the batch's mean and (biased) variance over
   every axis but 1 normalize x; outputs 1 and 2, where asked, are the
   running statistics updated by momentum: input * momentum + batch * (1 -
   momentum). The row's Identity last. */
enum mps_status mps_onnx_bn_training(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    float eps = p->norm.epsilon, momentum;
    struct mps_shape s;
    enum mps_status st = mps_attr_float(n, "momentum", 0.9f, &momentum, err);
    if (st || (st = mps_onnx_shape_of(c, n, n->in[0], &s, err)))
        return st;
    if (s.ndim < 2 || n->n_in != 5 || n->n_out > 3)
        return mps_onnx_fail(n, err, "training mode needs an input of rank 2 or more, five inputs, three outputs");
    int64_t axes[MPS_MAX_DIMS];
    for (int d = 0; d < s.ndim - 1; d++)
        axes[d] = d ? d + 1 : 0;
    struct mps_shape one = {0, {0}}, sa = {1, {s.ndim - 1}}, bc = {s.ndim - 1, {s.dim[1]}}, flat = {1, {s.dim[1]}};
    for (int d = 1; d < bc.ndim; d++)
        bc.dim[d] = 1;
    float k[3] = {eps, momentum, 1 - momentum};
    int ax = mps_onnx_const(c, n->name, MPS_I64, &sa, axes), ce = mps_onnx_const(c, n->name, MPS_F32, &one, &k[0]),
        cm = mps_onnx_const(c, n->name, MPS_F32, &one, &k[1]), cn = mps_onnx_const(c, n->name, MPS_F32, &one, &k[2]);
    if (ax < 0 || ce < 0 || cm < 0 || cn < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    union mps_op_params mean;
    mps_op_params_default(MPS_OP_REDUCE_MEAN, &mean);
    mean.reduce.keepdims = true;
    int mu, d, d2, var, sd, y, scale = n->in[1], bias = n->in[2];
    if ((st = mps_onnx_add(c, n, MPS_OP_REDUCE_MEAN, (int[]){n->in[0], ax}, 2, &mean, &mu, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_SUB, (int[]){n->in[0], mu}, 2, NULL, &d, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_MUL, (int[]){d, d}, 2, NULL, &d2, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_REDUCE_MEAN, (int[]){d2, ax}, 2, &mean, &var, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_ADD, (int[]){var, ce}, 2, NULL, &sd, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_SQRT, &sd, 1, NULL, &sd, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_DIV, (int[]){d, sd}, 2, NULL, &y, err)) ||
        (st = mps_onnx_reshape(c, n, &scale, &bc, err)) || (st = mps_onnx_reshape(c, n, &bias, &bc, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_MUL, (int[]){y, scale}, 2, NULL, &y, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_ADD, (int[]){y, bias}, 2, NULL, &y, err)))
        return st;
    for (int o = 1; o < 3 && o < n->n_out; o++) { /* running mean, running var */
        int batch = o == 1 ? mu : var, old = n->in[2 + o], a, b;
        if (n->out[o] < 0)
            continue;
        if ((st = mps_onnx_reshape(c, n, &batch, &flat, err)) ||
            (st = mps_onnx_add(c, n, MPS_OP_MUL, (int[]){old, cm}, 2, NULL, &a, err)) ||
            (st = mps_onnx_add(c, n, MPS_OP_MUL, (int[]){batch, cn}, 2, NULL, &b, err)) ||
            (st = mps_graph_add_node(c->g, MPS_OP_ADD, n->name, (int[]){a, b}, 2, &n->out[o], 1, NULL, err)))
            return st;
    }
    n->in[0] = y, n->n_in = 1, n->n_out = 1;
    n->last_op = MPS_OP_IDENTITY;
    return MPS_OK;
}

/* TfIdfVectorizer: the pool, ngram_counts, ngram_indexes and weights
   attributes become the constant inputs of the IR op (op.h). */
static enum mps_status mps_map_tfidf(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    struct mps_tfidf_params *q = &p->tfidf;
    char mode[16];
    if (n->n_in != 1 || n->in[0] < 0)
        return mps_onnx_fail(n, err, "it takes one input");
    enum mps_status st = mps_attr_int(n, "min_gram_length", 1, &q->min_n, err);
    if (st || (st = mps_attr_int(n, "max_gram_length", 1, &q->max_n, err)) ||
        (st = mps_attr_int(n, "max_skip_count", 0, &q->max_skip, err)) ||
        (st = mps_attr_string(n, "mode", "", mode, sizeof mode, err)))
        return st;
    q->mode = !strcmp(mode, "TF") ? MPS_TFIDF_TF : !strcmp(mode, "IDF") ? MPS_TFIDF_IDF : MPS_TFIDF_TFIDF;
    if (strcmp(mode, "TF") && strcmp(mode, "IDF") && strcmp(mode, "TFIDF"))
        return mps_onnx_fail(n, err, "mode '%s' is not TF, IDF or TFIDF", mode);
    if (mps_attr(n, "pool_strings"))
        return mps_onnx_fail(n, err, "a pool of strings is not supported (of int64s it is)");
    static const char *const lists[] = {"pool_int64s", "ngram_counts", "ngram_indexes"};
    for (int i = 0; i < 3; i++) {
        const Onnx__AttributeProto *a = mps_attr(n, lists[i]);
        if (!a || !a->n_ints || a->n_ints > (1u << 24))
            return mps_onnx_fail(n, err, "it needs %s", lists[i]);
        struct mps_shape s = {1, {(int64_t)a->n_ints}};
        if ((n->in[1 + i] = mps_onnx_const(c, n->name, MPS_I64, &s, a->ints)) < 0)
            return mps_onnx_oom(err);
    }
    n->n_in = 4;
    const Onnx__AttributeProto *w = mps_attr(n, "weights");
    if (w && w->n_floats) {
        struct mps_shape s = {1, {(int64_t)w->n_floats}};
        if ((n->in[4] = mps_onnx_const(c, n->name, MPS_F32, &s, w->floats)) < 0)
            return mps_onnx_oom(err);
        n->n_in = 5;
    }
    return MPS_OK;
}

/* StringNormalizer: case_change_action and is_case_sensitive as params, the
   stopwords as a constant input of strings (op.h). The locale is not read:
   ASCII letters change case, as in every locale. */
static enum mps_status mps_map_strnorm(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                       struct mps_error *err)
{
    char change[16];
    int64_t sensitive;
    enum mps_status st = mps_attr_string(n, "case_change_action", "NONE", change, sizeof change, err);
    if (st || (st = mps_attr_int(n, "is_case_sensitive", 0, &sensitive, err)))
        return st;
    p->strnorm.change = !strcmp(change, "LOWER")   ? MPS_STRNORM_LOWER
                        : !strcmp(change, "UPPER") ? MPS_STRNORM_UPPER
                                                   : MPS_STRNORM_NONE;
    p->strnorm.case_sensitive = sensitive != 0;
    if (strcmp(change, "NONE") && strcmp(change, "LOWER") && strcmp(change, "UPPER"))
        return mps_onnx_fail(n, err, "case_change_action '%s' is not NONE, LOWER or UPPER", change);
    const Onnx__AttributeProto *a = mps_attr(n, "stopwords");
    if (n->n_in != 1 || !a || !a->n_strings)
        return MPS_OK;
    if (a->n_strings > (1u << 20))
        return mps_onnx_fail(n, err, "%zu stopwords are more than mpsrun takes", a->n_strings);
    const char **words = malloc(sizeof *words * a->n_strings);
    for (size_t i = 0; words && i < a->n_strings; i++)
        if (!(words[i] = mps_graph_strndup(c->g, (const char *)a->strings[i].data, a->strings[i].len))) {
            free(words);
            words = NULL;
        }
    struct mps_shape s = {1, {(int64_t)a->n_strings}};
    n->in[1] = words ? mps_onnx_const(c, n->name, MPS_STRING, &s, words) : -1;
    n->n_in = 2;
    free(words);
    return n->in[1] < 0 ? mps_onnx_oom(err) : MPS_OK;
}

const struct mps_onnx_rule mps_onnx_rules_random[] = {
    {"RandomUniform", MPS_OP_IDENTITY, "dtype high low seed shape", mps_map_random},
    {"RandomNormal", MPS_OP_IDENTITY, "dtype mean scale seed shape", mps_map_random},
    {"RandomUniformLike", MPS_OP_IDENTITY, "dtype high low seed", mps_map_random},
    {"RandomNormalLike", MPS_OP_IDENTITY, "dtype mean scale seed", mps_map_random},
    {"Bernoulli", MPS_OP_CAST, "dtype seed", mps_map_bernoulli},
    {"TfIdfVectorizer", MPS_OP_TFIDF,
     "max_gram_length max_skip_count min_gram_length mode ngram_counts ngram_indexes pool_int64s pool_strings weights",
     mps_map_tfidf},
    {"StringNormalizer", MPS_OP_STRING_NORMALIZER, "case_change_action is_case_sensitive locale stopwords",
     mps_map_strnorm},
};
const size_t mps_onnx_n_rules_random = sizeof mps_onnx_rules_random / sizeof mps_onnx_rules_random[0];
