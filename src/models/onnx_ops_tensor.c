/* onnx_ops_tensor.c: the rows of onnx_ops.c for reductions, layout and
   shape ops, indexing (gathers, scatters, TopK, ArgMax), constants and
   Resize, with their mappers. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

static enum mps_status mps_map_reduce(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    int64_t keep, noop, axes[MPS_MAX_DIMS];
    int count;
    enum mps_status st = mps_attr_int(n, "keepdims", 1, &keep, err);
    if (!st)
        st = mps_attr_int(n, "noop_with_empty_axes", 0, &noop, err);
    if (!st)
        st = mps_attr_ints(n, "axes", axes, MPS_MAX_DIMS, &count, err);
    if (st)
        return st;
    p->reduce.keepdims = keep;
    p->reduce.noop_with_empty_axes = noop;
    if (count >= 0 && n->n_in > 1)
        return mps_onnx_fail(n, err, "axes given both as attribute and as input");
    return count > 0 ? mps_attr_to_input(c, n, 1, axes, count, err) : MPS_OK;
}

static enum mps_status mps_map_reshape(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                       struct mps_error *err)
{
    int64_t allowzero;
    (void)c;
    enum mps_status st = mps_attr_int(n, "allowzero", 0, &allowzero, err);
    p->axis.allowzero = allowzero;
    return st;
}

/* Flatten (axis 1), Concat (axis required), Gather (axis 0). */
static enum mps_status mps_map_axis(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    (void)c;
    bool concat = strcmp(n->np->op_type, "Concat") == 0;
    if (concat && !mps_attr(n, "axis"))
        return mps_onnx_fail(n, err, "attribute 'axis' is required");
    return mps_attr_int(n, "axis", strcmp(n->np->op_type, "Flatten") == 0 ? 1 : 0, &p->axis.axis, err);
}

static enum mps_status mps_map_transpose(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                         struct mps_error *err)
{
    int64_t perm[MPS_MAX_DIMS];
    int count;
    (void)c;
    enum mps_status st = mps_attr_ints(n, "perm", perm, MPS_MAX_DIMS, &count, err);
    p->transpose.n_perm = count > 0 ? count : 0;
    for (int i = 0; i < count; i++)
        p->transpose.perm[i] = perm[i] < 0 || perm[i] >= MPS_MAX_DIMS ? -1 : (int)perm[i];
    return st;
}

/* Squeeze and Unsqueeze: axes was an attribute before opset 13. */
static enum mps_status mps_map_axes_input(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                          struct mps_error *err)
{
    int64_t axes[MPS_MAX_DIMS];
    int count;
    (void)p;
    enum mps_status st = mps_attr_ints(n, "axes", axes, MPS_MAX_DIMS, &count, err);
    if (st || count < 0)
        return st;
    return mps_attr_to_input(c, n, 1, axes, count, err);
}

static enum mps_status mps_map_split(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    int64_t split[8], num;
    int count;
    enum mps_status st = mps_attr_int(n, "axis", 0, &p->axis.axis, err);
    if (!st)
        st = mps_attr_int(n, "num_outputs", n->n_out, &num, err);
    if (!st)
        st = mps_attr_ints(n, "split", split, 8, &count, err);
    if (st)
        return st;
    for (int i = 0; i < n->n_out; i++)
        if (n->out[i] < 0)
            return mps_onnx_fail(n, err, "output %d has no name", i);
    if (num != n->n_out)
        return mps_onnx_fail(n, err, "num_outputs %lld but %d outputs", (long long)num, n->n_out);
    return count > 0 ? mps_attr_to_input(c, n, 1, split, count, err) : MPS_OK;
}

static enum mps_status mps_map_slice(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    (void)p;
    if (c->opset >= 10)
        return MPS_OK;
    int64_t v[MPS_MAX_DIMS];
    int count;
    static const char *const names[] = {"starts", "ends", "axes"};
    for (int i = 0; i < 3; i++) {
        enum mps_status st = mps_attr_ints(n, names[i], v, MPS_MAX_DIMS, &count, err);
        if (st)
            return st;
        if (count < 0 && i < 2)
            return mps_onnx_fail(n, err, "attribute '%s' is required", names[i]);
        if (count >= 0 && (st = mps_attr_to_input(c, n, 1 + i, v, count, err)))
            return st;
    }
    return MPS_OK;
}

