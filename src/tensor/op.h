/* op.h: the op enum (from ops.def), op names and arities, and the small
   parameter struct of each op family.

       union mps_op_params p;
       mps_op_params_default(MPS_OP_CONV, &p);   // ONNX defaults: stride 1, group 1, ...
       p.conv.win.stride[0] = p.conv.win.stride[1] = 2;

   Fields marked "resolved" are filled by shape inference (mps_graph_infer)
   from the node's constant inputs and its input shapes; a backend reads them
   and never re-derives them. Spatial arrays are indexed by spatial axis
   (H then W; index 0 only for 1-D ops). */
#ifndef MPS_OP_H
#define MPS_OP_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor.h"

enum mps_op {
#define MPS_OP(e, name, in_min, in_max, out_min, out_max, traits) MPS_OP_##e,
#include "ops.def"
#undef MPS_OP
    MPS_OP_COUNT
};

#define MPS_MAX_SPATIAL 3 /* 1-D, 2-D and 3-D convolution and pooling */

/* What code elsewhere asks of an op (ops.def's last column), so that no list of
   ops is written twice by hand. */
enum mps_op_trait {
    MPS_TR_UNARY = 1 << 0,  /* elementwise, one input, params struct mps_act_params */
    MPS_TR_ACT = 1 << 1,    /* an activation a product, conv or binary op may apply in its store (the fuse pass) */
    MPS_TR_SCORES = 1 << 2, /* bounded or one-sided: a classifier ending in it gives scores, not logits */
    MPS_TR_REDUCE = 1 << 3, /* ReduceMean ... ReduceLogSumExp: struct mps_reduce_params */
    MPS_TR_LOGIC = 1 << 4,  /* comparisons and logic ops (bool results; Where a bool operand) */
    MPS_TR_VIEW = 1 << 5,   /* the output is the input's bytes: plans alias it, nothing is copied */
};

struct mps_op_info {
    const char *name; /* ONNX op type */
    int in_min, in_max, out_min, out_max; /* max -1: variadic */
    unsigned traits;                      /* enum mps_op_trait */
};

const struct mps_op_info *mps_op_info(enum mps_op op);
const char *mps_op_name(enum mps_op op);
/* The op whose ONNX name is name, or MPS_OP_COUNT when there is none. */
enum mps_op mps_op_from_name(const char *name);
/* Whether op has every trait of traits (enum mps_op_trait); false for an op out of range. */
bool mps_op_has(enum mps_op op, unsigned traits);
bool mps_op_is_reduce(enum mps_op op); /* MPS_TR_REDUCE */
bool mps_op_is_unary(enum mps_op op);  /* MPS_TR_UNARY */
bool mps_op_is_logic(enum mps_op op);  /* MPS_TR_LOGIC */
bool mps_op_is_view(enum mps_op op);   /* MPS_TR_VIEW: Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout */

/* Scalar parameters of elementwise ops:
   LeakyRelu alpha; Elu alpha; Selu alpha, gamma in beta; HardSigmoid alpha, beta;
   Clip min in alpha, max in beta (resolved from its inputs; +-inf when absent);
   ThresholdedRelu alpha; Shrink lambd in alpha, bias in beta; GlobalLpPool p in alpha;
   Gelu: tanh approximation when beta != 0. */
struct mps_act_params {
    float alpha, beta;
};

/* An elementwise activation that the graph passes fused into the op before
   it (Conv, ConvTranspose, Gemm; Add, Sub, Mul, Div of two f32 inputs),
   applied to its output in place. mps_node_act finds it in a node. */
struct mps_fused_act {
    bool on;
    enum mps_op op; /* Relu, LeakyRelu, Clip, Sigmoid, ... */
    struct mps_act_params p;
};
/* The activation act as a slope below 0 and a clamp to [lo, hi], where it is
   one (none, Relu, Clip, LeakyRelu): sets what act changes of the identity's
   slope 1 and [-inf, inf], leaves the rest, and says whether it could. What a
   product's store applies on every backend. */
bool mps_act_clamp(const struct mps_fused_act *act, float *lo, float *hi, float *slope);

