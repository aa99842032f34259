/* lower.h: what MPSGraph must build for a graph, decided in plain C.

   The Apple GPU backend is split in two so that its decisions can be tested
   on every machine. This step (lower.c, no Apple API) turns an inferred graph
   into a program: a list of steps, each one MPSGraph call with every
   argument decided (shapes, axes, descriptor values, padding, layouts,
   casts for fp16). bridge.m transcribes the steps one by one, in order, into
   MPSGraph calls and knows nothing about ONNX.

       struct mps_mtl_program *p;
       if (mps_mtl_lower(g, MPS_PRECISION_FP32, &p, &err) != MPS_OK) ...  // names the node
       for (int i = 0; i < p->n_steps; i++) ... p->steps[i] ...
       mps_mtl_program_dump(p, stdout);   // one line per step, for tests and debugging
       mps_mtl_program_free(p);

   Steps read and define tensors by id (0 .. n_tensors-1), each defined once
   before it is read (SSA). A graph value that needs no MPSGraph operation
   (Identity, Dropout, a Constant node) reuses its input's id. Shapes are
   always static: MPSGraph sees the shapes inference resolved. */
#ifndef MPS_METAL_LOWER_H
#define MPS_METAL_LOWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "graph.h"
#include "status.h"

/* One MPSGraph call each (the selector it becomes, minus "name:"). */
enum mps_mtl_kind {
    MPS_MTL_PLACEHOLDER,      /* placeholderWithShape:dataType: (graph input p.index) */
    MPS_MTL_CONSTANT,         /* constantWithData:shape:dataType: (p.data) */
    MPS_MTL_FILL,             /* constantWithScalar:shape:dataType: (p.scalar); ndim 0: constantWithScalar:dataType: */
    MPS_MTL_UNARY,            /* fn: enum mps_mtl_unary */
    MPS_MTL_BINARY,           /* fn: enum mps_mtl_binary; numpy broadcasting */
    MPS_MTL_SELECT,           /* selectWithPredicateTensor:truePredicateTensor:falsePredicateTensor: */
    MPS_MTL_CAST,             /* castTensor:toType: (to the step's dtype) */
    MPS_MTL_MATMUL,           /* matrixMultiplicationWithPrimaryTensor:secondaryTensor: (batch dims broadcast) */
    MPS_MTL_TRANSPOSE2,       /* transposeTensor:dimension:withDimension: (p.ax.axis, p.ax.axis2) */
    MPS_MTL_CONV2D,           /* convolution2DWithSourceTensor:weightsTensor:descriptor: (p.conv) */
    MPS_MTL_CONV_TRANSPOSE2D, /* convolutionTranspose2DWithSourceTensor:weightsTensor:outputShape:descriptor: */
    MPS_MTL_POOL2D,           /* fn: enum mps_mtl_pool; p.pool */
    MPS_MTL_REDUCE,           /* fn: enum mps_mtl_reduce over p.axes (reduced dims kept as 1) */
    MPS_MTL_VARIANCE,         /* varianceOfTensor:meanTensor:axes: (in: x, mean) */
    MPS_MTL_NORMALIZE,        /* normalizationWithTensor:meanTensor:varianceTensor:gammaTensor:betaTensor:epsilon: */
    MPS_MTL_SOFTMAX,          /* softMaxWithTensor:axis: */
    MPS_MTL_RESHAPE,          /* reshapeTensor:withShape: (to the step's shape) */
    MPS_MTL_PERMUTE,          /* transposeTensor:permutation: (p.perm; macOS 13) */
    MPS_MTL_SLICE,            /* sliceTensor:starts:ends:strides: (p.slice, steps > 0) */
    MPS_MTL_REVERSE,          /* reverseTensor:axes: (p.axes) */
    MPS_MTL_CONCAT,           /* concatTensors:dimension: (p.ax.axis) */
    MPS_MTL_BROADCAST,        /* broadcastTensor:toShape: (to the step's shape) */
    MPS_MTL_PAD,              /* padTensor:withPaddingMode:leftPadding:rightPadding:constantValue: (p.pad) */
    MPS_MTL_GATHER,           /* gatherWithUpdatesTensor:indicesTensor:axis:batchDimensions:0 (in: data, indices) */
    MPS_MTL_CUMSUM,           /* cumulativeSumWithTensor:axis:exclusive:reverse: (p.cumsum; macOS 13) */
    MPS_MTL_KIND_COUNT
};

