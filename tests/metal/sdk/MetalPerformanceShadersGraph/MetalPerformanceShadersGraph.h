/* A stand-in for the part of MetalPerformanceShadersGraph.framework that
   bridge.m uses (see Foundation/Foundation.h here for why), each declaration
   as the macOS 14/15 SDK headers write it (MPSGraphCore.h, MPSGraph.h,
   MPSGraphTensor.h, MPSGraphTensorData.h, MPSGraphDevice.h,
   MPSGraphExecutable.h and the ...Ops.h categories). */
#ifndef MPS_STUB_MPSGRAPH_H
#define MPS_STUB_MPSGRAPH_H

#import <MetalPerformanceShaders/MetalPerformanceShaders.h>

NS_ASSUME_NONNULL_BEGIN

@interface MPSGraphObject : NSObject
@end

@interface MPSGraphType : MPSGraphObject <NSCopying>
@end

@interface MPSGraphShapedType : MPSGraphType
- (instancetype)initWithShape:(MPSShape *_Nullable)shape dataType:(MPSDataType)dataType;
@end

typedef NS_ENUM(NSUInteger, MPSGraphTensorNamedDataLayout){
    MPSGraphTensorNamedDataLayoutNCHW = 0, MPSGraphTensorNamedDataLayoutNHWC = 1,
    MPSGraphTensorNamedDataLayoutOIHW = 2, MPSGraphTensorNamedDataLayoutHWIO = 3,
};

typedef NS_ENUM(NSUInteger, MPSGraphPaddingStyle){
    MPSGraphPaddingStyleExplicit = 0, MPSGraphPaddingStyleTF_VALID = 1, MPSGraphPaddingStyleTF_SAME = 2,
};

typedef NS_ENUM(NSInteger, MPSGraphPaddingMode){
    MPSGraphPaddingModeConstant = 0,    MPSGraphPaddingModeReflect = 1, MPSGraphPaddingModeSymmetric = 2,
    MPSGraphPaddingModeClampToEdge = 3,
};

typedef NS_ENUM(NSUInteger, MPSGraphPoolingReturnIndicesMode){
    MPSGraphPoolingReturnIndicesNone,          MPSGraphPoolingReturnIndicesGlobalFlatten1D,
    MPSGraphPoolingReturnIndicesGlobalFlatten2D, MPSGraphPoolingReturnIndicesGlobalFlatten3D,
    MPSGraphPoolingReturnIndicesGlobalFlatten4D,
};

typedef NS_ENUM(uint64_t, MPSGraphOptions){
    MPSGraphOptionsNone = 0,
    MPSGraphOptionsSynchronizeResults = 1,
    MPSGraphOptionsDefault = MPSGraphOptionsSynchronizeResults,
};

@interface MPSGraphDevice : MPSGraphObject
+ (instancetype)deviceWithMTLDevice:(id<MTLDevice>)metalDevice;
@end

@interface MPSGraphOperation : MPSGraphObject <NSCopying>
@end

@interface MPSGraphTensor : MPSGraphObject <NSCopying>
@property(readonly, copy, nullable) MPSShape *shape;
@property(readonly) MPSDataType dataType;
@end

@interface MPSGraphTensorData : NSObject
- (instancetype)initWithMTLBuffer:(id<MTLBuffer>)buffer shape:(MPSShape *)shape dataType:(MPSDataType)dataType;
@end

typedef NSDictionary<MPSGraphTensor *, MPSGraphShapedType *> MPSGraphTensorShapedTypeDictionary;

@interface MPSGraphCompilationDescriptor : MPSGraphObject <NSCopying>
@end

typedef void (^MPSGraphExecutableCompletionHandler)(NSArray<MPSGraphTensorData *> *results, NSError *_Nullable error);

@interface MPSGraphExecutableExecutionDescriptor : MPSGraphObject <NSCopying>
@property(readwrite, atomic) MPSGraphExecutableCompletionHandler completionHandler;
@property(readwrite, atomic) BOOL waitUntilCompleted;
@end

@interface MPSGraphExecutable : MPSGraphObject
@property(readwrite, atomic) MPSGraphOptions options;
@property(readonly, atomic, nullable) NSArray<MPSGraphTensor *> *feedTensors;
@property(readonly, atomic, nullable) NSArray<MPSGraphTensor *> *targetTensors;
- (NSArray<MPSGraphTensorData *> *)runWithMTLCommandQueue:(id<MTLCommandQueue>)commandQueue
                                              inputsArray:(NSArray<MPSGraphTensorData *> *)inputsArray
                                             resultsArray:(NSArray<MPSGraphTensorData *> *_Nullable)resultsArray
                                      executionDescriptor:(MPSGraphExecutableExecutionDescriptor *_Nullable)executionDescriptor;