/* Gemm: Y = act(alpha * op(A) op(B) + beta * C), C broadcast to Y. */
struct mps_gemm_params {
    bool trans_a, trans_b;
    float alpha, beta;
    struct mps_fused_act act;
};

/* Einsum: the equation as the file gives it (einsum.h parses it). */
struct mps_einsum_params {
    char equation[96];
};

/* Add, Sub, Mul, Div: y = act(a op b). */
struct mps_binary_params {
    struct mps_fused_act act;
    bool fmod; /* Mod: the remainder's sign is the dividend's (mod.h) */
    bool right; /* BitShift (unsigned integers): direction RIGHT; a shift by the width or more gives 0 */
};

enum mps_auto_pad { MPS_AUTO_PAD_NOTSET, MPS_AUTO_PAD_SAME_UPPER, MPS_AUTO_PAD_SAME_LOWER, MPS_AUTO_PAD_VALID };

/* The sliding window shared by convolution and pooling. */
struct mps_window {
    int64_t kernel[MPS_MAX_SPATIAL];   /* Conv: from the weight shape when 0 (resolved) */
    int64_t stride[MPS_MAX_SPATIAL];
    int64_t dilation[MPS_MAX_SPATIAL];
    int64_t pad[2 * MPS_MAX_SPATIAL];  /* ONNX order: begin of each axis, then end (resolved for auto_pad) */
    enum mps_auto_pad auto_pad;
};

/* A convolution or pooling window in 3-D terms (depth, height, width): 1-D
   and 2-D ops run as 3-D ones whose leading spatial dims have size 1. What
   every backend's window kernels index by. */
struct mps_window3 {
    int64_t in[3], out[3];                  /* spatial sizes of input and output */
    int64_t k[3], s[3], d[3], pb[3], pe[3]; /* kernel, stride, dilation, begin and end pads */
};
/* The 3-D form of window w between input shape x and output shape y (N, C, spatial...). */
struct mps_window3 mps_window3_of(const struct mps_window *w, const struct mps_shape *x, const struct mps_shape *y);

/* Conv and ConvTranspose. */
struct mps_conv_params {
    struct mps_window win;
    int64_t group;
    int64_t output_padding[MPS_MAX_SPATIAL]; /* ConvTranspose */
    int64_t output_shape[MPS_MAX_SPATIAL];   /* ConvTranspose, used when has_output_shape */
    bool has_output_shape;
    struct mps_fused_act act;
};

/* MaxPool and AveragePool; MaxUnpool (its window alone: each X value goes
   to the output element MaxPool's flat index I names, in the output shape
   the window makes (in - 1) * stride + kernel - pads; a larger output_shape
   given pads that at the end of each axis, as onnxruntime does; the rest 0).
   An index outside that shape fails the run. */
struct mps_pool_params {
    struct mps_window win;
    bool ceil_mode;
    bool count_include_pad; /* AveragePool */
    bool column_major;      /* MaxPool Indices: spatial dims counted last-first (storage_order 1) */
};

/* RoiAlign: each region (x1, y1, x2, y2 of rois, times spatial_scale, less
   half a pixel with half_pixel) of image batch_indices[r] cut into out_h x
   out_w bins, each bin the average (or, max, the largest of the weighted
   corners, as onnxruntime computes it) of sampling x sampling bilinear
   samples (0: ceil(bin size) of them), as Caffe2 and onnxruntime do. A
   batch index outside the images fails the run. */
struct mps_roialign_params {
    bool max, half_pixel;
    int64_t out_h, out_w, sampling;
    float scale;
};

/* BatchNormalization (epsilon), LayerNormalization (axis, epsilon),
   Softmax and LogSoftmax (axis, opset-13 semantics: one axis). */
struct mps_norm_params {
    int64_t axis; /* resolved to >= 0 */
    float epsilon;
};

/* Cast; CastLike (a second input): to resolved from that input's dtype. */
struct mps_cast_params {
    enum mps_dtype to;
};

/* ReduceMean, Sum, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp
   (mps_op_is_reduce). An empty box (an axis of size 0) reduces to the op's
   identity where it has one: 0 (Sum, L1, L2, SumSquare), 1 (Prod), -inf
   (LogSum, LogSumExp); Mean, Max and Min refuse it. Over no axes
   (noop_with_empty_axes) each element is its own box: L1 gives |x|,
   SumSquare x*x, LogSum log x, as ONNX's reference does. */
