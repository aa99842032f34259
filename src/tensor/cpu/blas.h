/* blas.h: the BLAS the CPU backend was built with (OpenBLAS or Accelerate),
   behind one small interface, so that no other file knows which it is.
   Matrix products call cblas_sgemm from <cblas.h> (or Accelerate) through
   mps_cpu_sgemm_ld (gemm.c), which splits them over the backend's pool. */
#ifndef MPS_BLAS_H
#define MPS_BLAS_H

#if defined(MPSRUN_BLAS_ACCELERATE)
#include <Accelerate/Accelerate.h>
#else
#include <cblas.h>
#endif

/* "OpenBLAS 0.3.21 (Haswell, pthread)" or "Accelerate". */
const char *mps_blas_name(void);
/* Threads the BLAS uses for one call; 0 when it does not say. */
int mps_blas_threads(void);
/* Asks the BLAS to use n threads (n >= 1); a no-op where it cannot be set.
   n = 1 also stops OpenBLAS's own workers where its build allows. */
void mps_blas_set_threads(int n);

#endif
