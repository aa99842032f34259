/* bridge.m: the Apple GPU backend's Objective-C (ARC): it transcribes the
   lowering's steps (lower.h) into one MPSGraph, compiles it once into an
   MPSGraphExecutable, and runs it on one command queue with shared-storage
   buffers. It takes no decision of its own: what each step builds was
   decided, and tested, in lower.c. The APIs used and the macOS versions they
   need are listed in bridge.h. */
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalPerformanceShaders/MetalPerformanceShaders.h>
#import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>

#include <string.h>

#include "bridge.h"

#if !__has_feature(objc_arc)
#error "bridge.m must be compiled with -fobjc-arc"
#endif

/* One set of shared buffers a run reads and writes: a plan has two, so that
   a caller can fill one while the other runs (mps_mtl_host_io). */
@interface MPSRunSlot : NSObject
@property(nonatomic, strong) NSArray<id<MTLBuffer>> *inputBuffers;   /* graph input order */
@property(nonatomic, strong) NSArray<id<MTLBuffer>> *outputBuffers;  /* graph output order */
@property(nonatomic, strong) NSArray<MPSGraphTensorData *> *feeds;   /* the executable's feed order */
@property(nonatomic, strong) NSArray<MPSGraphTensorData *> *results; /* the executable's target order */
@end

@implementation MPSRunSlot
@end

/* A compiled model: what a run needs, owned by ARC and handed to C retained. */
@interface MPSRunPlan : NSObject
@property(nonatomic, strong) MPSGraph *graph;
@property(nonatomic, strong) MPSGraphExecutable *executable;
@property(nonatomic, strong) id<MTLCommandQueue> queue;
@property(nonatomic, strong) NSArray<MPSRunSlot *> *slots; /* two */
@end

@implementation MPSRunPlan
@end

static id<MTLDevice> mps_mtl_device(void)
{
    static id<MTLDevice> device;
    static dispatch_once_t once;
    dispatch_once(&once, ^{
      device = MTLCreateSystemDefaultDevice();
    });
    return device;
}

static MPSDataType mps_mtl_type(enum mps_dtype t)
{
    switch (t) {
    case MPS_F32: return MPSDataTypeFloat32;
    case MPS_F16: return MPSDataTypeFloat16;
    case MPS_I64: return MPSDataTypeInt64;
    case MPS_I32: return MPSDataTypeInt32;
    case MPS_U8: return MPSDataTypeUInt8;
    case MPS_BOOL: return MPSDataTypeBool;
    default: return MPSDataTypeInvalid; /* f64: the lowering refuses it */
    }
}

static MPSShape *mps_mtl_shape(const struct mps_shape *s)
{
    NSMutableArray<NSNumber *> *dims = [NSMutableArray arrayWithCapacity:(NSUInteger)s->ndim];
    for (int i = 0; i < s->ndim; i++)
        [dims addObject:@(s->dim[i])];
    return dims;
}

static NSArray<NSNumber *> *mps_mtl_numbers(const int64_t *v, int n)
{
    NSMutableArray<NSNumber *> *a = [NSMutableArray arrayWithCapacity:(NSUInteger)n];
    for (int i = 0; i < n; i++)
        [a addObject:@(v[i])];
    return a;
}

static NSArray<NSNumber *> *mps_mtl_axes(uint32_t axes)
{
    NSMutableArray<NSNumber *> *a = [NSMutableArray array];
    for (int i = 0; i < 32; i++)
        if (axes & (1u << i))
            [a addObject:@(i)];
    return a;
}

static const char *mps_mtl_text(NSString *s)
{
    return s.UTF8String ? s.UTF8String : "(no description)";
}

