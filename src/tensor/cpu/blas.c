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

void mps_blas_set_threads(int n)
{
    openblas_set_num_threads(n);
}

#endif
