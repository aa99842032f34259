/* A stand-in for the part of Apple's Metal.framework that bridge.m uses
   (see Foundation/Foundation.h here for why), declared as MTLDevice.h,
   MTLBuffer.h, MTLCommandQueue.h and MTLCommandBuffer.h declare it. */
#ifndef MPS_STUB_METAL_H
#define MPS_STUB_METAL_H

#import <Foundation/Foundation.h>

NS_ASSUME_NONNULL_BEGIN

typedef NS_OPTIONS(NSUInteger, MTLResourceOptions){
    MTLResourceStorageModeShared = 0 << 4,
    MTLResourceStorageModePrivate = 2 << 4,
};

typedef NS_ENUM(NSUInteger, MTLCommandBufferStatus){
    MTLCommandBufferStatusNotEnqueued = 0, MTLCommandBufferStatusEnqueued = 1, MTLCommandBufferStatusCommitted = 2,
    MTLCommandBufferStatusScheduled = 3,   MTLCommandBufferStatusCompleted = 4, MTLCommandBufferStatusError = 5,
};

@protocol MTLBuffer <NSObject>
- (void *)contents;
@property(readonly) NSUInteger length;
@end

@protocol MTLCommandBuffer <NSObject>
- (void)commit;
- (void)waitUntilCompleted;
@property(readonly) MTLCommandBufferStatus status;
@property(nullable, readonly) NSError *error;
@property(readonly) CFTimeInterval GPUStartTime;
@property(readonly) CFTimeInterval GPUEndTime;
@end

@protocol MTLCommandQueue <NSObject>
- (nullable id<MTLCommandBuffer>)commandBuffer;
@end

@protocol MTLDevice <NSObject>
@property(nonnull, readonly) NSString *name;
@property(readonly) uint64_t recommendedMaxWorkingSetSize;
@property(readonly) NSUInteger currentAllocatedSize;
@property(readonly) BOOL hasUnifiedMemory;
- (nullable id<MTLCommandQueue>)newCommandQueue;
- (nullable id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
@end

id<MTLDevice> _Nullable MTLCreateSystemDefaultDevice(void);

NS_ASSUME_NONNULL_END

#endif