static enum mps_status mps_map_shape(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    (void)c;
    enum mps_status st = mps_attr_int(n, "start", 0, &p->shape.start, err);
    return st ? st : mps_attr_int(n, "end", INT64_MAX, &p->shape.end, err);
}

/* Size: shapes are static once a model is built, so it is the constant
   number of the input's elements (its shape worked out as fold would), read
   through an Identity that folds. */
static enum mps_status mps_map_size(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    (void)p;
    bool known;
    if (n->n_in != 1 || n->in[0] < 0)
        return mps_onnx_fail(n, err, "Size takes one input");
    enum mps_status st = mps_passes_fold_value(c->g, n->in[0], &known, err);
    if (st)
        return st;
    const struct mps_value *v = &c->g->values[n->in[0]];
    if (!v->shape_known && !v->data)
        return mps_onnx_fail(n, err, "the shape of its input '%s' is not known here", v->name);
    int64_t numel = mps_shape_numel(&v->shape);
    struct mps_shape scalar = {0, {0}};
    int id = mps_onnx_const(c, n->name, MPS_I64, &scalar, &numel);
    if (id < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    n->in[0] = id;
    n->last_op = MPS_OP_IDENTITY;
    return MPS_OK;
}

/* Constant: its value becomes an initializer that the Constant node reads. */
static enum mps_status mps_map_constant(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                        struct mps_error *err)
{
    (void)p;
    if (n->np->n_attribute != 1)
        return mps_onnx_fail(n, err, "must have exactly one value attribute");
    const Onnx__AttributeProto *a = n->np->attribute[0];
    const char *an = a->name ? a->name : "";
    struct mps_shape s = {0, {0}};
    int v = -1;
    if (strcmp(an, "value") == 0 && a->t) {
        enum mps_dtype dt;
        const void *data;
        enum mps_status st = mps_onnx_tensor(c, a->t, n->name, &dt, &s, &data, err);
        if (st)
            return st;
        v = mps_onnx_const(c, n->name, dt, &s, data);
    } else if (strcmp(an, "value_float") == 0 || strcmp(an, "value_floats") == 0) {
        bool one = an[11] == '\0';
        s = one ? (struct mps_shape){0, {0}} : (struct mps_shape){1, {(int64_t)a->n_floats}};
        v = mps_onnx_const(c, n->name, MPS_F32, &s, one ? &a->f : (const void *)a->floats);
    } else if (strcmp(an, "value_int") == 0 || strcmp(an, "value_ints") == 0) {
        bool one = an[9] == '\0';
        s = one ? (struct mps_shape){0, {0}} : (struct mps_shape){1, {(int64_t)a->n_ints}};
        v = mps_onnx_const(c, n->name, MPS_I64, &s, one ? &a->i : (const void *)a->ints);
    } else {
        return mps_onnx_fail(n, err, "attribute '%s' is not supported (strings and sparse tensors are not)", an);
    }
    if (v < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    n->in[0] = v;
    n->n_in = 1;
    return MPS_OK;
}

static enum mps_status mps_map_constant_of_shape(struct mps_onnx_ctx *c, struct mps_onnx_node *n,
                                                 union mps_op_params *p, struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, "value");
    p->fill.dtype = MPS_F32;
    p->fill.value = 0;
    if (!a)
        return MPS_OK;
    enum mps_dtype dt;
    struct mps_shape s;
    const void *data;
    if (!a->t)
        return mps_onnx_fail(n, err, "attribute 'value' must be a tensor");
    enum mps_status st = mps_onnx_tensor(c, a->t, n->name, &dt, &s, &data, err);
    if (st)
        return st;
    if (mps_shape_numel(&s) != 1)
        return mps_onnx_fail(n, err, "attribute 'value' must hold one element");
    double v[1];
    switch (dt) {
    case MPS_F32: v[0] = *(const float *)data; break;
    case MPS_F16: v[0] = mps_f16_to_f32(*(const uint16_t *)data); break;
    case MPS_F64: v[0] = *(const double *)data; break;
    case MPS_I64: v[0] = (double)*(const int64_t *)data; break;
    case MPS_I32: v[0] = *(const int32_t *)data; break;
    default: v[0] = *(const uint8_t *)data; break;
    }
    p->fill.dtype = dt;
    p->fill.value = v[0];
    return MPS_OK;
}

static enum mps_status mps_map_pad(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                   struct mps_error *err)
{
    char mode[16];
    enum mps_status st = mps_attr_string(n, "mode", "constant", mode, sizeof mode, err);
    if (st)
        return st;
    if (!strcmp(mode, "constant"))
        p->pad.mode = MPS_PAD_CONSTANT;
    else if (!strcmp(mode, "reflect"))
        p->pad.mode = MPS_PAD_REFLECT;
    else if (!strcmp(mode, "edge"))
        p->pad.mode = MPS_PAD_EDGE;
    else
        return mps_onnx_fail(n, err, "mode '%s' is not supported (constant, reflect, edge are)", mode);
    if (c->opset >= 11)
        return MPS_OK;
    int64_t pads[2 * MPS_MAX_DIMS];
    int count;
    float value;
    if ((st = mps_attr_ints(n, "pads", pads, 2 * MPS_MAX_DIMS, &count, err)) ||
        (st = mps_attr_float(n, "value", 0.0f, &value, err)))
        return st;
    if (count < 0)
        return mps_onnx_fail(n, err, "attribute 'pads' is required");
    struct mps_shape scalar = {0, {0}};
    int cv = mps_onnx_const(c, n->name, MPS_F32, &scalar, &value);
    if (cv < 0 || (st = mps_attr_to_input(c, n, 1, pads, count, err)))
        return st ? st : mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    n->in[2] = cv;
    n->n_in = 3;
    return MPS_OK;
}

/* Resize (opsets 10 to 19) and Upsample (7 to 9): the inputs become Resize's
   newest form (X, roi, scales, sizes); opset 10's Resize and every Upsample
   map coordinates as "asymmetric" and take the nearest input as onnxruntime
   does for them (MPS_NEAREST_LEGACY). */
static enum mps_status mps_map_resize(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                         "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    struct mps_resize_params *r = &p->resize;
    bool legacy = strcmp(n->np->op_type, "Upsample") == 0 || c->opset < 11;
    char mode[32], coord[32], nearest[32], policy[32];
    int64_t antialias, exclude, axes[MPS_MAX_DIMS];
    int n_axes;
    enum mps_status st = mps_attr_string(n, "mode", "nearest", mode, sizeof mode, err);
    if (!st)
        st = mps_attr_string(n, "coordinate_transformation_mode", "half_pixel", coord, sizeof coord, err);
    if (!st)
        st = mps_attr_string(n, "nearest_mode", "round_prefer_floor", nearest, sizeof nearest, err);
    if (!st)
        st = mps_attr_string(n, "keep_aspect_ratio_policy", "stretch", policy, sizeof policy, err);
    if (!st)
        st = mps_attr_int(n, "antialias", 0, &antialias, err);
    if (!st)
        st = mps_attr_int(n, "exclude_outside", 0, &exclude, err);
    if (!st)
        st = mps_attr_float(n, "cubic_coeff_a", -0.75f, &r->cubic_a, err);
    if (!st)
        st = mps_attr_float(n, "extrapolation_value", 0.0f, &r->extrapolation, err);
    if (!st)
        st = mps_attr_ints(n, "axes", axes, MPS_MAX_DIMS, &n_axes, err);
    if (st)
        return st;
    if (!strcmp(mode, "nearest"))
        r->mode = MPS_RESIZE_NEAREST;
    else if (!strcmp(mode, "linear") || (legacy && !strcmp(mode, "bilinear")))
        r->mode = MPS_RESIZE_LINEAR;
    else if (!strcmp(mode, "cubic") && !legacy)
        r->mode = MPS_RESIZE_CUBIC;
    else
        return mps_onnx_fail(n, err, "mode '%s' is not supported (nearest, linear%s are)", mode,
                             legacy ? "" : ", cubic");
    r->exclude_outside = exclude != 0;
    r->coord = MPS_COORD_ASYMMETRIC;
    r->nearest = MPS_NEAREST_LEGACY;
    if (!legacy) {
        int i = 0;
        while (i < 6 && strcmp(coord, coords[i]))
            i++;
        if (i == 6)
            return mps_onnx_fail(n, err, "coordinate_transformation_mode '%s' is not supported", coord);
        r->coord = (enum mps_resize_coord)i;
        for (i = 0; i < 4 && strcmp(nearest, nearests[i]); i++)
            ;
        if (i == 4)
            return mps_onnx_fail(n, err, "nearest_mode '%s' is not supported", nearest);
        r->nearest = (enum mps_resize_nearest)i;
    }
    if (antialias)
        return mps_onnx_fail(n, err, "antialias is not supported");
    if (strcmp(policy, "stretch"))
        return mps_onnx_fail(n, err, "keep_aspect_ratio_policy '%s' is not supported (stretch is)", policy);
    r->n_axes = n_axes > 0 ? n_axes : 0;
    for (int i = 0; i < r->n_axes; i++)
        r->axes[i] = axes[i];
    if (!legacy)
        return MPS_OK;
    /* Upsample 7: scales as an attribute; Upsample 9 and Resize 10: (X, scales) */
    const Onnx__AttributeProto *a = mps_attr(n, "scales");
    int scales = n->n_in > 1 ? n->in[1] : -1;
    if (a) {
        if (n->n_in > 1)
            return mps_onnx_fail(n, err, "scales given both as attribute and as input");
        if (a->n_floats > MPS_MAX_DIMS)
            return mps_onnx_fail(n, err, "attribute 'scales' has %zu values", a->n_floats);
        struct mps_shape s = {1, {(int64_t)a->n_floats}};
        if ((scales = mps_onnx_const(c, n->name, MPS_F32, &s, a->floats)) < 0)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    if (scales < 0)
        return mps_onnx_fail(n, err, "scales are required");
    n->in[1] = -1;
    n->in[2] = scales;
    n->n_in = 3;
    return MPS_OK;
}

static enum mps_status mps_map_topk(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    int64_t largest, sorted, k;
    enum mps_status st = mps_attr_int(n, "axis", -1, &p->topk.axis, err);
    if (!st)
        st = mps_attr_int(n, "largest", 1, &largest, err);
    if (!st)
        st = mps_attr_int(n, "sorted", 1, &sorted, err);
    if (st)
        return st;
    p->topk.largest = largest != 0;
    if (c->opset < 10) { /* k was an attribute */
        if ((st = mps_attr_int(n, "k", 0, &k, err)))
            return st;
        return mps_attr_to_input(c, n, 1, &k, 1, err);
    }
    return MPS_OK;
}

static enum mps_status mps_map_onehot(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    (void)c;
    return mps_attr_int(n, "axis", -1, &p->onehot.axis, err);
}

static enum mps_status mps_map_index(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    char red[16];
    (void)c;
    enum mps_status st = mps_attr_int(n, "axis", 0, &p->index.axis, err);
    if (!st)
        st = mps_attr_int(n, "batch_dims", 0, &p->index.batch_dims, err);
    if (!st)
        st = mps_attr_string(n, "reduction", "none", red, sizeof red, err);
    if (st)
        return st;
    for (int i = 0; i < 5; i++)
        if (!strcmp(red, names[i])) {
            p->index.reduction = (enum mps_scatter_reduction)i;
            return MPS_OK;
        }
    return mps_onnx_fail(n, err, "reduction '%s' is not none, add, mul, max or min", red);
}

static enum mps_status mps_map_trilu(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    int64_t upper;
    (void)c;
    enum mps_status st = mps_attr_int(n, "upper", 1, &upper, err);
    p->trilu.upper = upper != 0;
    return st;
}

/* GridSample (opset 16's mode names and opset 20's). */
static enum mps_status mps_map_gridsample(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                          struct mps_error *err)
{
    char mode[32], pad[32];
    int64_t align;
    (void)c;
    enum mps_status st = mps_attr_string(n, "mode", c->opset >= 20 ? "linear" : "bilinear", mode, sizeof mode, err);
    if (!st)
        st = mps_attr_string(n, "padding_mode", "zeros", pad, sizeof pad, err);
    if (!st)
        st = mps_attr_int(n, "align_corners", 0, &align, err);
    if (st)
        return st;
    struct mps_gridsample_params *g = &p->gridsample;
    g->align_corners = align != 0;
    if (!strcmp(mode, "nearest"))
        g->mode = MPS_RESIZE_NEAREST;
    else if (!strcmp(mode, "bilinear") || !strcmp(mode, "linear"))
        g->mode = MPS_RESIZE_LINEAR;
    else if (!strcmp(mode, "bicubic") || !strcmp(mode, "cubic"))
        g->mode = MPS_RESIZE_CUBIC;
    else
        return mps_onnx_fail(n, err, "mode '%s' is not nearest, linear or cubic", mode);
    if (!strcmp(pad, "zeros"))
        g->padding = MPS_PAD_CONSTANT;
    else if (!strcmp(pad, "border"))
        g->padding = MPS_PAD_EDGE;
    else if (!strcmp(pad, "reflection"))
        g->padding = MPS_PAD_REFLECT;
    else
        return mps_onnx_fail(n, err, "padding_mode '%s' is not zeros, border or reflection", pad);
    return MPS_OK;
}

static enum mps_status mps_map_compress(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                        struct mps_error *err)
{
    (void)c;
    p->compress.has_axis = mps_attr(n, "axis") != NULL;
    return mps_attr_int(n, "axis", 0, &p->compress.axis, err);
}

static enum mps_status mps_map_nms(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                   struct mps_error *err)
{
    int64_t center;
    enum mps_status st = mps_attr_int(n, "center_point_box", 0, &center, err);
    (void)c;
    if (!st && center != 0 && center != 1)
        return mps_onnx_fail(n, err, "center_point_box is %lld, not 0 or 1", (long long)center);
    p->nms.center_point_box = center == 1;
    return st;
}

static enum mps_status mps_map_unique(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    int64_t sorted;
    enum mps_status st = mps_attr_int(n, "sorted", 1, &sorted, err);
    (void)c;
    p->unique.sorted = sorted != 0;
    p->unique.has_axis = mps_attr(n, "axis") != NULL;
    return st ? st : mps_attr_int(n, "axis", 0, &p->unique.axis, err);
}

static enum mps_status mps_map_revseq(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    (void)c;
    enum mps_status st = mps_attr_int(n, "batch_axis", 1, &p->revseq.batch_axis, err);
    if (!st)
        st = mps_attr_int(n, "time_axis", 0, &p->revseq.time_axis, err);
    if (!st && !((p->revseq.batch_axis == 0 && p->revseq.time_axis == 1) ||
                 (p->revseq.batch_axis == 1 && p->revseq.time_axis == 0)))
        return mps_onnx_fail(n, err, "batch_axis %lld and time_axis %lld are not 0 and 1",
                             (long long)p->revseq.batch_axis, (long long)p->revseq.time_axis);
    return st;
}

static enum mps_status mps_map_eyelike(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                       struct mps_error *err)
{
    int64_t dt;
    (void)c;
    enum mps_status st = mps_attr_int(n, "k", 0, &p->eye.k, err);
    if (!st && (st = mps_attr_int(n, "dtype", -1, &dt, err)) == MPS_OK && dt >= 0 &&
        (dt > INT32_MAX || !mps_onnx_dtype((int32_t)dt, &p->eye.dtype)))
        return mps_onnx_fail(n, err, "dtype %s is not supported", mps_onnx_dtype_name((int32_t)dt));
    return st;
}

static enum mps_status mps_map_cumsum(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    int64_t exclusive = 0, reverse = 0;
    (void)c;
    enum mps_status st = mps_attr_int(n, "exclusive", 0, &exclusive, err);
    if (!st)
        st = mps_attr_int(n, "reverse", 0, &reverse, err);
    p->cumsum.exclusive = exclusive != 0;
    p->cumsum.reverse = reverse != 0;
    return st;
}

static enum mps_status mps_map_depth(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    char mode[16];
    (void)c;
    if (!mps_attr(n, "blocksize"))
        return mps_onnx_fail(n, err, "attribute 'blocksize' is required");
    enum mps_status st = mps_attr_int(n, "blocksize", 0, &p->depth.block, err);
    if (!st)
        st = mps_attr_string(n, "mode", "DCR", mode, sizeof mode, err);
    if (st)
        return st;
    if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
        return mps_onnx_fail(n, err, "mode '%s' is not DCR or CRD", mode);
    p->depth.crd = !strcmp(mode, "CRD");
    return MPS_OK;
}

static enum mps_status mps_map_arg(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                   struct mps_error *err)
{
    int64_t keep = 1, last = 0;
    (void)c;
    enum mps_status st = mps_attr_int(n, "axis", 0, &p->arg.axis, err);
    if (!st)
        st = mps_attr_int(n, "keepdims", 1, &keep, err);
    if (!st)
        st = mps_attr_int(n, "select_last_index", 0, &last, err);
    p->arg.keepdims = keep != 0;
    p->arg.last = last != 0;
    return st;
}

const struct mps_onnx_rule mps_onnx_rules_tensor[] = {
    {"ReduceMean", MPS_OP_REDUCE_MEAN, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceSum", MPS_OP_REDUCE_SUM, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceMax", MPS_OP_REDUCE_MAX, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceMin", MPS_OP_REDUCE_MIN, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceProd", MPS_OP_REDUCE_PROD, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceL1", MPS_OP_REDUCE_L1, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceL2", MPS_OP_REDUCE_L2, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceSumSquare", MPS_OP_REDUCE_SUM_SQUARE, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceLogSum", MPS_OP_REDUCE_LOG_SUM, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceLogSumExp", MPS_OP_REDUCE_LOG_SUM_EXP, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"Reshape", MPS_OP_RESHAPE, "allowzero", mps_map_reshape},
    {"Flatten", MPS_OP_FLATTEN, "axis", mps_map_axis},
    {"Transpose", MPS_OP_TRANSPOSE, "perm", mps_map_transpose},
    {"Squeeze", MPS_OP_SQUEEZE, "axes", mps_map_axes_input},
    {"Unsqueeze", MPS_OP_UNSQUEEZE, "axes", mps_map_axes_input},
    {"Concat", MPS_OP_CONCAT, "axis", mps_map_axis},
    {"Split", MPS_OP_SPLIT, "axis split num_outputs", mps_map_split},
    {"Slice", MPS_OP_SLICE, "starts ends axes", mps_map_slice},
    {"Gather", MPS_OP_GATHER, "axis", mps_map_axis},
    {"GatherElements", MPS_OP_GATHER_ELEMENTS, "axis", mps_map_axis},
    {"GatherND", MPS_OP_GATHER_ND, "batch_dims", mps_map_index},
    {"ScatterElements", MPS_OP_SCATTER_ELEMENTS, "axis reduction", mps_map_index},
    {"Scatter", MPS_OP_SCATTER_ELEMENTS, "axis", mps_map_index},
    {"ScatterND", MPS_OP_SCATTER_ND, "reduction", mps_map_index},
    {"Shape", MPS_OP_SHAPE, "start end", mps_map_shape},
    {"Size", MPS_OP_IDENTITY, "", mps_map_size},
    {"Constant", MPS_OP_CONSTANT,
     "value value_float value_floats value_int value_ints value_string value_strings "
     "sparse_value",
     mps_map_constant},
    {"ConstantOfShape", MPS_OP_CONSTANT_OF_SHAPE, "value", mps_map_constant_of_shape},
    {"Expand", MPS_OP_EXPAND, "", NULL},
    {"Pad", MPS_OP_PAD, "mode pads value", mps_map_pad},
    {"Resize", MPS_OP_RESIZE,
     "mode coordinate_transformation_mode nearest_mode cubic_coeff_a exclude_outside extrapolation_value antialias "
     "axes keep_aspect_ratio_policy",
     mps_map_resize},
    {"Upsample", MPS_OP_RESIZE, "mode scales", mps_map_resize},
    {"DepthToSpace", MPS_OP_DEPTH_TO_SPACE, "blocksize mode", mps_map_depth},
    {"Trilu", MPS_OP_TRILU, "upper", mps_map_trilu},
    {"EyeLike", MPS_OP_EYE_LIKE, "dtype k", mps_map_eyelike},
    {"ReverseSequence", MPS_OP_REVERSE_SEQUENCE, "batch_axis time_axis", mps_map_revseq},
    {"Compress", MPS_OP_COMPRESS, "axis", mps_map_compress},
    {"NonZero", MPS_OP_NON_ZERO, "", NULL},
    {"NonMaxSuppression", MPS_OP_NON_MAX_SUPPRESSION, "center_point_box", mps_map_nms},
    {"Unique", MPS_OP_UNIQUE, "axis sorted", mps_map_unique},
    {"GridSample", MPS_OP_GRID_SAMPLE, "align_corners mode padding_mode", mps_map_gridsample},
    {"CumSum", MPS_OP_CUM_SUM, "exclusive reverse", mps_map_cumsum},
    {"Tile", MPS_OP_TILE, "", NULL},
    {"Range", MPS_OP_RANGE, "", NULL},
    {"OneHot", MPS_OP_ONE_HOT, "axis", mps_map_onehot},
    {"TopK", MPS_OP_TOP_K, "axis largest sorted k", mps_map_topk},
    {"ArgMax", MPS_OP_ARG_MAX, "axis keepdims select_last_index", mps_map_arg},
    {"ArgMin", MPS_OP_ARG_MIN, "axis keepdims select_last_index", mps_map_arg},
    {"SpaceToDepth", MPS_OP_SPACE_TO_DEPTH, "blocksize", mps_map_depth},
};
const size_t mps_onnx_n_rules_tensor = sizeof mps_onnx_rules_tensor / sizeof mps_onnx_rules_tensor[0];
