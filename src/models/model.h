/* model.h: loading ONNX files into the graph IR, and the graph passes.

       struct mps_model *m;
       struct mps_error err = {{0}};
       struct mps_onnx_opts opts = {.n_shapes = 1, .shapes = &input_shape};  // or {0}: batch 1
       if (mps_onnx_load("net.onnx", &opts, &m, &err) != MPS_OK)   // MPS_ERR_MODEL: the message
           ...                                                     // names the node, op and reason
       // m->graph is sorted, folded, inferred and optimized, ready for a backend:
       mps_passes_fuse(m->graph, backend);                         // activations, where it can run them
       ...
       mps_model_free(m);

   A model is loaded for concrete input shapes: symbolic dims (a free batch)
   take their size from opts.shapes, or 1. Load again for other shapes. Inputs
   that steer shapes (a Reshape's shape fed as an input) must be given as
   opts.values: the model is then specialized for them.
   External data (model.onnx.data) is read relative to the model's folder.

   float16 and bfloat16 are storage types here: the graph computes them in
   f32. Weights are widened at load; an f16 (bf16) input is an f32 input of
   the graph, rounded to f16 (bf16) where it is read, and such an output an
   f32 output holding f16 (bf16) values; a Cast to either rounds and stays
   f32. The file's own types stay in inputs[].dtype and output_dtype[] for
   the caller's files (a bf16 one is an f32 array there: numpy has none). */
#ifndef MPS_MODEL_H
#define MPS_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "graph.h"

struct mps_onnx_opts {
    int n_shapes;                   /* 0, or the number of graph inputs */
    const struct mps_shape *shapes; /* actual input shapes, in graph input order */
    const struct mps_tensor *values; /* optional, n_shapes entries: an input whose .data is set becomes that
                                        constant (shape tensors, axes, bounds given at run time in a file) */
    bool no_optimize;               /* skip Identity removal and BatchNormalization folding */
    const int *counts;              /* per input of the file (its runtime ones, in order): how many tensors a sequence
                                       input holds, for an optional 1 or, empty, -1; NULL: none is given (a model with
                                       such an input then fails). shapes[] and values[] take their tensors in place. */
};

/* What a graph input or output of the file is. A sequence or optional is
   count tensors of the graph (inputs from first on, named "name[i]"; outputs
   likewise): sequences exist at load only, every position known then. */
enum mps_io_kind { MPS_IO_TENSOR, MPS_IO_SEQUENCE, MPS_IO_OPTIONAL };
struct mps_model_io {
    const char *name; /* graph-owned */
    enum mps_io_kind kind;
    int first, count; /* the graph's inputs (outputs) [first, first + count); an empty optional: count 0 */
};

struct mps_model_meta {
    const char *key, *value; /* graph-owned */
};

struct mps_model_input {
    bool symbolic[MPS_MAX_DIMS]; /* dim i was symbolic (or missing) in the file */
    const char *dim_name[MPS_MAX_DIMS]; /* its name ("batch", "N"), or NULL */
    enum mps_dtype dtype; /* as the file declares it: f16 where the graph's input is the f32 it widens to */
};

struct mps_model {
    struct mps_graph *graph;     /* owns every string below */
    int64_t ir_version;
    int64_t opset;               /* of the default ("ai.onnx") domain */
    const char *producer;        /* "pytorch 1.13.1" */
    const char *path;            /* as given to the loader */
    struct mps_model_meta *meta; /* metadata_props */
    int n_meta;
    struct mps_model_input *inputs; /* per graph input */
    enum mps_dtype *output_dtype;   /* per graph output, as the file declares it: f16 where the graph's output is
                                       f32 (holding f16 values); else the graph's */
    int n_widened;                  /* f16 and bf16 tensors, inputs, outputs and Casts computed in f32 */
    struct mps_model_io *in_io, *out_io; /* per input (output) of the file: the graph's that hold it */
    int n_in_io, n_out_io;
};

/* Loads the ONNX file path. On failure *model is NULL and err says why:
   MPS_ERR_MODEL for a bad or unsupported file (node, op, reason),
   MPS_ERR_INPUT when opts.shapes do not fit the model's inputs,
   MPS_ERR_RUNTIME when out of memory. */
enum mps_status mps_onnx_load(const char *path, const struct mps_onnx_opts *opts, struct mps_model **model,
                              struct mps_error *err);
/* A model file parsed once (read, checked, its protobuf decoded), from which
   models are built for the input shapes each run needs without reading the
   file again (a stream compiles one per batch size and input size):

       struct mps_onnx_file *f;
       mps_onnx_open("net.onnx", &f, &err);
       mps_onnx_model(f, &(struct mps_onnx_opts){.n_shapes = 1, .shapes = &s}, &m, &err);
       ...
       mps_onnx_close(f);   // the models built stay valid

   mps_onnx_load is open, model, close. */
struct mps_onnx_file;
enum mps_status mps_onnx_open(const char *path, struct mps_onnx_file **f, struct mps_error *err);
enum mps_status mps_onnx_model(const struct mps_onnx_file *f, const struct mps_onnx_opts *opts,
                               struct mps_model **model, struct mps_error *err);
/* The runtime inputs as the file declares them, before any model is built
   (one may not build at the shapes a free dim defaults to): up to max
   names, shapes and dtypes (NULL: not wanted; MPS_DTYPE_COUNT for a type
   mpsrun has not), a free dim -1 (symbolic in decl, with its name). The
   strings live as long as f. The count, or -1 when there are more than max
   or one has no declared shape. */