static MPSGraphTensor *mps_mtl_unary_op(MPSGraph *g, int fn, MPSGraphTensor *x)
{
    switch (fn) {
    case MPS_MTL_IDENTITY: return [g identityWithTensor:x name:nil];
    case MPS_MTL_RELU: return [g reLUWithTensor:x name:nil];
    case MPS_MTL_SIGMOID: return [g sigmoidWithTensor:x name:nil];
    case MPS_MTL_TANH: return [g tanhWithTensor:x name:nil];
    case MPS_MTL_EXP: return [g exponentWithTensor:x name:nil];
    case MPS_MTL_LOG: return [g logarithmWithTensor:x name:nil];
    case MPS_MTL_SQRT: return [g squareRootWithTensor:x name:nil];
    case MPS_MTL_ABS: return [g absoluteWithTensor:x name:nil];
    case MPS_MTL_NEG: return [g negativeWithTensor:x name:nil];
    case MPS_MTL_RECIPROCAL: return [g reciprocalWithTensor:x name:nil];
    case MPS_MTL_FLOOR: return [g floorWithTensor:x name:nil];
    case MPS_MTL_CEIL: return [g ceilWithTensor:x name:nil];
    case MPS_MTL_ERF: return [g erfWithTensor:x name:nil];
    case MPS_MTL_NOT: return [g notWithTensor:x name:nil];
    case MPS_MTL_SIGN: return [g signWithTensor:x name:nil];
    case MPS_MTL_RINT: return [g rintWithTensor:x name:nil];
    case MPS_MTL_SIN: return [g sinWithTensor:x name:nil];
    case MPS_MTL_COS: return [g cosWithTensor:x name:nil];
    case MPS_MTL_TAN: return [g tanWithTensor:x name:nil];
    case MPS_MTL_ASIN: return [g asinWithTensor:x name:nil];
    case MPS_MTL_ACOS: return [g acosWithTensor:x name:nil];
    case MPS_MTL_ATAN: return [g atanWithTensor:x name:nil];
    case MPS_MTL_SINH: return [g sinhWithTensor:x name:nil];
    case MPS_MTL_COSH: return [g coshWithTensor:x name:nil];
    case MPS_MTL_ASINH: return [g asinhWithTensor:x name:nil];
    case MPS_MTL_ACOSH: return [g acoshWithTensor:x name:nil];
    case MPS_MTL_ATANH: return [g atanhWithTensor:x name:nil];
    default: return nil;
    }
}

/* Floating point: Max and Min then take the NaN-propagating ops, as the CPU,
   CUDA and ONNX's reference (numpy) give a NaN in any operand (the plain
   ones skip it); integer tensors, which those ops do not take, the plain. */
static BOOL mps_mtl_is_float(MPSGraphTensor *t)
{
    return (t.dataType & MPSDataTypeFloatBit) != 0;
}

