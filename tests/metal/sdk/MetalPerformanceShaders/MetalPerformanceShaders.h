/* A stand-in for the part of MetalPerformanceShaders.framework that bridge.m
   uses (see Foundation/Foundation.h here for why), declared as MPSCoreTypes.h,
   MPSKernel.h, MPSMatrixTypes.h and MPSMatrixMultiplication.h declare it. */
#ifndef MPS_STUB_MPS_H
#define MPS_STUB_MPS_H

#import <Metal/Metal.h>

NS_ASSUME_NONNULL_BEGIN

typedef NS_ENUM(uint32_t, MPSDataType){
    MPSDataTypeInvalid = 0,
    MPSDataTypeFloatBit = 0x10000000,
    MPSDataTypeFloat32 = MPSDataTypeFloatBit | 32,
    MPSDataTypeFloat16 = MPSDataTypeFloatBit | 16,
    MPSDataTypeSignedBit = 0x20000000,
    MPSDataTypeInt32 = MPSDataTypeSignedBit | 32,
    MPSDataTypeInt64 = MPSDataTypeSignedBit | 64,
    MPSDataTypeUInt8 = 8,
    MPSDataTypeAlternateEncodingBit = 0x80000000,
    MPSDataTypeBool = MPSDataTypeAlternateEncodingBit | 8,
};

typedef NSArray<NSNumber *> MPSShape;

BOOL MPSSupportsMTLDevice(id<MTLDevice> _Nullable device);

@interface MPSKernel : NSObject <NSCopying>
@end

@interface MPSMatrixDescriptor : NSObject
+ (instancetype)matrixDescriptorWithRows:(NSUInteger)rows
                                          columns:(NSUInteger)columns
                                         rowBytes:(NSUInteger)rowBytes
                                         dataType:(MPSDataType)dataType;
@end

@interface MPSMatrix : NSObject
- (instancetype)initWithBuffer:(id<MTLBuffer>)buffer descriptor:(MPSMatrixDescriptor *)descriptor;
@end

@interface MPSMatrixMultiplication : MPSKernel
- (instancetype)initWithDevice:(id<MTLDevice>)device
                 transposeLeft:(BOOL)transposeLeft
                transposeRight:(BOOL)transposeRight
                    resultRows:(NSUInteger)resultRows
                 resultColumns:(NSUInteger)resultColumns
               interiorColumns:(NSUInteger)interiorColumns
                         alpha:(double)alpha
                          beta:(double)beta;
- (void)encodeToCommandBuffer:(id<MTLCommandBuffer>)commandBuffer
                   leftMatrix:(MPSMatrix *)leftMatrix
                  rightMatrix:(MPSMatrix *)rightMatrix
                 resultMatrix:(MPSMatrix *)resultMatrix;
@end

NS_ASSUME_NONNULL_END

#endif