enum mps_mtl_unary {
    MPS_MTL_IDENTITY,
    MPS_MTL_RELU,
    MPS_MTL_SIGMOID,
    MPS_MTL_TANH,
    MPS_MTL_EXP,
    MPS_MTL_LOG,
    MPS_MTL_SQRT,
    MPS_MTL_ABS,
    MPS_MTL_NEG,
    MPS_MTL_RECIPROCAL,
    MPS_MTL_FLOOR,
    MPS_MTL_CEIL,
    MPS_MTL_ERF,
    MPS_MTL_NOT, /* of bool */
    MPS_MTL_SIGN,
    MPS_MTL_RINT, /* halves to even */
    MPS_MTL_SIN,
    MPS_MTL_COS,
    MPS_MTL_TAN,
    MPS_MTL_ASIN,
    MPS_MTL_ACOS,
    MPS_MTL_ATAN,
    MPS_MTL_SINH,
    MPS_MTL_COSH,
    MPS_MTL_ASINH,
    MPS_MTL_ACOSH,
    MPS_MTL_ATANH,
    MPS_MTL_UNARY_COUNT
};

enum mps_mtl_binary {
    MPS_MTL_ADD,
    MPS_MTL_SUB,
    MPS_MTL_MUL,
    MPS_MTL_DIV,
    MPS_MTL_POW,
    MPS_MTL_MAX,
    MPS_MTL_MIN,
    MPS_MTL_GREATER,
    MPS_MTL_GREATER_EQUAL,
    MPS_MTL_LESS, /* results from here on are bool */
    MPS_MTL_LESS_EQUAL,
    MPS_MTL_EQUAL,
    MPS_MTL_NOT_EQUAL,
    MPS_MTL_AND, /* logical, of bool */
    MPS_MTL_OR,
    MPS_MTL_XOR,
    MPS_MTL_BINARY_COUNT
};

enum mps_mtl_reduce {
    MPS_MTL_REDUCE_SUM,
    MPS_MTL_REDUCE_MAX,
    MPS_MTL_REDUCE_MIN,
    MPS_MTL_REDUCE_MEAN,
    MPS_MTL_REDUCE_PROD,
    MPS_MTL_REDUCE_COUNT
};

enum mps_mtl_pool { MPS_MTL_POOL_MAX, MPS_MTL_POOL_AVG, MPS_MTL_POOL_COUNT };

/* Apple's MPSGraphTensorNamedDataLayout and MPSGraphPaddingMode values the
   lowering uses (MPSGraphCore.h, macOS 11): bridge.m passes them through. */
enum mps_mtl_layout { MPS_MTL_LAYOUT_NCHW = 0, MPS_MTL_LAYOUT_OIHW = 2 };
enum mps_mtl_pad_mode { MPS_MTL_PAD_CONSTANT = 0, MPS_MTL_PAD_REFLECT = 1, MPS_MTL_PAD_CLAMP_TO_EDGE = 3 };

/* MPSGraphConvolution2DOpDescriptor, padding style always explicit; x is width. */
struct mps_mtl_conv {
    int64_t stride_x, stride_y, dilation_x, dilation_y, groups;
    int64_t pad_left, pad_right, pad_top, pad_bottom;
    enum mps_mtl_layout data_layout, weights_layout;
};

/* MPSGraphPooling2DOpDescriptor, padding style explicit. ceil_mode is never
   set: the lowering widens pad_right/pad_bottom instead, whose semantics are
   ONNX's own (see lower.c). Indices (MaxPool's second output) come as int32
   flattened over all four dims (MPSGraphPoolingReturnIndicesGlobalFlatten4D). */