static MPSGraphTensor *mps_mtl_binary_op(MPSGraph *g, int fn, MPSGraphTensor *a, MPSGraphTensor *b)
{
    BOOL nan = mps_mtl_is_float(a);
    switch (fn) {
    case MPS_MTL_ADD: return [g additionWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_SUB: return [g subtractionWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_MUL: return [g multiplicationWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_DIV: return [g divisionWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_POW: return [g powerWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_MAX:
        return nan ? [g maximumWithNaNPropagationWithPrimaryTensor:a secondaryTensor:b name:nil]
                   : [g maximumWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_MIN:
        return nan ? [g minimumWithNaNPropagationWithPrimaryTensor:a secondaryTensor:b name:nil]
                   : [g minimumWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_GREATER: return [g greaterThanWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_GREATER_EQUAL: return [g greaterThanOrEqualToWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_LESS: return [g lessThanWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_LESS_EQUAL: return [g lessThanOrEqualToWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_EQUAL: return [g equalWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_NOT_EQUAL: return [g notEqualWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_AND: return [g logicalANDWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_OR: return [g logicalORWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_XOR: return [g logicalXORWithPrimaryTensor:a secondaryTensor:b name:nil];
    default: return nil;
    }
}

static MPSGraphTensor *mps_mtl_reduce_op(MPSGraph *g, int fn, MPSGraphTensor *x, NSArray<NSNumber *> *axes)
{
    BOOL nan = mps_mtl_is_float(x);
    switch (fn) {
    case MPS_MTL_REDUCE_SUM: return [g reductionSumWithTensor:x axes:axes name:nil];
    case MPS_MTL_REDUCE_MAX:
        return nan ? [g reductionMaximumPropagateNaNWithTensor:x axes:axes name:nil]
                   : [g reductionMaximumWithTensor:x axes:axes name:nil];
    case MPS_MTL_REDUCE_MIN:
        return nan ? [g reductionMinimumPropagateNaNWithTensor:x axes:axes name:nil]
                   : [g reductionMinimumWithTensor:x axes:axes name:nil];
    case MPS_MTL_REDUCE_MEAN: return [g meanOfTensor:x axes:axes name:nil];
    case MPS_MTL_REDUCE_PROD: return [g reductionProductWithTensor:x axes:axes name:nil];
    default: return nil;
    }
}

static MPSGraphConvolution2DOpDescriptor *mps_mtl_conv_desc(const struct mps_mtl_conv *c)
{
    return [MPSGraphConvolution2DOpDescriptor descriptorWithStrideInX:(NSUInteger)c->stride_x
                                                            strideInY:(NSUInteger)c->stride_y
                                                      dilationRateInX:(NSUInteger)c->dilation_x
                                                      dilationRateInY:(NSUInteger)c->dilation_y
                                                               groups:(NSUInteger)c->groups
                                                          paddingLeft:(NSUInteger)c->pad_left
                                                         paddingRight:(NSUInteger)c->pad_right
                                                           paddingTop:(NSUInteger)c->pad_top
                                                        paddingBottom:(NSUInteger)c->pad_bottom
                                                         paddingStyle:MPSGraphPaddingStyleExplicit
                                                           dataLayout:(MPSGraphTensorNamedDataLayout)c->data_layout
                                                        weightsLayout:(MPSGraphTensorNamedDataLayout)c->weights_layout];
}

static MPSGraphPooling2DOpDescriptor *mps_mtl_pool_desc(const struct mps_mtl_pool_desc *q)
{
    MPSGraphPooling2DOpDescriptor *d =
        [MPSGraphPooling2DOpDescriptor descriptorWithKernelWidth:(NSUInteger)q->kernel_w
                                                    kernelHeight:(NSUInteger)q->kernel_h
                                                       strideInX:(NSUInteger)q->stride_x
                                                       strideInY:(NSUInteger)q->stride_y
                                                 dilationRateInX:(NSUInteger)q->dilation_x
                                                 dilationRateInY:(NSUInteger)q->dilation_y
                                                     paddingLeft:(NSUInteger)q->pad_left
                                                    paddingRight:(NSUInteger)q->pad_right
                                                      paddingTop:(NSUInteger)q->pad_top
                                                   paddingBottom:(NSUInteger)q->pad_bottom
                                                    paddingStyle:MPSGraphPaddingStyleExplicit
                                                      dataLayout:MPSGraphTensorNamedDataLayoutNCHW];
    d.ceilMode = NO; /* the lowering widened pad_right/pad_bottom instead */
    d.includeZeroPadToAverage = q->include_zero_pad ? YES : NO;
    if (q->return_indices) {
        d.returnIndicesMode = MPSGraphPoolingReturnIndicesGlobalFlatten4D;
        d.returnIndicesDataType = MPSDataTypeInt32;
    }
    return d;
}

/* Operand i of a step; nil where the lowering left the slot empty (-1). */
static MPSGraphTensor *mps_mtl_operand(NSArray *operands, NSUInteger i)
{
    id t = i < operands.count ? operands[i] : nil;
    return [t isKindOfClass:[MPSGraphTensor class]] ? t : nil;
}

/* One step as one MPSGraph call; *second gets MaxPool's indices. nil when
   MPSGraph returns nothing (it raises for bad arguments: see the caller). */
static MPSGraphTensor *mps_mtl_transcribe(MPSGraph *g, const struct mps_mtl_step *s, NSArray *operands,
                                          MPSGraphTensor *__strong *second)
{
    MPSGraphTensor *a = mps_mtl_operand(operands, 0), *b = mps_mtl_operand(operands, 1);
    MPSShape *shape = mps_mtl_shape(&s->shape);
    MPSDataType type = mps_mtl_type(s->dtype);
    switch (s->kind) {
    case MPS_MTL_PLACEHOLDER: return [g placeholderWithShape:shape dataType:type name:nil];
    case MPS_MTL_CONSTANT: {
        NSData *bytes = [NSData dataWithBytes:s->p.constant.data length:s->p.constant.bytes];
        return [g constantWithData:bytes shape:shape dataType:type];
    }
    case MPS_MTL_FILL:
        return s->shape.ndim ? [g constantWithScalar:s->p.scalar shape:shape dataType:type]
                             : [g constantWithScalar:s->p.scalar dataType:type];
    case MPS_MTL_UNARY: return mps_mtl_unary_op(g, s->fn, a);
    case MPS_MTL_BINARY: return mps_mtl_binary_op(g, s->fn, a, b);
    case MPS_MTL_SELECT:
        return [g selectWithPredicateTensor:a
                        truePredicateTensor:b
                       falsePredicateTensor:mps_mtl_operand(operands, 2)
                                       name:nil];
    case MPS_MTL_CAST: return [g castTensor:a toType:type name:nil];
    case MPS_MTL_MATMUL: return [g matrixMultiplicationWithPrimaryTensor:a secondaryTensor:b name:nil];
    case MPS_MTL_TRANSPOSE2:
        return [g transposeTensor:a
                        dimension:(NSUInteger)s->p.ax.axis
                    withDimension:(NSUInteger)s->p.ax.axis2
                             name:nil];
    case MPS_MTL_CONV2D:
        return [g convolution2DWithSourceTensor:a weightsTensor:b descriptor:mps_mtl_conv_desc(&s->p.conv) name:nil];
    case MPS_MTL_CONV_TRANSPOSE2D:
        return [g convolutionTranspose2DWithSourceTensor:a
                                           weightsTensor:b
                                             outputShape:shape
                                              descriptor:mps_mtl_conv_desc(&s->p.conv)
                                                    name:nil];
    case MPS_MTL_POOL2D: {
        MPSGraphPooling2DOpDescriptor *d = mps_mtl_pool_desc(&s->p.pool);
        if (s->fn == MPS_MTL_POOL_AVG)
            return [g avgPooling2DWithSourceTensor:a descriptor:d name:nil];
        if (!s->p.pool.return_indices)
            return [g maxPooling2DWithSourceTensor:a descriptor:d name:nil];
        NSArray<MPSGraphTensor *> *both = [g maxPooling2DReturnIndicesWithSourceTensor:a descriptor:d name:nil];
        if (both.count != 2)
            return nil;
        *second = both[1];
        return both[0];
    }
    case MPS_MTL_REDUCE: return mps_mtl_reduce_op(g, s->fn, a, mps_mtl_axes(s->p.axes));
    case MPS_MTL_VARIANCE: return [g varianceOfTensor:a meanTensor:b axes:mps_mtl_axes(s->p.axes) name:nil];
    case MPS_MTL_NORMALIZE:
        return [g normalizationWithTensor:a
                               meanTensor:b
                           varianceTensor:mps_mtl_operand(operands, 2)
                              gammaTensor:mps_mtl_operand(operands, 3)
                               betaTensor:mps_mtl_operand(operands, 4)
                                  epsilon:s->p.epsilon
                                     name:nil];
    case MPS_MTL_SOFTMAX: return [g softMaxWithTensor:a axis:s->p.ax.axis name:nil];
    case MPS_MTL_RESHAPE: return [g reshapeTensor:a withShape:shape name:nil];
    case MPS_MTL_PERMUTE: {
        NSMutableArray<NSNumber *> *perm = [NSMutableArray array];
        for (int i = 0; i < s->shape.ndim; i++)
            [perm addObject:@(s->p.perm[i])];
        return [g transposeTensor:a permutation:perm name:nil];
    }
    case MPS_MTL_SLICE:
        return [g sliceTensor:a
                       starts:mps_mtl_numbers(s->p.slice.start, s->shape.ndim)
                         ends:mps_mtl_numbers(s->p.slice.end, s->shape.ndim)
                      strides:mps_mtl_numbers(s->p.slice.stride, s->shape.ndim)
                         name:nil];
    case MPS_MTL_REVERSE: return [g reverseTensor:a axes:mps_mtl_axes(s->p.axes) name:nil];
    case MPS_MTL_CUMSUM:
        return [g cumulativeSumWithTensor:a
                                     axis:s->p.cumsum.axis
                                exclusive:s->p.cumsum.exclusive
                                  reverse:s->p.cumsum.reverse
                                     name:nil];
    case MPS_MTL_CONCAT: return [g concatTensors:(NSArray<MPSGraphTensor *> *)operands dimension:s->p.ax.axis name:nil];
    case MPS_MTL_BROADCAST: return [g broadcastTensor:a toShape:shape name:nil];
    case MPS_MTL_PAD:
        return [g padTensor:a
            withPaddingMode:(MPSGraphPaddingMode)s->p.pad.mode
                leftPadding:mps_mtl_numbers(s->p.pad.left, s->shape.ndim)
               rightPadding:mps_mtl_numbers(s->p.pad.right, s->shape.ndim)
              constantValue:s->p.pad.value
                       name:nil];
    case MPS_MTL_GATHER:
        return [g gatherWithUpdatesTensor:a indicesTensor:b axis:(NSUInteger)s->p.ax.axis batchDimensions:0 name:nil];
    default: return nil;
    }
}

static enum mps_status mps_mtl_step_fail(struct mps_error *err, const struct mps_graph *g, const struct mps_mtl_step *s,
                                         const char *why)
{
    if (s->node < 0)
        return mps_fail(err, MPS_ERR_MODEL, "MPSGraph %s: %s", mps_mtl_kind_name(s->kind), why);
    const struct mps_node *n = &g->nodes[s->node];
    return mps_fail(err, MPS_ERR_MODEL, "node '%s' (%s): MPSGraph %s: %s", n->name, mps_op_name(n->op),
                    mps_mtl_kind_name(s->kind), why);
}

/* The steps in order into plan.graph; tensors[id] gets each result. */
static enum mps_status mps_mtl_transcribe_all(const struct mps_graph *g, const struct mps_mtl_program *p,
                                              MPSGraph *graph, NSMutableArray *tensors, struct mps_error *err)
{
    for (int i = 0; i < p->n_steps; i++) {
        const struct mps_mtl_step *s = &p->steps[i];
        NSMutableArray *operands = [NSMutableArray arrayWithCapacity:(NSUInteger)s->n_in];
        for (int k = 0; k < s->n_in; k++)
            [operands addObject:s->in[k] >= 0 ? tensors[(NSUInteger)s->in[k]] : [NSNull null]];
        MPSGraphTensor *second = nil, *result = nil;
        @try {
            result = mps_mtl_transcribe(graph, s, operands, &second);
        } @catch (NSException *e) {
            return mps_mtl_step_fail(err, g, s, mps_mtl_text(e.reason));
        }
        if (!result || (s->out2 >= 0 && !second))
            return mps_mtl_step_fail(err, g, s, "returned no tensor");
        tensors[(NSUInteger)s->out] = result;
        if (s->out2 >= 0)
            tensors[(NSUInteger)s->out2] = second;
    }
    return MPS_OK;
}

static id<MTLBuffer> mps_mtl_buffer(id<MTLDevice> device, const struct mps_value *v, struct mps_error *err)
{
    size_t bytes = (size_t)mps_shape_numel(&v->shape) * mps_dtype_size(v->dtype);
    id<MTLBuffer> b = [device newBufferWithLength:bytes ? bytes : 1 options:MTLResourceStorageModeShared];
    if (!b)
        mps_fail(err, MPS_ERR_RUNTIME, "mps: cannot allocate %zu bytes of shared memory for '%s'", bytes, v->name);
    return b;
}

/* Tensor data over buffers[i] for each tensor of order (the executable's
   feeds or targets), found among ours (the graph's order). */
static NSArray<MPSGraphTensorData *> *mps_mtl_order(NSArray<MPSGraphTensor *> *order, NSArray<MPSGraphTensor *> *ours,
                                                    NSArray<id<MTLBuffer>> *buffers, const struct mps_graph *g,
                                                    const int *values)
{
    NSMutableArray<MPSGraphTensorData *> *data = [NSMutableArray arrayWithCapacity:order.count];
    for (MPSGraphTensor *t in order) {
        NSUInteger i = [ours indexOfObjectIdenticalTo:t];
        if (i == NSNotFound)
            return nil;
        const struct mps_value *v = &g->values[values[i]];
        [data addObject:[[MPSGraphTensorData alloc] initWithMTLBuffer:buffers[i]
                                                                shape:mps_mtl_shape(&v->shape)
                                                             dataType:mps_mtl_type(v->dtype)]];
    }
    return data;
}

enum mps_status mps_mtl_build(const struct mps_graph *g, const struct mps_mtl_program *p, struct mps_mtl_plan **out,
                              struct mps_error *err)
{
    *out = NULL;
    @autoreleasepool {
        id<MTLDevice> device = mps_mtl_device();
        if (!device)
            return mps_fail(err, MPS_ERR_RUNTIME, "mps: no Metal device");
        MPSRunPlan *plan = [MPSRunPlan new];
        plan.graph = [MPSGraph new];
        NSMutableArray *tensors = [NSMutableArray arrayWithCapacity:(NSUInteger)p->n_tensors];
        for (int i = 0; i < p->n_tensors; i++)
            [tensors addObject:[NSNull null]];
        enum mps_status st = mps_mtl_transcribe_all(g, p, plan.graph, tensors, err);
        if (st)
            return st;

        NSMutableArray<MPSGraphTensor *> *placeholders = [NSMutableArray array], *targets = [NSMutableArray array];
        NSMutableDictionary<MPSGraphTensor *, MPSGraphShapedType *> *feeds = [NSMutableDictionary dictionary];
        for (int i = 0; i < p->n_inputs; i++) {
            const struct mps_value *v = &g->values[g->inputs[i]];
            MPSGraphTensor *t = tensors[(NSUInteger)p->inputs[i]];
            [placeholders addObject:t];
            feeds[t] = [[MPSGraphShapedType alloc] initWithShape:mps_mtl_shape(&v->shape)
                                                        dataType:mps_mtl_type(v->dtype)];
        }
        for (int i = 0; i < p->n_outputs; i++)
            [targets addObject:tensors[(NSUInteger)p->outputs[i]]];
        MPSGraphCompilationDescriptor *cd = [MPSGraphCompilationDescriptor new];
        @try {
            plan.executable = [plan.graph compileWithDevice:[MPSGraphDevice deviceWithMTLDevice:device]
                                                      feeds:feeds
                                              targetTensors:targets
                                           targetOperations:nil
                                      compilationDescriptor:cd];
        } @catch (NSException *e) {
            return mps_fail(err, MPS_ERR_MODEL, "mps: MPSGraph could not compile the model: %s",
                            mps_mtl_text(e.reason));
        }
        if (!plan.executable)
            return mps_fail(err, MPS_ERR_MODEL, "mps: MPSGraph could not compile the model");
        /* the executable orders its inputs and results its own way (feedTensors,
           targetTensors); a placeholder no output depends on may be dropped */
        NSArray<MPSGraphTensor *> *feed_order =
            plan.executable.feedTensors ? plan.executable.feedTensors : placeholders;
        NSArray<MPSGraphTensor *> *target_order =
            plan.executable.targetTensors ? plan.executable.targetTensors : targets;
        NSMutableArray<MPSRunSlot *> *slots = [NSMutableArray arrayWithCapacity:2];
        for (int k = 0; k < 2; k++) {
            MPSRunSlot *slot = [MPSRunSlot new];
            NSMutableArray<id<MTLBuffer>> *inputs = [NSMutableArray array], *outputs = [NSMutableArray array];
            for (int i = 0; i < p->n_inputs; i++) {
                id<MTLBuffer> b = mps_mtl_buffer(device, &g->values[g->inputs[i]], err);
                if (!b)
                    return MPS_ERR_RUNTIME;
                [inputs addObject:b];
            }
            for (int i = 0; i < p->n_outputs; i++) {
                id<MTLBuffer> b = mps_mtl_buffer(device, &g->values[g->outputs[i]], err);
                if (!b)
                    return MPS_ERR_RUNTIME;
                [outputs addObject:b];
            }
            slot.feeds = mps_mtl_order(feed_order, placeholders, inputs, g, g->inputs);
            slot.results = mps_mtl_order(target_order, targets, outputs, g, g->outputs);
            if (!slot.feeds || !slot.results || slot.results.count != (NSUInteger)p->n_outputs)
                return mps_fail(err, MPS_ERR_RUNTIME,
                                "mps: the compiled executable's inputs or outputs are not the model's");
            slot.inputBuffers = inputs;
            slot.outputBuffers = outputs;
            [slots addObject:slot];
        }
        plan.slots = slots;
        plan.queue = [device newCommandQueue];
        if (!plan.queue)
            return mps_fail(err, MPS_ERR_RUNTIME, "mps: cannot create a command queue");
        *out = (struct mps_mtl_plan *)CFBridgingRetain(plan);
        return MPS_OK;
    }
}

enum mps_status mps_mtl_execute(struct mps_mtl_plan *handle, const struct mps_tensor *in, struct mps_tensor *out,
                                struct mps_error *err)
{
    MPSRunPlan *plan = (__bridge MPSRunPlan *)(void *)handle;
    @autoreleasepool {
        /* the slot whose buffers the caller filled (mps_mtl_host_io), else slot 0 and a copy */
        MPSRunSlot *slot = plan.slots[0];
        for (MPSRunSlot *s in plan.slots)
            if (s.inputBuffers.count && s.inputBuffers[0].contents == in[0].data)
                slot = s;
        for (NSUInteger i = 0; i < slot.inputBuffers.count; i++)
            if (slot.inputBuffers[i].contents != in[i].data)
                memcpy(slot.inputBuffers[i].contents, in[i].data, mps_tensor_bytes(&in[i]));
        /* the completion handler carries the run's NSError; the semaphore
           makes sure it has been called before the error is read */
        dispatch_semaphore_t done = dispatch_semaphore_create(0);
        __block NSError *failure = nil;
        MPSGraphExecutableExecutionDescriptor *ed = [MPSGraphExecutableExecutionDescriptor new];
        ed.waitUntilCompleted = YES;
        ed.completionHandler = ^(NSArray<MPSGraphTensorData *> *results, NSError *error) {
          (void)results;
          failure = error;
          dispatch_semaphore_signal(done);
        };
        @try {
            [plan.executable runWithMTLCommandQueue:plan.queue
                                        inputsArray:slot.feeds
                                       resultsArray:slot.results
                                executionDescriptor:ed];
        } @catch (NSException *e) {
            return mps_fail(err, MPS_ERR_RUNTIME, "mps: the run was refused: %s", mps_mtl_text(e.reason));
        }
        dispatch_semaphore_wait(done, DISPATCH_TIME_FOREVER);
        if (failure)
            return mps_fail(err, MPS_ERR_RUNTIME, "mps: the GPU run failed: %s",
                            mps_mtl_text(failure.localizedDescription));
        for (NSUInteger i = 0; i < slot.outputBuffers.count; i++)
            if (slot.outputBuffers[i].contents != out[i].data)
                memcpy(out[i].data, slot.outputBuffers[i].contents, mps_tensor_bytes(&out[i]));
    }
    return MPS_OK;
}

enum mps_status mps_mtl_host_io(struct mps_mtl_plan *handle, const struct mps_graph *g, int k, struct mps_tensor *in,
                                struct mps_tensor *out, struct mps_error *err)
{
    MPSRunPlan *plan = (__bridge MPSRunPlan *)(void *)handle;
    if (k < 0 || (NSUInteger)k >= plan.slots.count)
        return mps_fail(err, MPS_ERR_USAGE, "mps: staging slot %d: there are two, 0 and 1", k);
    MPSRunSlot *slot = plan.slots[(NSUInteger)k];
    for (NSUInteger i = 0; in && i < slot.inputBuffers.count; i++) {
        const struct mps_value *v = &g->values[g->inputs[i]];
        in[i] = mps_tensor_make(v->dtype, &v->shape, slot.inputBuffers[i].contents);
    }
    for (NSUInteger i = 0; out && i < slot.outputBuffers.count; i++) {
        const struct mps_value *v = &g->values[g->outputs[i]];
        out[i] = mps_tensor_make(v->dtype, &v->shape, slot.outputBuffers[i].contents);
    }
    return MPS_OK;
}

void mps_mtl_plan_free(struct mps_mtl_plan *handle)
{
    if (handle)
        CFRelease((CFTypeRef)handle); /* balances CFBridgingRetain in mps_mtl_build */
}

enum mps_status mps_mtl_probe(struct mps_backend_info *info, struct mps_error *err)
{
    @autoreleasepool {
        id<MTLDevice> device = mps_mtl_device();
        if (!device)
            return mps_fail(err, MPS_ERR_RUNTIME, "no Metal device: MTLCreateSystemDefaultDevice returned nil");
        if (!MPSSupportsMTLDevice(device))
            return mps_fail(err, MPS_ERR_RUNTIME, "Metal Performance Shaders do not support %s",
                            mps_mtl_text(device.name));
        snprintf(info->device, sizeof info->device, "%s", mps_mtl_text(device.name));
        info->memory_bytes = device.recommendedMaxWorkingSetSize;
        info->threads = 0;
        snprintf(info->detail, sizeof info->detail,
                 "MPSGraph; recommended working set %.1f GiB, allocated %.1f MiB, %s memory; %s",
                 (double)device.recommendedMaxWorkingSetSize / (1 << 30),
                 (double)device.currentAllocatedSize / (1 << 20), device.hasUnifiedMemory ? "unified" : "discrete",
                 mps_mtl_text(NSProcessInfo.processInfo.operatingSystemVersionString));
    }
    return MPS_OK;
}

/* A rows x columns row-major matrix over buffer. */
static MPSMatrix *mps_mtl_matrix(id<MTLBuffer> buffer, int64_t rows, int64_t columns, MPSDataType type, size_t elem)
{
    MPSMatrixDescriptor *d = [MPSMatrixDescriptor matrixDescriptorWithRows:(NSUInteger)rows
                                                                   columns:(NSUInteger)columns
                                                                  rowBytes:(NSUInteger)columns * elem
                                                                  dataType:type];
    return [[MPSMatrix alloc] initWithBuffer:buffer descriptor:d];
}

enum mps_status mps_mtl_matmul_baseline(int64_t m, int64_t n, int64_t k, enum mps_precision precision, int warmup,
                                        int repeat, double *times_ms, struct mps_error *err)
{
    if (precision == MPS_PRECISION_TF32)
        return mps_fail(err, MPS_ERR_USAGE, "mps: precision tf32 does not exist on Apple GPUs");
    @autoreleasepool {
        id<MTLDevice> device = mps_mtl_device();
        if (!device)
            return mps_fail(err, MPS_ERR_RUNTIME, "mps: no Metal device");
        MPSDataType type = precision == MPS_PRECISION_FP16 ? MPSDataTypeFloat16 : MPSDataTypeFloat32;
        size_t elem = precision == MPS_PRECISION_FP16 ? 2 : 4;
        id<MTLBuffer> a = [device newBufferWithLength:(NSUInteger)(m * k) * elem options:MTLResourceStorageModeShared];
        id<MTLBuffer> b = [device newBufferWithLength:(NSUInteger)(k * n) * elem options:MTLResourceStorageModeShared];
        id<MTLBuffer> c = [device newBufferWithLength:(NSUInteger)(m * n) * elem options:MTLResourceStorageModeShared];
        id<MTLCommandQueue> queue = [device newCommandQueue];
        if (!a || !b || !c || !queue)
            return mps_fail(err, MPS_ERR_RUNTIME, "mps: cannot set up the MPSMatrixMultiplication baseline");
        memset(a.contents, 0, a.length);
        memset(b.contents, 0, b.length);
        MPSMatrix *A = mps_mtl_matrix(a, m, k, type, elem), *B = mps_mtl_matrix(b, k, n, type, elem);
        MPSMatrix *C = mps_mtl_matrix(c, m, n, type, elem);
        MPSMatrixMultiplication *mm = [[MPSMatrixMultiplication alloc] initWithDevice:device
                                                                        transposeLeft:NO
                                                                       transposeRight:NO
                                                                           resultRows:(NSUInteger)m
                                                                        resultColumns:(NSUInteger)n
                                                                      interiorColumns:(NSUInteger)k
                                                                                alpha:1.0
                                                                                 beta:0.0];
        for (int r = 0; r < warmup + repeat; r++) {
            id<MTLCommandBuffer> cb = [queue commandBuffer];
            [mm encodeToCommandBuffer:cb leftMatrix:A rightMatrix:B resultMatrix:C];
            [cb commit];
            [cb waitUntilCompleted];
            if (cb.status == MTLCommandBufferStatusError)
                return mps_fail(err, MPS_ERR_RUNTIME, "mps: MPSMatrixMultiplication failed: %s",
                                mps_mtl_text(cb.error.localizedDescription));
            if (r >= warmup)
                times_ms[r - warmup] = (cb.GPUEndTime - cb.GPUStartTime) * 1e3;
        }
    }
    return MPS_OK;
}
