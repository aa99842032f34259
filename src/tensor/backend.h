/* backend.h: the backend interface, the registry, and compiled plans.

   A backend is a const table of function pointers (entries marked optional
   may be NULL). It compiles a whole graph once into a plan and runs the plan
   as one unit:

       const struct mps_backend *be;
       char why[256];
       mps_backend_choose(g, "auto", &be, why, sizeof why, &err);   // cpu, "no GPU backend is compiled in"
       struct mps_plan *plan;
       mps_plan_compile(be, g, &(struct mps_compile_opts){.threads = 0}, &plan, &err);
       mps_plan_run(plan, inputs, outputs, &err);   // as often as wanted; allocates nothing
       mps_plan_free(plan);

   The registry is the only place where build options (MPSRUN_WITH_*) decide
   which backends exist; GPU backends come first so that "auto" prefers them. */
#ifndef MPS_BACKEND_H
#define MPS_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "status.h"
#include "tensor.h"

enum mps_precision { MPS_PRECISION_FP32, MPS_PRECISION_TF32, MPS_PRECISION_FP16 };
#define MPS_PRECISION_BIT(p) (1u << (p))

struct mps_compile_opts {
    int threads;                  /* CPU threads; 0: one per core */
    enum mps_precision precision; /* backends without it refuse to compile */
    const char *cpu_kernels;      /* cpu: its kernel family by name (avx512, avx2, neon, c; src/tensor/cpu/isa.h);
                                     NULL: MPSRUN_CPU_KERNELS, else the best this CPU runs */
};

struct mps_backend_info {
    char device[128];      /* "Intel Xeon ... (2 cores)", "NVIDIA H100 80GB HBM3" */
    uint64_t memory_bytes; /* device (or system) memory; 0 when unknown */
    int threads;           /* CPU threads a run uses by default (the pool's for cpu); 0 for GPUs */
    char detail[256];      /* backend specifics: BLAS, driver version, ... */
    double peak_gflops;    /* fp32 multiply-adds at the device's clock, GFLOP/s; 0 when unknown */
};

struct mps_backend {
    const char *name;        /* "cpu", "cuda", "mps": what --backend takes */
    const char *description; /* one line for `mpsrun info` */
    unsigned precisions;     /* MPS_PRECISION_BIT of each precision it computes in; compile refuses the others */
    /* MPS_OK when the backend can run on this machine, with info filled;
       otherwise a status and the reason in err (no device, driver too old). */
    enum mps_status (*probe)(struct mps_backend_info *info, struct mps_error *err);
    /* Optional: whether node n of the inferred graph g can run here; NULL: every node. */
    bool (*supports)(const struct mps_graph *g, const struct mps_node *n);
    /* Compiles the inferred graph g into *state (owned by the backend until
       free). g must outlive the state. */
    enum mps_status (*compile)(const struct mps_graph *g, const struct mps_compile_opts *opts, void **state,
                               struct mps_error *err);
    /* Runs: in[] in graph input order, out[] in graph output order, contiguous
       host tensors of the graph's dtypes and shapes, owned by the caller. */
    enum mps_status (*run)(void *state, const struct mps_tensor *in, struct mps_tensor *out, struct mps_error *err);
    /* Optional, for backends that stage through host memory of their own (a
       GPU's pinned buffers): fills in[] and out[] (graph order, the graph's
       dtypes and shapes) with tensors on that memory. A run given in[] there
       copies nothing in; out[] there, nothing out. Two slots (0, 1), so that
       a caller can fill one while the other runs. Owned by the state. */
    enum mps_status (*host_io)(void *state, int slot, struct mps_tensor *in, struct mps_tensor *out,
                               struct mps_error *err);
    /* Frees state; NULL is a no-op. */
    void (*free)(void *state);
    /* Optional: the caller will not run the plan for a while (a stream that
       reports a chunk and waits for the next one to be decoded): release the
       CPUs a run keeps warm between runs (cpu: its threads stop spinning). */
    void (*rest)(void *state);
    /* Optional: output's shape in the last run. A backend that has it runs
       nodes whose outputs are bounded (mps_value.bounded: the size is the
       run's); one without it is given none (mps_backend_unsupported). */
    void (*run_shape)(void *state, int output, struct mps_shape *shape);
    /* Optional: runs like run and writes each node's time, in milliseconds, into
       node_ms (one per node of the graph, in its order). `bench model --profile`. */
    enum mps_status (*profile)(void *state, const struct mps_tensor *in, struct mps_tensor *out, double *node_ms,
                               struct mps_error *err);
    /* Optional, for backends with memory of their own (GPUs): runs the compiled
       unit again on the inputs the last run copied in, leaves the outputs on
       the device (nothing crosses to or from the host) and waits for it. What
       `bench` reports as the resident time, comparable to a GPU library's
       timing of data already on the device. */
    enum mps_status (*rerun)(void *state, struct mps_error *err);
    /* Optional: times C[m,n] = A[m,k] B[k,n] through the vendor library called
       directly on the backend's own buffers (cblas_sgemm, cuBLAS, MPS), warmup
       then repeat calls into times_ms: `bench matmul`'s baseline. */
    enum mps_status (*bench_baseline)(int64_t m, int64_t n, int64_t k, enum mps_precision precision, int threads,
                                      int warmup, int repeat, double *times_ms, struct mps_error *err);
};

