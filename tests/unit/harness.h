/* harness.h: what the unit tests share: counting and printing results (the
   last line is "N passed, N failed, N skipped"), reproducible random data,
   the backends to test (those not compiled in or unavailable are reported
   skipped by name), running a graph on a backend, evaluating a graph with the
   double-precision reference (ref.h), and comparing by normalized error. */
#ifndef MPS_TEST_HARNESS_H
#define MPS_TEST_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "graph.h"
#include "ref.h"

void th_pass(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void th_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void th_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* true: pass, false: fail with the message. */
bool th_check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the counts; returns the process exit code (1 if anything failed). */
int th_summary(void);

/* Reproducible uniform random numbers. */
void th_seed(const char *name);
double th_uniform(double lo, double hi);

/* The backends to test: compiled in and available, then mps-sim. Reports
   every other known backend as skipped, with the reason, once per call.
   Returns the count. */
int th_backends(const struct mps_backend **list, int max);

/* A test backend: the mps backend's lowering (src/gpu/metal/lower.c),
   executed step by step in double as MPSGraph documents each call
   (mtl_sim.c), so that its decisions are checked numerically on any machine. */
extern const struct mps_backend th_backend_mps_sim;

/* A buffer of n values of dtype t. */
void *th_alloc(enum mps_dtype t, int64_t n);
/* Converts n values of dtype t at p to doubles (f16 through f32). */
void th_to_double(enum mps_dtype t, const void *p, int64_t n, double *out);
/* Writes doubles as dtype t (rounding as the CPU casts). */
void th_from_double(enum mps_dtype t, const double *v, int64_t n, void *p);

/* Adds an initializer of random f32 values in [lo, hi). */
int th_add_random_const(struct mps_graph *g, const char *name, const struct mps_shape *s, double lo, double hi);

/* Compiles g on be and runs it once: in[] as the graph inputs, outputs written
   to freshly allocated out[] (free with th_free_tensors). */
enum mps_status th_run(const struct mps_backend *be, const struct mps_graph *g, const struct mps_tensor *in,
                       struct mps_tensor *out, struct mps_error *err);
void th_free_tensors(struct mps_tensor *t, int n);

/* Evaluates the sorted, inferred graph g in double with ref_op, node by node,
   from in[] (the graph inputs) into out[] (graph outputs, allocated; free the
   .d buffers with free()). Uses each node's params as stored. */
void th_ref_graph(const struct mps_graph *g, const struct mps_tensor *in, struct ref_tensor *out);

/* Normalized mean squared error sum((a-b)^2) / sum(b^2) of got against want;
   infinite when a NaN or an infinity differs. */
double th_nmse(const double *got, const double *want, int64_t n);

#endif
