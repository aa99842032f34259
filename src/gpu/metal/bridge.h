/* bridge.h: the Objective-C side of the Apple GPU backend (bridge.m), seen
   from C. No Objective-C type crosses this header: a compiled model is an
   opaque handle that bridge.m owns (an ARC object retained for C).

       struct mps_mtl_plan *plan;
       mps_mtl_build(g, program, &plan, &err);   // one MPSGraph, compiled once
       mps_mtl_execute(plan, in, out, &err);     // as often as wanted
       mps_mtl_plan_free(plan);

   Every Apple API bridge.m calls, with the macOS version it needs (the
   backend requires macOS 13: transposeTensor:permutation:name:):
     Metal        MTLCreateSystemDefaultDevice, -newCommandQueue,
                  -newBufferWithLength:options: (MTLResourceStorageModeShared),
                  -recommendedMaxWorkingSetSize (10.12), -currentAllocatedSize (10.13),
                  -hasUnifiedMemory (10.15), MTLCommandBuffer -GPUStartTime/-GPUEndTime (10.15)
     MPS          MPSSupportsMTLDevice, MPSMatrixDescriptor, MPSMatrix, MPSMatrixMultiplication (10.13)
     MPSGraph     11.0: MPSGraph, placeholders, constants, arithmetic (sign, rint, comparisons,
                  equal/notEqual, logical not/AND/OR/XOR), select, matmul,
                  convolution2D, convolutionTranspose2D, pooling 2D, reductions (sum, max, min,
                  product), mean/variance,
                  normalization, softMax, reshape, transpose (2 dims), slice, concat, pad,
                  gather, MPSGraphTensorData -initWithMTLBuffer:shape:dataType:
                  12.0: castTensor, broadcastTensor, reverseTensor, pooling ceilMode and
                  includeZeroPadToAverage, MPSGraphDevice, compileWithDevice:..., MPSGraphExecutable
                  -runWithMTLCommandQueue:inputsArray:resultsArray:executionDescriptor:,
                  MPSGraphExecutableExecutionDescriptor
                  12.2: maxPooling2DReturnIndices, returnIndicesMode GlobalFlatten4D
                  13.0: transposeTensor:permutation:name:, cumulativeSumWithTensor:axis:exclusive:reverse:name: */
#ifndef MPS_METAL_BRIDGE_H
#define MPS_METAL_BRIDGE_H

#include "backend.h"
#include "lower.h"

struct mps_mtl_plan;

/* The default Metal device: name, memory, MPS support. */
enum mps_status mps_mtl_probe(struct mps_backend_info *info, struct mps_error *err);

/* Transcribes program p (lowered from g) into one MPSGraph, compiles it into
   an MPSGraphExecutable for its static shapes, and allocates shared-storage
   buffers for the inputs and outputs, two sets. MPSGraph exceptions become
   MPS_ERR_MODEL naming the node. g and p may be freed afterwards. */
enum mps_status mps_mtl_build(const struct mps_graph *g, const struct mps_mtl_program *p, struct mps_mtl_plan **plan,
                              struct mps_error *err);
/* Copies in[] into the shared input buffers, runs the executable once on
   the command queue (one command buffer, waited for), copies the results
   out. Tensors as mps_plan_run checked them. A plan has two sets of shared
   buffers (slots); in[] that are a slot's own buffers (mps_mtl_host_io) run
   from there without a copy, and out[] that are its outputs are not copied. */
enum mps_status mps_mtl_execute(struct mps_mtl_plan *plan, const struct mps_tensor *in, struct mps_tensor *out,
                                struct mps_error *err);
/* Slot k's shared buffers as tensors of g's inputs and outputs (unified
   memory: the CPU writes what the GPU reads). */
enum mps_status mps_mtl_host_io(struct mps_mtl_plan *plan, const struct mps_graph *g, int k, struct mps_tensor *in,
                                struct mps_tensor *out, struct mps_error *err);
/* NULL is a no-op. */
void mps_mtl_plan_free(struct mps_mtl_plan *plan);

/* MPSMatrixMultiplication C[m,n] = A[m,k] B[k,n] on shared buffers, each
   call one command buffer timed on the GPU (GPUEndTime - GPUStartTime):
   `bench matmul`'s baseline beside the MPSGraph path. */
enum mps_status mps_mtl_matmul_baseline(int64_t m, int64_t n, int64_t k, enum mps_precision precision, int warmup,
                                        int repeat, double *times_ms, struct mps_error *err);

#endif