int mps_onnx_inputs(const struct mps_onnx_file *f, const char **names, struct mps_shape *shapes,
                    struct mps_model_input *decl, enum mps_dtype *dtypes, int max);
/* The model for shapes[n] (per runtime input, as mps_onnx_inputs lists
   them), whose dims of -1 it chooses: a batch (dim 0) 1, another 1 as well,
   or where the model cannot be built so (a MaxPool would make an empty
   plane of a 1x1 image), the first of 32, 224 and 1024 it builds at. The
   error is the one at 1. What every input shape shares (the inputs, the
   outputs' ranks, a classifier's classes) can be read from it. */
enum mps_status mps_onnx_model_free(const struct mps_onnx_file *f, int n, const struct mps_shape *shapes,
                                    struct mps_model **model, struct mps_error *err);
/* The kinds of the file's runtime inputs (outputs: of its outputs), in
   order, into kinds[max]: their number, or -1 when there are more. */
int mps_onnx_io_kinds(const struct mps_onnx_file *f, bool outputs, enum mps_io_kind *kinds, int max);
/* The path it was opened from. */
const char *mps_onnx_path(const struct mps_onnx_file *f);
/* NULL is a no-op. */
void mps_onnx_close(struct mps_onnx_file *f);
/* Static quantization (mpsrun quantize; onnx_qdq.c). The float products
   it takes: Conv (2-D), MatMul and Gemm (not transposing A, alpha and beta
   1) whose weights are float initializers, but those whose node is named in
   exclude. Their input tensors and their outputs (after a Relu or Clip
   that alone reads one) are the points to calibrate: *names gets them
   (strings of f; the array the caller frees), *n_nodes the products. */
enum mps_status mps_qdq_points(const struct mps_onnx_file *f, const char *const *exclude, int n_exclude,
                               const char ***names, int *n, int *n_nodes, struct mps_error *err);
/* Adds the n points to f's outputs (float tensors), so that the models
   built from f compute them; mps_qdq_write takes them off again. */
enum mps_status mps_qdq_observe(struct mps_onnx_file *f, const char *const *names, int n, struct mps_error *err);
/* Rewrites f as a standard QDQ model: each point a QuantizeLinear and a
   DequantizeLinear (uint8, the range [lo, hi] widened to hold 0) that
   every reader reads through; each product's weights int8 per output
   channel (symmetric) and its bias int32 (scale x's times the weight's),
   dequantized by DequantizeLinear. *buf (malloc'd) and *len get the file's
   bytes; f is changed for good. */
enum mps_status mps_qdq_write(struct mps_onnx_file *f, const char *const *names, const float *lo, const float *hi,
                              int n, const char *const *exclude, int n_exclude, unsigned char **buf, size_t *len,
                              struct mps_error *err);

/* The same from the bytes of a model file in memory; external data is read
   relative to dir. (The fuzz target's entry point.) */
enum mps_status mps_onnx_load_buffer(const void *buf, size_t len, const char *dir, const struct mps_onnx_opts *opts,
                                     struct mps_model **model, struct mps_error *err);
/* What mps_onnx_load checks of a file before reading it whole: that the
   size bytes open at fd are a sequence of protobuf fields (a field number
   from 1, a wire type protobuf writes, a length inside the file), read a
   few bytes a field. MPS_ERR_MODEL naming the byte where it is not. */
enum mps_status mps_onnx_walk(int fd, int64_t size, struct mps_error *err);
/* Frees the model and its graph; NULL is a no-op. */
void mps_model_free(struct mps_model *m);
/* The metadata value stored under key, or NULL. */
const char *mps_model_meta(const struct mps_model *m, const char *key);
/* Whether graph output i holds probabilities: a Softmax writes it, or (output 0)
   the metadata says "output": "probabilities". Checks compare these as logs (compare.h). */
bool mps_model_probabilities(const struct mps_model *m, int i);

/* Reads a serialized TensorProto file (the ONNX test suite's input_0.pb) into
   a new buffer (*data, free with free()) of dtype and shape *t. */
enum mps_status mps_onnx_read_tensor_file(const char *path, struct mps_tensor *t, struct mps_error *err);
/* The same for a value of kind: a TensorProto, a SequenceProto or an
   OptionalProto (of a tensor or a sequence), its tensors into t[max] (free
   each .data): *n of them; an empty optional *n -1. */
enum mps_status mps_onnx_read_value_file(const char *path, enum mps_io_kind kind, struct mps_tensor *t, int max, int *n,
                                         struct mps_error *err);

/* Graph passes (passes.c). mps_onnx_load runs the first two. */
/* Shape inference over the whole graph, folding every node whose inputs are
   constants (and every Shape node) into a constant as it goes. */
enum mps_status mps_passes_fold(struct mps_graph *g, struct mps_error *err);
/* The same for value v alone, on demand, before the graph is sorted (the
   loader asks it of an If's condition): the shapes of the values it depends
   on inferred, each node before it that fold would fold folded. *known:
   whether v is a constant now. */
enum mps_status mps_passes_fold_value(struct mps_graph *g, int v, bool *known, struct mps_error *err);
/* Removes Identity and Dropout, folds BatchNormalization into the Conv or
   Gemm before it. Results change by float rounding at most. */
enum mps_status mps_passes_optimize(struct mps_graph *g, struct mps_error *err);
/* Fuses activations into the Conv, ConvTranspose or Gemm before them where
   be can run the fused node. */
enum mps_status mps_passes_fuse(struct mps_graph *g, const struct mps_backend *be, struct mps_error *err);

#endif
