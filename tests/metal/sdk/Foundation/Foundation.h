/* A stand-in for the part of Apple's Foundation (and CoreFoundation, libdispatch)
   that src/gpu/metal/bridge.m uses, declared as the macOS SDK declares it, so
   that clang can type-check bridge.m under ARC on a machine without the SDK
   (tests/metal/check_objc.sh). Not a replacement for the real check against
   the SDK before release: it only knows what is written here. */
#ifndef MPS_STUB_FOUNDATION_H
#define MPS_STUB_FOUNDATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef long NSInteger;
typedef unsigned long NSUInteger;
#if defined(__arm64__) || defined(__aarch64__) /* objc.h: OBJC_BOOL_IS_BOOL on arm64 */
typedef bool BOOL;
#else
typedef signed char BOOL;
#endif
#define YES ((BOOL)1)
#define NO ((BOOL)0)
static const NSInteger NSNotFound = 0x7fffffffffffffffL;
typedef double CFTimeInterval;
#define nil ((id)0)
#define Nil ((Class)0)
typedef const void *CFTypeRef;
#define NS_ENUM(type, name) enum name : type name; enum name : type
#define NS_OPTIONS(type, name) enum name : type name; enum name : type
#define NS_ASSUME_NONNULL_BEGIN _Pragma("clang assume_nonnull begin")
#define NS_ASSUME_NONNULL_END _Pragma("clang assume_nonnull end")

NS_ASSUME_NONNULL_BEGIN

@class NSString;

@protocol NSObject
- (BOOL)isKindOfClass:(Class)aClass;
@end

__attribute__((objc_root_class))
@interface NSObject <NSObject>
+ (instancetype)new;
+ (instancetype)alloc;
- (instancetype)init;
+ (Class)class;
- (BOOL)isKindOfClass:(Class)aClass;
@end

@protocol NSCopying
- (id)copyWithZone:(nullable void *)zone;
@end

typedef struct {
    unsigned long state;
    id __unsafe_unretained _Nullable *_Nullable itemsPtr;
    unsigned long *_Nullable mutationsPtr;
    unsigned long extra[5];
} NSFastEnumerationState;

@protocol NSFastEnumeration
- (NSUInteger)countByEnumeratingWithState:(NSFastEnumerationState *)state
                                  objects:(id __unsafe_unretained _Nullable[_Nonnull])buffer
                                    count:(NSUInteger)len;
@end

@interface NSString : NSObject <NSCopying>
@property(nullable, readonly) const char *UTF8String;
@end

@interface NSNumber : NSObject <NSCopying>
+ (NSNumber *)numberWithInt:(int)value;
+ (NSNumber *)numberWithUnsignedInt:(unsigned int)value;
+ (NSNumber *)numberWithLong:(long)value;
+ (NSNumber *)numberWithLongLong:(long long)value;
+ (NSNumber *)numberWithUnsignedLong:(unsigned long)value;
+ (NSNumber *)numberWithDouble:(double)value;
@end

@interface NSArray<__covariant ObjectType> : NSObject <NSCopying, NSFastEnumeration>
@property(readonly) NSUInteger count;
- (ObjectType)objectAtIndexedSubscript:(NSUInteger)idx;
- (NSUInteger)indexOfObjectIdenticalTo:(ObjectType)anObject;
@end

@interface NSMutableArray<ObjectType> : NSArray<ObjectType>
+ (instancetype)array;
+ (instancetype)arrayWithCapacity:(NSUInteger)numItems;
- (void)addObject:(ObjectType)anObject;
- (void)setObject:(ObjectType)obj atIndexedSubscript:(NSUInteger)idx;
@end

@interface NSDictionary<KeyType, __covariant ObjectType> : NSObject <NSCopying, NSFastEnumeration>
- (nullable ObjectType)objectForKeyedSubscript:(KeyType)key;
@end

@interface NSMutableDictionary<KeyType, ObjectType> : NSDictionary<KeyType, ObjectType>
+ (instancetype)dictionary;
- (void)setObject:(nullable ObjectType)obj forKeyedSubscript:(KeyType<NSCopying>)key;
@end

@interface NSData : NSObject <NSCopying>
+ (instancetype)dataWithBytes:(nullable const void *)bytes length:(NSUInteger)length;
@end

@interface NSNull : NSObject <NSCopying>
+ (NSNull *)null;
@end

@interface NSError : NSObject <NSCopying>
@property(readonly, copy) NSString *localizedDescription;
@end

@interface NSException : NSObject <NSCopying>
@property(nullable, readonly, copy) NSString *reason;
@end

@interface NSProcessInfo : NSObject
@property(class, readonly, strong) NSProcessInfo *processInfo;
@property(readonly, copy) NSString *operatingSystemVersionString;
@end

void CFRelease(CFTypeRef cf);
static inline CFTypeRef CFBridgingRetain(id _Nullable X)
{
    return (__bridge_retained CFTypeRef)X;
}

/* libdispatch, with dispatch objects as ARC-managed objects (OS_OBJECT_USE_OBJC) */
@protocol OS_dispatch_semaphore <NSObject>
@end
typedef NSObject<OS_dispatch_semaphore> *dispatch_semaphore_t;
typedef uint64_t dispatch_time_t;
typedef long dispatch_once_t;
#define DISPATCH_TIME_FOREVER (~0ull)
dispatch_semaphore_t dispatch_semaphore_create(long value);
long dispatch_semaphore_signal(dispatch_semaphore_t dsema);
long dispatch_semaphore_wait(dispatch_semaphore_t dsema, dispatch_time_t timeout);
void dispatch_once(dispatch_once_t *predicate, void (^block)(void));

NS_ASSUME_NONNULL_END

#endif