/* Whether node n of g computes only in the dtypes the GPU backends' kernels
   are written for: f32 and f16 math, i64 and i32 integer arithmetic, u8 and
   bool in comparisons and logic. f64 and the other integers (i8, i16, u16,
   u32, u64), bf16 and strings the cpu computes; on a GPU they are refused. Each GPU
   backend's supports() calls it. */
bool mps_node_gpu_dtypes(const struct mps_graph *g, const struct mps_node *n);

/* The backends compiled in, GPU ones first; *count gets their number. */
const struct mps_backend *const *mps_backend_list(int *count);
/* The backend compiled in under name, or NULL. */
const struct mps_backend *mps_backend_find(const char *name);

/* The usage error for a backend name mps_backend_find does not know: one of
   the backends mpsrun has but this build lacks, or no backend at all. */
enum mps_status mps_backend_unknown(const char *name, struct mps_error *err);
/* Picks the backend for g. name "auto": the first available GPU backend that
   supports every node, else cpu; why says why ("requested", or why no GPU
   backend ran it, each one's reason after a ';'). An explicit name that is
   not compiled in, not available, or cannot run every node is an error: the
   message lists the unsupported nodes. */
enum mps_status mps_backend_choose(const struct mps_graph *g, const char *name, const struct mps_backend **be,
                                   char *why, size_t why_size, struct mps_error *err);

/* Writes "node 'a' (Op), node 'b' (Op)" for the nodes be cannot run into buf;
   returns how many there are. */
int mps_backend_unsupported(const struct mps_backend *be, const struct mps_graph *g, char *buf, size_t size);

struct mps_plan {
    const struct mps_backend *backend;
    const struct mps_graph *graph; /* not owned; must outlive the plan */
    void *state;                   /* the backend's */
};

/* Compiles g with be into *plan (free with mps_plan_free). */
enum mps_status mps_plan_compile(const struct mps_backend *be, const struct mps_graph *g,
                                 const struct mps_compile_opts *opts, struct mps_plan **plan, struct mps_error *err);
/* Checks in[] and out[] against the graph's inputs and outputs (dtype and
   shape, MPS_ERR_INPUT when they differ), then runs the backend. */
enum mps_status mps_plan_run(struct mps_plan *plan, const struct mps_tensor *in, struct mps_tensor *out,
                             struct mps_error *err);
void mps_plan_free(struct mps_plan *plan);
/* Output i's shape in the last run: the graph's, or for a bounded output
   (mps_value.bounded: a NonMaxSuppression's, a Unique's) the size the run
   computed; its elements are the first of out[i]'s buffer, contiguous. */
void mps_plan_output_shape(const struct mps_plan *plan, int i, struct mps_shape *shape);
/* The backend's host_io (in[] and out[] on its staging slot), where it has
   one; else MPS_ERR_USAGE, and the caller uses memory of its own. */
enum mps_status mps_plan_host_io(struct mps_plan *plan, int slot, struct mps_tensor *in, struct mps_tensor *out,
                                 struct mps_error *err);
/* The backend's rest, where it has one. */
void mps_plan_rest(struct mps_plan *plan);

/* The backends' tables (backend.c lists those compiled in). */
extern const struct mps_backend mps_backend_cpu;
extern const struct mps_backend mps_backend_cuda;
extern const struct mps_backend mps_backend_metal;

#endif