struct mps_reduce_params {
    uint32_t axes;             /* resolved: bit i set when input axis i is reduced */
    bool keepdims;
    bool noop_with_empty_axes;
};

/* ArgMax, ArgMin: the int64 index of the largest (smallest) element along
   axis (resolved to >= 0); the first on a tie, the last with last. A NaN
   counts as beyond every number (numpy's and PyTorch's rule). */
struct mps_arg_params {
    int64_t axis;
    bool keepdims, last;
};

/* Flatten, Concat, Split, Gather (axis, resolved to >= 0); Squeeze and
   Unsqueeze (axes bitmask, resolved: of the input for Squeeze, of the output
   for Unsqueeze); Reshape (allowzero). */
struct mps_axis_params {
    int64_t axis;
    uint32_t axes;
    bool allowzero;
};

struct mps_transpose_params {
    int n_perm;                /* 0: reverse the dims (resolved) */
    int perm[MPS_MAX_DIMS];
};

/* Slice: output element i reads input start + i * step on each axis (resolved). */
struct mps_slice_params {
    int64_t start[MPS_MAX_DIMS];
    int64_t step[MPS_MAX_DIMS];
};

/* Shape: dims [start, end) of the input (resolved). */
struct mps_shape_params {
    int64_t start, end;
};

enum mps_pad_mode { MPS_PAD_CONSTANT, MPS_PAD_REFLECT, MPS_PAD_EDGE };

/* Pad: begin pads of each axis then end pads (resolved; negative crops). */
struct mps_pad_params {
    enum mps_pad_mode mode;
    int64_t pads[2 * MPS_MAX_DIMS];
    double value; /* constant mode (resolved from the optional input) */
};

enum mps_resize_mode { MPS_RESIZE_NEAREST, MPS_RESIZE_LINEAR, MPS_RESIZE_CUBIC };
/* How an output coordinate maps to the input (ONNX coordinate_transformation_mode). */
enum mps_resize_coord {
    MPS_COORD_HALF_PIXEL,           /* (o + 0.5) / scale - 0.5 */
    MPS_COORD_PYTORCH_HALF_PIXEL,   /* the same, but 0 where the output axis has length 1 */
    MPS_COORD_ALIGN_CORNERS,        /* o (in - 1) / (out - 1), 0 where out is 1 */
    MPS_COORD_ASYMMETRIC,           /* o / scale */
    MPS_COORD_TF_HALF_PIXEL_FOR_NN, /* (o + 0.5) / scale */
    MPS_COORD_TF_CROP_AND_RESIZE,   /* from roi's start to its end; outside the input: extrapolation */
};
/* Which input a nearest Resize takes for a coordinate x (ONNX nearest_mode). */
enum mps_resize_nearest {
    MPS_NEAREST_ROUND_PREFER_FLOOR, /* the nearest; on a tie, the lower */
    MPS_NEAREST_ROUND_PREFER_CEIL,
    MPS_NEAREST_FLOOR,
    MPS_NEAREST_CEIL,
    MPS_NEAREST_LEGACY, /* opset < 11 and Upsample: floor when the axis grows, ceil when it shrinks */
};

/* Resize (and Upsample): each output coordinate maps to an input coordinate
   (coord), which takes the nearest input (nearest) or interpolates the two
   around it, axis by axis (linear); indices outside the input are clamped to
   its edge. scale[d]: the scale the model gives for axis d, or out / in when
   it gives sizes (resolved; 1 for an axis not resized). The ONNX defaults
   (nearest, half_pixel, round_prefer_floor) are the zero values; resize.h
   has the rule that turns them into each output's inputs and weights. */
