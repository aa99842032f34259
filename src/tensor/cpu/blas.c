#include "blas.h"

#include <stdio.h>
#include <string.h>

#if defined(MPSRUN_BLAS_ACCELERATE)

const char *mps_blas_name(void)
{
    return "Accelerate";
}

int mps_blas_threads(void)
{
    return 0;
}

void mps_blas_set_threads(int n)
{
    (void)n; /* Accelerate chooses its own threads */
}

#else

#include <dlfcn.h>

const char *mps_blas_name(void)
{
    static char name[160];
    if (!name[0]) {
        /* openblas_get_config() reads "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64":
           keep the name and version, then say which kernels run here */
        char product[32] = "OpenBLAS", version[32] = "";
        sscanf(openblas_get_config(), "%31s %31s", product, version);
        snprintf(name, sizeof name, "%s %s (%s kernels)", product, version, openblas_get_corename());
    }
    return name;
}

int mps_blas_threads(void)
{
    return openblas_get_num_threads();
}

/* One thread: OpenBLAS's pthread build also stops its workers. They start
   when the library loads and spin on sched_yield for 2^28 cycles (about
   0.1 s) after it and after each threaded call, taking a core from the
   pool's workers: `mpsrun infer` of one image on 2 cores took 68-96 ms for
   squeezenet1_1's first run in 7 of 12 processes (2-11.5 ms after; its
   steady run is 1.7). Its next threaded call starts
   them again (exec_blas). blas_thread_shutdown_ is what its fork handler
   calls; looked up at run time, since other builds (OpenMP, serial) and
   other versions need not have it. */
void mps_blas_set_threads(int n)
{
    openblas_set_num_threads(n);
    if (n != 1 || openblas_get_parallel() != OPENBLAS_THREAD)
        return;
    void *self = dlopen(NULL, RTLD_LAZY); /* the program and the libraries it loaded */
    int (*stop)(void) = NULL;
    if (self)
        *(void **)&stop = dlsym(self, "blas_thread_shutdown_");
    if (stop)
        stop();
    if (self)
        dlclose(self);
}

#endif
