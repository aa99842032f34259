/* tensor.h: dtypes, shapes and tensors of the mpsrun tensor core.

   A tensor is a dtype, a shape of up to MPS_MAX_DIMS dims, strides in
   elements, and a pointer into memory that somebody else owns (the graph for
   initializers, a backend's arena for activations, the caller for inputs):

       struct mps_tensor t = mps_tensor_make(MPS_F32, &shape, buf);
       float *x = t.data;  // contiguous: t.stride[t.shape.ndim - 1] == 1

   Shapes are validated when they enter the core (mps_shape_numel checks for
   negative dims and overflow), so code past the loader can trust them. */
#ifndef MPS_TENSOR_H
#define MPS_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define MPS_MAX_DIMS 8

/* Largest element count one tensor may have: keeps byte sizes far from
   overflow and rejects absurd dims in a model before anything is allocated. */
#define MPS_MAX_NUMEL ((int64_t)1 << 40)

enum mps_dtype {
    MPS_F32, /* compute type */
    MPS_F16, /* storage and GPU compute; IEEE binary16 bit patterns */
    MPS_I64, /* shapes and indices, as ONNX writes them */
    MPS_I32,
    MPS_U8,
    MPS_BOOL, /* one byte, 0 or 1 */
    MPS_F64,  /* double: Cast, the layout ops, and the cpu's arithmetic, reductions and CumSum */
    MPS_I8,   /* the other integers: Cast, layout, comparisons, and the cpu's arithmetic */
    MPS_I16,
    MPS_U16,
    MPS_U32,
    MPS_U64,
    MPS_BF16,   /* bfloat16 bit patterns: storage; Cast converts them */
    MPS_STRING, /* one `const char *` an element (NUL-terminated UTF-8), the characters kept as long as the
                   pointers are (the graph's arena, a plan until its next run, the caller): the layout ops move
                   them, Cast and StringNormalizer make them; no arithmetic, no GPU */
    MPS_DTYPE_COUNT
};

struct mps_shape {
    int ndim;                   /* 0 for a scalar */
    int64_t dim[MPS_MAX_DIMS];  /* each >= 0 */
};

struct mps_tensor {
    enum mps_dtype dtype;
    struct mps_shape shape;
    int64_t stride[MPS_MAX_DIMS]; /* in elements */
    void *data;                   /* not owned */
};

/* A copy of the n strings s[] in one malloc'd block (the pointers, then the
   characters), which free() releases whole; NULL when out of memory. */
void *mps_strings_dup(const char *const *s, int64_t n);
size_t mps_dtype_size(enum mps_dtype t);
const char *mps_dtype_name(enum mps_dtype t);
/* f32, f16, bf16, f64. */
bool mps_dtype_is_float(enum mps_dtype t);
/* The integer dtypes, signed and unsigned (not bool). */
bool mps_dtype_is_int(enum mps_dtype t);
bool mps_dtype_is_unsigned(enum mps_dtype t); /* u8, u16, u32, u64 */

/* Element i of data p of dtype t as a double (a 64-bit integer beyond 2^53
   rounded). */
double mps_elem_get(const void *p, enum mps_dtype t, int64_t i);
/* Writes v at element i of p: floats round to nearest even, integers
   truncate toward zero and saturate (NaN gives 0: C leaves those undefined,
   ONNX does too, so the safe answer), bool is v != 0. */
void mps_elem_set(void *p, enum mps_dtype t, int64_t i, double v);
/* Element i of an integer or bool dtype, exact: its value, or a u64's bits. */
int64_t mps_elem_get_int(const void *p, enum mps_dtype t, int64_t i);
/* Writes the low bits of v at element i (integers wrap, as ONNX's do). */
void mps_elem_set_int(void *p, enum mps_dtype t, int64_t i, int64_t v);

/* Number of elements, or -1 when a dim is negative or the product of the nonzero dims
   exceeds MPS_MAX_NUMEL (so that strides never overflow, even for an empty tensor). */
int64_t mps_shape_numel(const struct mps_shape *s);
bool mps_shape_eq(const struct mps_shape *a, const struct mps_shape *b);
/* Writes "[1,3,224,224]" into buf; returns buf. */
char *mps_shape_str(const struct mps_shape *s, char *buf, size_t size);
/* numpy broadcasting of a and b into out; MPS_ERR_MODEL with a reason if incompatible. */
enum mps_status mps_shape_broadcast(const struct mps_shape *a, const struct mps_shape *b,
                                    struct mps_shape *out, struct mps_error *err);
/* Strides (in elements) of src broadcast to the shape out: 0 on broadcast dims,
   right-aligned as numpy does. src must broadcast to out. */
void mps_shape_broadcast_strides(const struct mps_shape *src, const struct mps_shape *out,
                                 int64_t stride[MPS_MAX_DIMS]);
/* Row-major strides of s. */
void mps_shape_strides(const struct mps_shape *s, int64_t stride[MPS_MAX_DIMS]);
/* A walk over dims dim[0..nd) of n_ops operands, operand j at strides st[j]:
   drops dims of size 1 and merges neighbours that every operand steps through
   contiguously (the same elements in the same order, fewer index divisions: a
   same-shape Add walks one flat dim). Rewrites dim and st, returns the new
   rank, at least 1 (a scalar walks one dim of 1 at stride 0). */
int mps_walk_merge(int nd, int64_t *dim, int n_ops, int64_t *const *st);
/* Resolves a possibly negative axis against ndim; -1 when out of range. */
int mps_axis(int64_t axis, int ndim);

/* A contiguous tensor over data. */
struct mps_tensor mps_tensor_make(enum mps_dtype t, const struct mps_shape *s, void *data);
size_t mps_tensor_bytes(const struct mps_tensor *t);

/* A MatMul of shapes a and b as 2-D products C_i[m,n] = A_i[m,k] B_i[k,n]:
   1-D operands promoted as numpy does, batch dims broadcast. Shared by the
   backends so that each only issues GEMMs. */
struct mps_matmul_geom {
    int64_t m, n, k, batches;
    bool fold;                  /* one B for every batch: one GEMM of m * batches rows */
    struct mps_shape batch;     /* the broadcast batch shape */
    int64_t sa[MPS_MAX_DIMS], sb[MPS_MAX_DIMS]; /* batch strides, in matrices */
};
struct mps_matmul_geom mps_matmul_geom(const struct mps_shape *a, const struct mps_shape *b);
/* Element offsets of batch i's A and B matrices. */
void mps_matmul_offsets(const struct mps_matmul_geom *g, int64_t i, int64_t *oa, int64_t *ob);

float mps_f16_to_f32(uint16_t h);
float mps_bf16_to_f32(uint16_t h);
uint16_t mps_f32_to_bf16(float f); /* to nearest even; a NaN stays a quiet NaN */
uint16_t mps_f32_to_f16(float f); /* to nearest even; beyond 65504 an infinity */
/* Copies n values of the float dtype from (f16, bf16, f32, f64) at src to dtype to
   at dst, rounded to nearest even where to is narrower (f64 to f16 through
   f32: twice, which can differ from numpy's once by an ulp in a near tie).
   Where f16 and f64 inputs and outputs meet the f32 the graph computes in. */
void mps_convert_floats(enum mps_dtype from, const void *src, enum mps_dtype to, void *dst, int64_t n);

#endif