struct mps_resize_params {
    enum mps_resize_mode mode;
    enum mps_resize_coord coord;
    enum mps_resize_nearest nearest;
    float cubic_a;        /* cubic: the kernel's A (ONNX default -0.75) */
    bool exclude_outside; /* cubic: taps outside the input weigh 0, the others renormalized */
    float extrapolation;  /* tf_crop_and_resize: the value of outputs that map outside the input */
    int64_t axes[MPS_MAX_DIMS]; /* the axes scales or sizes name (ONNX opset 18); n_axes 0: every axis */
    int n_axes;
    double scale[MPS_MAX_DIMS];
    double roi[2 * MPS_MAX_DIMS]; /* tf_crop_and_resize: axis d from roi[d] to roi[MPS_MAX_DIMS + d] (resolved) */
};

/* GridSample: X [N, C, H, W] read at grid [N, Ho, Wo, 2] (x then y, from -1
   to 1 across the image: from its corner pixels' centers with align_corners,
   from their outer edges without) into [N, C, Ho, Wo]. mode: nearest (halves
   to even), linear, cubic (A = -0.75, 4 x 4 taps); padding of the reads
   outside the image: constant (zeros), edge (border), reflect (reflection,
   the coordinate reflected at the image's extent first). */
struct mps_gridsample_params {
    enum mps_resize_mode mode;
    enum mps_pad_mode padding;
    bool align_corners;
};

/* DepthToSpace (mode DCR or CRD) and SpaceToDepth, blocks of block x block. */
struct mps_depth_params {
    int64_t block;
    bool crd; /* DepthToSpace: channels as (C, blocks), not (blocks, C) */
};

/* Trilu: keeps the upper (column - row >= k) or the lower (column - row <= k)
   triangle of each matrix (the last two dims), zeros the rest; k resolved
   from the optional input. */
struct mps_trilu_params {
    bool upper;
    int64_t k;
};

/* EyeLike: ones on the diagonal k (column - row == k) of a matrix of the
   input's shape, zeros elsewhere, of dtype (MPS_DTYPE_COUNT: the input's).
   Only the input's shape is read: folded at load like Shape. */
struct mps_eye_params {
    enum mps_dtype dtype;
    int64_t k;
};

/* RandomLike: element i is a + (b - a) u (uniform) or a + b z (normal) of
   dtype (MPS_DTYPE_COUNT: the input's), u and z drawn by mps_random (a
   counter-based generator: the same seed gives the same numbers, run to run
   and on every backend). */
struct mps_random_params {
    enum mps_dtype dtype;
    bool normal;
    float a, b; /* low and high; mean and scale */
    uint64_t seed;
};
/* Element i of a RandomLike node p: u = the top 53 bits of splitmix64(seed +
   (i + 1) * 0x9E3779B97F4A7C15) / 2^53 in [0, 1); a normal one is Box-Muller
   of the uniforms 2i and 2i + 1: sqrt(-2 ln(1 - u0)) cos(2 pi u1). */
double mps_random(const struct mps_random_params *p, int64_t i);

/* TfIdfVectorizer: per row of int tokens X ([C] or [N, C]), how often each
   n-gram of the pool (input 1; those of n tokens from ngram_counts[n - 1],
   input 2) occurs, n from min_n to max_n, its tokens max_skip or fewer apart
   (a skip s puts them s + 1 apart; unigrams counted once a position), into
   output ngram_indexes[g] (input 3; distinct) of [n_out] floats: the count
   (TF), the weight where it is not 0 (IDF), or count times weight (TFIDF);
   weights (input 4) default to 1. */
enum mps_tfidf_mode { MPS_TFIDF_TF, MPS_TFIDF_IDF, MPS_TFIDF_TFIDF };
struct mps_tfidf_params {
    int64_t min_n, max_n, max_skip;
    enum mps_tfidf_mode mode;
    int64_t n_out; /* resolved: the largest index + 1 */
};

/* ReverseSequence: along time_axis, the first sequence_lens[b] elements of
   each batch b (along batch_axis) in reverse order, the rest as they are;
   the axes 0 and 1 in either order. A length outside [0, time] fails the run. */
struct mps_revseq_params {
    int64_t batch_axis, time_axis;
};

/* Compress: the slices along axis (or, without one, the elements of the
   input flattened) where the constant bool condition is true; a condition
   shorter than the axis leaves the rest out, a longer one is read as far as
   the axis goes. Of a run-time condition (NonZero: input) the size is the
   run's (mps_value.bounded). */