struct mps_mtl_pool_desc {
    int64_t kernel_w, kernel_h, stride_x, stride_y, dilation_x, dilation_y;
    int64_t pad_left, pad_right, pad_top, pad_bottom;
    bool include_zero_pad; /* includeZeroPadToAverage */
    bool return_indices;   /* maxPooling2DReturnIndicesWithSourceTensor: defines out and out2 */
};

struct mps_mtl_slice {
    int64_t start[MPS_MAX_DIMS], end[MPS_MAX_DIMS], stride[MPS_MAX_DIMS]; /* end exclusive, stride > 0 */
};

struct mps_mtl_pad {
    enum mps_mtl_pad_mode mode;
    int64_t left[MPS_MAX_DIMS], right[MPS_MAX_DIMS]; /* >= 0 (negative ONNX pads become a SLICE) */
    double value;
};

struct mps_mtl_step {
    enum mps_mtl_kind kind;
    int out;  /* tensor id this step defines */
    int out2; /* POOL2D with return_indices: the indices' id; else -1 */
    int n_in;
    int *in;                /* tensor ids read (n_in); program-owned */
    enum mps_dtype dtype;   /* of the result (out2: MPS_I32) */
    struct mps_shape shape; /* of the result */
    int node;               /* graph node it lowers; -1 for graph inputs and weights */
    union {
        int index; /* PLACEHOLDER: graph input number */
        struct {
            const void *data; /* contiguous, of dtype and shape; not owned (graph or program) */
            size_t bytes;
        } constant;
        double scalar; /* FILL */
        struct {
            int axis, axis2; /* SOFTMAX, CONCAT, GATHER: axis; TRANSPOSE2: both */
        } ax;
        float epsilon;            /* NORMALIZE */
        int perm[MPS_MAX_DIMS];   /* PERMUTE */
        uint32_t axes;            /* REDUCE, VARIANCE, REVERSE: bit i = axis i */
        struct {
            int axis;
            bool exclusive, reverse;
        } cumsum;
        struct mps_mtl_conv conv; /* CONV2D, CONV_TRANSPOSE2D (output shape: the step's shape) */
        struct mps_mtl_slice slice;
        struct mps_mtl_pad pad;
        struct mps_mtl_pool_desc pool; /* POOL2D */
    } p;
    int fn; /* UNARY, BINARY, REDUCE, POOL2D: which (enum mps_mtl_unary, ...) */
};

struct mps_mtl_program {
    struct mps_mtl_step *steps;
    int n_steps;
    int n_tensors;
    int *inputs;  /* graph input i: id of its placeholder (fed f32 etc. as the graph says) */
    int *outputs; /* graph output i: id of the tensor to read back (the graph's dtype) */
    int n_inputs, n_outputs;
    enum mps_precision precision;
    struct mps_mtl_block *blocks; /* what the program owns besides the steps */
    int cap_steps;
};

/* Lowers the inferred graph g for precision fp32 or fp16 (tf32 is refused:
   Apple GPUs have no such mode). MPS_ERR_MODEL names the first node that
   cannot be lowered and why; g must outlive the program (constants point
   into it). */
enum mps_status mps_mtl_lower(const struct mps_graph *g, enum mps_precision precision, struct mps_mtl_program **out,
                              struct mps_error *err);
void mps_mtl_program_free(struct mps_mtl_program *p);

/* Whether node n of g can be lowered; when not, why holds the reason
   ("3-D pooling: MPSGraph pools 2-D"). The backend's supports(). */
bool mps_mtl_node_supported(const struct mps_graph *g, const struct mps_node *n, char *why, size_t size);

/* Writes one line per step:
       t3 = conv2d(t0, t1) f32 [1,8,28,28] stride 1x1 dilation 1x1 groups 1 pad l1 r1 t1 b1 NCHW/OIHW  # conv1
   then "outputs: t9". */
void mps_mtl_program_dump(const struct mps_mtl_program *p, const struct mps_graph *g, FILE *f);

/* Whether op has a lowering at all (every op of ops.def should). */
bool mps_mtl_op_lowered(enum mps_op op);

const char *mps_mtl_kind_name(enum mps_mtl_kind k);
const char *mps_mtl_unary_name(int fn);
const char *mps_mtl_binary_name(int fn);

#endif