@end

@interface MPSGraphConvolution2DOpDescriptor : MPSGraphObject <NSCopying>
+ (nullable instancetype)descriptorWithStrideInX:(NSUInteger)strideInX
                                       strideInY:(NSUInteger)strideInY
                                 dilationRateInX:(NSUInteger)dilationRateInX
                                 dilationRateInY:(NSUInteger)dilationRateInY
                                          groups:(NSUInteger)groups
                                     paddingLeft:(NSUInteger)paddingLeft
                                    paddingRight:(NSUInteger)paddingRight
                                      paddingTop:(NSUInteger)paddingTop
                                   paddingBottom:(NSUInteger)paddingBottom
                                    paddingStyle:(MPSGraphPaddingStyle)paddingStyle
                                      dataLayout:(MPSGraphTensorNamedDataLayout)dataLayout
                                   weightsLayout:(MPSGraphTensorNamedDataLayout)weightsLayout;
@end

@interface MPSGraphPooling2DOpDescriptor : MPSGraphObject <NSCopying>
@property(readwrite, nonatomic) MPSGraphPoolingReturnIndicesMode returnIndicesMode;
@property(readwrite, nonatomic) MPSDataType returnIndicesDataType;
@property(readwrite, nonatomic) BOOL ceilMode;
@property(readwrite, nonatomic) BOOL includeZeroPadToAverage;
+ (nullable instancetype)descriptorWithKernelWidth:(NSUInteger)kernelWidth
                                      kernelHeight:(NSUInteger)kernelHeight
                                         strideInX:(NSUInteger)strideInX
                                         strideInY:(NSUInteger)strideInY
                                   dilationRateInX:(NSUInteger)dilationRateInX
                                   dilationRateInY:(NSUInteger)dilationRateInY
                                       paddingLeft:(NSUInteger)paddingLeft
                                      paddingRight:(NSUInteger)paddingRight
                                        paddingTop:(NSUInteger)paddingTop
                                     paddingBottom:(NSUInteger)paddingBottom
                                      paddingStyle:(MPSGraphPaddingStyle)paddingStyle
                                        dataLayout:(MPSGraphTensorNamedDataLayout)dataLayout;
@end

@interface MPSGraph : MPSGraphObject
@property(readwrite, atomic) MPSGraphOptions options;
+ (instancetype)new;
- (MPSGraphExecutable *)compileWithDevice:(MPSGraphDevice *_Nullable)device
                                    feeds:(MPSGraphTensorShapedTypeDictionary *)feeds
                            targetTensors:(NSArray<MPSGraphTensor *> *)targetTensors
                         targetOperations:(NSArray<MPSGraphOperation *> *_Nullable)targetOperations
                    compilationDescriptor:(MPSGraphCompilationDescriptor *_Nullable)compilationDescriptor;
/* MemoryOps */
- (MPSGraphTensor *)placeholderWithShape:(MPSShape *_Nullable)shape
                                dataType:(MPSDataType)dataType
                                    name:(NSString *_Nullable)name;