struct mps_compress_params {
    bool has_axis;
    int64_t axis; /* resolved >= 0 */
};

/* NonMaxSuppression: boxes [B, N, 4] ([y1, x1, y2, x2], either corner
   first; center_point_box: [x, y, w, h]), scores [B, C, N], then optional
   scalars max_output_boxes_per_class (0 when omitted: no box), iou_threshold
   (0) and score_threshold (none). Per batch and class, greedily the best
   scored box left (the lower index on a tie) whose score exceeds the
   threshold, dropping those whose IoU with it exceeds iou_threshold. Output
   [k, 3] i64 rows (batch, class, box), k a run's (bounded). */
struct mps_nms_params {
    bool center_point_box;
};

/* Unique: the distinct elements of the input flattened (or, with an axis,
   its distinct slices along it), sorted ascending (slices in lexicographic
   order) or in order of first occurrence; outputs Y, then optional indices
   (first occurrences), inverse_indices and counts, i64. Y's size along the
   axis, indices' and counts' are a run's (bounded). */
struct mps_unique_params {
    bool sorted, has_axis;
    int64_t axis; /* resolved >= 0 */
};

/* StringNormalizer: the strings of X ([C] or [1, C]) but the stopwords
   (compared with or without their case), each changed to lower or upper
   case or left; none left gives one empty string. ASCII letters change
   case, other bytes stay. The output's size is a run's (bounded). */
enum mps_strnorm_change { MPS_STRNORM_NONE, MPS_STRNORM_LOWER, MPS_STRNORM_UPPER };
struct mps_strnorm_params {
    enum mps_strnorm_change change;
    bool case_sensitive;
};

/* CumSum along axis (resolved from its input, >= 0): exclusive leaves each
   element out of its own sum; reverse sums from the end of the axis. */
struct mps_cumsum_params {
    int64_t axis;
    bool exclusive, reverse;
};

/* LRN: y = x / (bias + alpha / size * (sum of x^2 over the channels
   c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2)))^beta. */
struct mps_lrn_params {
    float alpha, beta, bias;
    int64_t size;
};

/* TopK: the k largest (smallest) elements along axis (resolved >= 0; k from
   the constant input) and their int64 indices, best first; equal elements
   in index order; a NaN counts as larger than every number (PyTorch's rule).
   sorted = 0 is answered sorted too, which the spec allows. */
struct mps_topk_params {
    int64_t axis, k;
    bool largest;
};

/* OneHot: a new axis (resolved >= 0 in the output) of depth positions, on
   where the index (negative: from the end) points, off elsewhere and for an
   index out of range; depth and the [off, on] values from constant inputs. */
struct mps_onehot_params {
    int64_t axis, depth;
    double off, on;
};

/* How ScatterElements and ScatterND combine an update with what is there. */
enum mps_scatter_reduction { MPS_SCATTER_NONE, MPS_SCATTER_ADD, MPS_SCATTER_MUL, MPS_SCATTER_MAX, MPS_SCATTER_MIN };

/* GatherND (batch_dims), ScatterElements (axis, resolved >= 0; reduction),
   ScatterND (reduction). Updates apply in index order: with reduction none
   a repeated index keeps the last. Indices must be in range (negative: from
   the end); constant ones are checked at load, run-time ones by the CPU run. */
struct mps_index_params {
    int64_t axis, batch_dims;
    enum mps_scatter_reduction reduction;
};

/* Tile: the repeats per axis (resolved from the constant input). */
struct mps_tile_params {
    int64_t repeats[MPS_MAX_DIMS];
};

/* Range: start + i * delta for i < the output's length (resolved from the
   constant start, limit and delta). */
struct mps_range_params {
    double start, delta;
};

/* IsInf: which infinities count. */
struct mps_isinf_params {
    bool negative, positive;
};

/* ConstantOfShape: every element is value, converted to dtype. */
struct mps_fill_params {
    enum mps_dtype dtype;
    double value;
};

/* RNN, GRU, LSTM: their activations, as ONNX names them (Affine alpha x + beta,
   ScaledTanh alpha tanh(beta x); the others as the ops of the same name). */
enum mps_rnn_fn {
    MPS_RNN_SIGMOID,
    MPS_RNN_TANH,
    MPS_RNN_RELU,
    MPS_RNN_AFFINE,
    MPS_RNN_LEAKY_RELU,
    MPS_RNN_THRESHOLDED_RELU,
    MPS_RNN_SCALED_TANH,
    MPS_RNN_HARD_SIGMOID,
    MPS_RNN_ELU,
    MPS_RNN_SOFTSIGN,
    MPS_RNN_SOFTPLUS,
    MPS_RNN_FN_COUNT
};
struct mps_rnn_act {
    enum mps_rnn_fn fn;
    float alpha, beta;
};

/* RNN (gate i), GRU (z, r, h), LSTM (i, o, f, c): W [dirs, gates * hidden,
   input], R [dirs, gates * hidden, hidden], B [dirs, 2 * gates * hidden] (W's
   biases, then R's), in ONNX's gate order. act[d * 3 + k] is direction d's
   k-th function: f (RNN); f, g (GRU); f, g, h (LSTM). */
struct mps_rnn_params {
    int64_t hidden;    /* hidden_size (resolved from R where the file does not say) */
    int direction;     /* 0 forward, 1 reverse, 2 bidirectional */
    bool batch_first;  /* layout 1: X [batch, seq, input], Y [batch, seq, dirs, hidden], Y_h [batch, dirs, hidden] */
    float clip;        /* > 0: each gate's input clipped to [-clip, clip] before its activation */
    bool input_forget; /* LSTM: the forget gate is 1 - the input gate */
    bool linear_before_reset; /* GRU: r multiplies (h R + Rb), not h */
    struct mps_rnn_act act[6];
};
/* Activation a of x. */
float mps_rnn_apply(const struct mps_rnn_act *a, float x);
/* The gates of op (RNN 1, GRU 3, LSTM 4) and its activations per direction (1, 2, 3). */
int mps_rnn_gates(enum mps_op op);
int mps_rnn_fns(enum mps_op op);

/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss: loss[n, d...] =
   -weight[t] * logp[n, t, d...] with t = target[n, d...] (0 where t is the
   ignore_index); reduction none keeps that tensor, sum adds it, mean divides
   the sum by the weights of the targets not ignored (by their count without
   weights). A target outside [0, C) that is not ignored fails the run. */
enum mps_loss_reduction { MPS_LOSS_MEAN, MPS_LOSS_SUM, MPS_LOSS_NONE };
struct mps_loss_params {
    enum mps_loss_reduction reduction;
    bool has_ignore;
    int64_t ignore_index;
};

union mps_op_params {
    struct mps_gemm_params gemm;
    struct mps_einsum_params einsum;
    struct mps_conv_params conv;
    struct mps_binary_params binary;
    struct mps_pool_params pool;
    struct mps_roialign_params roialign;
    struct mps_norm_params norm;
    struct mps_act_params act;
    struct mps_cast_params cast;
    struct mps_reduce_params reduce;
    struct mps_axis_params axis;
    struct mps_transpose_params transpose;
    struct mps_slice_params slice;
    struct mps_shape_params shape;
    struct mps_pad_params pad;
    struct mps_fill_params fill;
    struct mps_resize_params resize;
    struct mps_gridsample_params gridsample;
    struct mps_depth_params depth;
    struct mps_arg_params arg;
    struct mps_isinf_params isinf;
    struct mps_trilu_params trilu;
    struct mps_eye_params eye;
    struct mps_random_params random;
    struct mps_tfidf_params tfidf;
    struct mps_revseq_params revseq;
    struct mps_compress_params compress;
    struct mps_nms_params nms;
    struct mps_unique_params unique;
    struct mps_strnorm_params strnorm;
    struct mps_cumsum_params cumsum;
    struct mps_lrn_params lrn;
    struct mps_range_params range;
    struct mps_tile_params tile;
    struct mps_topk_params topk;
    struct mps_onehot_params onehot;
    struct mps_index_params index;
    struct mps_rnn_params rnn;
    struct mps_loss_params loss;
};

/* Fills p with the ONNX defaults of op (everything else zero). */
void mps_op_params_default(enum mps_op op, union mps_op_params *p);

#endif