- (MPSGraphTensor *)constantWithData:(NSData *)data shape:(MPSShape *)shape dataType:(MPSDataType)dataType;
- (MPSGraphTensor *)constantWithScalar:(double)scalar dataType:(MPSDataType)dataType;
- (MPSGraphTensor *)constantWithScalar:(double)scalar shape:(MPSShape *)shape dataType:(MPSDataType)dataType;
/* ArithmeticOps */
- (MPSGraphTensor *)identityWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)exponentWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)logarithmWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)squareRootWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)reciprocalWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)absoluteWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)negativeWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)ceilWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)floorWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)tanhWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)erfWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)sinWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)cosWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)tanWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)asinWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)acosWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)atanWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)sinhWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)coshWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)asinhWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)acoshWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)atanhWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)notWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)signWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)rintWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)additionWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                              secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                         name:(NSString *_Nullable)name;
- (MPSGraphTensor *)subtractionWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                                 secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                            name:(NSString *_Nullable)name;
- (MPSGraphTensor *)multiplicationWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                                    secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                               name:(NSString *_Nullable)name;
- (MPSGraphTensor *)divisionWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                              secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                         name:(NSString *_Nullable)name;
- (MPSGraphTensor *)powerWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                           secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                      name:(NSString *_Nullable)name;
- (MPSGraphTensor *)maximumWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                             secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                        name:(NSString *_Nullable)name;
- (MPSGraphTensor *)minimumWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                             secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                        name:(NSString *_Nullable)name;
- (MPSGraphTensor *)maximumWithNaNPropagationWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                                               secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                                          name:(NSString *_Nullable)name;
- (MPSGraphTensor *)minimumWithNaNPropagationWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                                               secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                                          name:(NSString *_Nullable)name;
- (MPSGraphTensor *)greaterThanWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                                 secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                            name:(NSString *_Nullable)name;
- (MPSGraphTensor *)greaterThanOrEqualToWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                                          secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                                     name:(NSString *_Nullable)name;
- (MPSGraphTensor *)lessThanWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                              secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                         name:(NSString *_Nullable)name;
- (MPSGraphTensor *)lessThanOrEqualToWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                                       secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                                  name:(NSString *_Nullable)name;
- (MPSGraphTensor *)equalWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                           secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                      name:(NSString *_Nullable)name;
- (MPSGraphTensor *)notEqualWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                              secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                         name:(NSString *_Nullable)name;
- (MPSGraphTensor *)logicalANDWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                                secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                           name:(NSString *_Nullable)name;
- (MPSGraphTensor *)logicalORWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                               secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                          name:(NSString *_Nullable)name;
- (MPSGraphTensor *)logicalXORWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                                secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                           name:(NSString *_Nullable)name;
- (MPSGraphTensor *)selectWithPredicateTensor:(MPSGraphTensor *)predicateTensor
                          truePredicateTensor:(MPSGraphTensor *)truePredicateTensor
                         falsePredicateTensor:(MPSGraphTensor *)falseSelectTensor
                                         name:(NSString *_Nullable)name;
/* ActivationOps */
- (MPSGraphTensor *)reLUWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)sigmoidWithTensor:(MPSGraphTensor *)tensor name:(NSString *_Nullable)name;
- (MPSGraphTensor *)softMaxWithTensor:(MPSGraphTensor *)tensor axis:(NSInteger)axis name:(NSString *_Nullable)name;
/* MatrixMultiplicationOps */
- (MPSGraphTensor *)matrixMultiplicationWithPrimaryTensor:(MPSGraphTensor *)primaryTensor
                                          secondaryTensor:(MPSGraphTensor *)secondaryTensor
                                                     name:(NSString *_Nullable)name;
/* ConvolutionOps, ConvolutionTransposeOps */
- (MPSGraphTensor *)convolution2DWithSourceTensor:(MPSGraphTensor *)source
                                    weightsTensor:(MPSGraphTensor *)weights
                                       descriptor:(MPSGraphConvolution2DOpDescriptor *)descriptor
                                             name:(NSString *_Nullable)name;
- (MPSGraphTensor *)convolutionTranspose2DWithSourceTensor:(MPSGraphTensor *)source
                                             weightsTensor:(MPSGraphTensor *)weights
                                               outputShape:(MPSShape *)outputShape
                                                descriptor:(MPSGraphConvolution2DOpDescriptor *)descriptor
                                                      name:(NSString *_Nullable)name;
/* PoolingOps */
- (MPSGraphTensor *)maxPooling2DWithSourceTensor:(MPSGraphTensor *)source
                                      descriptor:(MPSGraphPooling2DOpDescriptor *)descriptor
                                            name:(NSString *_Nullable)name;
- (NSArray<MPSGraphTensor *> *)maxPooling2DReturnIndicesWithSourceTensor:(MPSGraphTensor *)source
                                                              descriptor:(MPSGraphPooling2DOpDescriptor *)descriptor
                                                                    name:(NSString *_Nullable)name;
- (MPSGraphTensor *)avgPooling2DWithSourceTensor:(MPSGraphTensor *)source
                                      descriptor:(MPSGraphPooling2DOpDescriptor *)descriptor
                                            name:(NSString *_Nullable)name;
/* ReductionOps */
- (MPSGraphTensor *)reductionSumWithTensor:(MPSGraphTensor *)tensor
                                      axes:(NSArray<NSNumber *> *_Nullable)axes
                                      name:(NSString *_Nullable)name;
- (MPSGraphTensor *)reductionMaximumWithTensor:(MPSGraphTensor *)tensor
                                          axes:(NSArray<NSNumber *> *_Nullable)axes
                                          name:(NSString *_Nullable)name;
- (MPSGraphTensor *)reductionMinimumWithTensor:(MPSGraphTensor *)tensor
                                          axes:(NSArray<NSNumber *> *_Nullable)axes
                                          name:(NSString *_Nullable)name;
- (MPSGraphTensor *)reductionMaximumPropagateNaNWithTensor:(MPSGraphTensor *)tensor
                                                      axes:(NSArray<NSNumber *> *_Nullable)axes
                                                      name:(NSString *_Nullable)name;
- (MPSGraphTensor *)reductionMinimumPropagateNaNWithTensor:(MPSGraphTensor *)tensor
                                                      axes:(NSArray<NSNumber *> *_Nullable)axes
                                                      name:(NSString *_Nullable)name;
- (MPSGraphTensor *)cumulativeSumWithTensor:(MPSGraphTensor *)tensor
                                       axis:(NSInteger)axis
                                  exclusive:(BOOL)exclusive
                                    reverse:(BOOL)reverse
                                       name:(NSString *_Nullable)name;
- (MPSGraphTensor *)reductionProductWithTensor:(MPSGraphTensor *)tensor
                                          axes:(NSArray<NSNumber *> *_Nullable)axes
                                          name:(NSString *_Nullable)name;
/* NormalizationOps */
- (MPSGraphTensor *)meanOfTensor:(MPSGraphTensor *)tensor axes:(NSArray<NSNumber *> *)axes name:(NSString *_Nullable)name;
- (MPSGraphTensor *)varianceOfTensor:(MPSGraphTensor *)tensor
                          meanTensor:(MPSGraphTensor *)meanTensor
                                axes:(NSArray<NSNumber *> *)axes
                                name:(NSString *_Nullable)name;
- (MPSGraphTensor *)normalizationWithTensor:(MPSGraphTensor *)tensor
                                 meanTensor:(MPSGraphTensor *)mean
                             varianceTensor:(MPSGraphTensor *)variance
                                gammaTensor:(MPSGraphTensor *_Nullable)gamma
                                 betaTensor:(MPSGraphTensor *_Nullable)beta
                                    epsilon:(float)epsilon
                                       name:(NSString *_Nullable)name;
/* TensorShapeOps */
- (MPSGraphTensor *)reshapeTensor:(MPSGraphTensor *)tensor withShape:(MPSShape *)shape name:(NSString *_Nullable)name;
- (MPSGraphTensor *)transposeTensor:(MPSGraphTensor *)tensor
                          dimension:(NSUInteger)dimensionIndex
                      withDimension:(NSUInteger)dimensionIndex2
                               name:(NSString *_Nullable)name;
- (MPSGraphTensor *)transposeTensor:(MPSGraphTensor *)tensor
                        permutation:(NSArray<NSNumber *> *)permutation
                               name:(NSString *_Nullable)name;
- (MPSGraphTensor *)sliceTensor:(MPSGraphTensor *)tensor
                         starts:(NSArray<NSNumber *> *)starts
                           ends:(NSArray<NSNumber *> *)ends
                        strides:(NSArray<NSNumber *> *)strides
                           name:(NSString *_Nullable)name;
- (MPSGraphTensor *)concatTensors:(NSArray<MPSGraphTensor *> *)tensors
                        dimension:(NSInteger)dimensionIndex
                             name:(NSString *_Nullable)name;
- (MPSGraphTensor *)padTensor:(MPSGraphTensor *)tensor
              withPaddingMode:(MPSGraphPaddingMode)paddingMode
                  leftPadding:(MPSShape *)leftPadding
                 rightPadding:(MPSShape *)rightPadding
                constantValue:(double)constantValue
                         name:(NSString *_Nullable)name;
- (MPSGraphTensor *)reverseTensor:(MPSGraphTensor *)tensor
                             axes:(NSArray<NSNumber *> *)axes
                             name:(NSString *_Nullable)name;
- (MPSGraphTensor *)broadcastTensor:(MPSGraphTensor *)tensor toShape:(MPSShape *)shape name:(NSString *_Nullable)name;
- (MPSGraphTensor *)castTensor:(MPSGraphTensor *)tensor toType:(MPSDataType)type name:(NSString *_Nullable)name;
/* GatherOps */
- (MPSGraphTensor *)gatherWithUpdatesTensor:(MPSGraphTensor *)updatesTensor
                              indicesTensor:(MPSGraphTensor *)indicesTensor
                                       axis:(NSUInteger)axis
                            batchDimensions:(NSUInteger)batchDimensions
                                       name:(NSString *_Nullable)name;
@end

NS_ASSUME_NONNULL_END

#endif
