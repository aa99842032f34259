/* isa.h: which family of the CPU backend's own kernels runs, chosen once per
   process from what the CPU and the OS support (cpuid and xgetbv on x86-64,
   the hardware capabilities on arm64), never from the model or the CPU's name.

       const struct mps_ukernels *k;
       if (mps_isa_kernels(&k, &err) == MPS_OK)
           printf("%s: %d x %d tiles\n", k->name, k->mr, k->nr);

   MPSRUN_CPU_KERNELS=avx512|avx2|neon|c picks a family by name, so that every
   family this CPU can run can be tested on it; naming one it cannot run is an
   error that says why (no silent fallback). Families, fastest first: avx512
   (AVX-512F), avx2 (AVX2 and FMA), neon (arm64 Advanced SIMD), c (portable C,
   whatever the compiler makes of it). */
#ifndef MPS_CPU_ISA_H
#define MPS_CPU_ISA_H

#include <stdbool.h>

#include "../status.h"
#include "ukernels.h"

/* The family this process runs (the environment's choice, else the best the
   CPU supports); MPS_ERR_USAGE when MPSRUN_CPU_KERNELS names one it cannot run
   or none at all. The table is static: never freed. */
enum mps_status mps_isa_kernels(const struct mps_ukernels **k, struct mps_error *err);
/* The family called name ("avx2"), when this CPU runs it; else NULL and err
   says why (unknown name, not built for this architecture, not supported). */
const struct mps_ukernels *mps_isa_find(const char *name, struct mps_error *err);
/* Every family this build holds, best first, and whether this CPU runs each. */
int mps_isa_list(const struct mps_ukernels *const **all);
/* The int8 tile family k runs on this CPU: the first of k->q it runs (the
   avx512 family's needs VNNI, the avx2 family's AVX-VNNI; without it, the
   avx2 tile), else the portable one. MPSRUN_INT8_KERNELS=NAME picks one of
   them (or c), so that a tile the CPU passes over is tested on it too. */
const struct mps_uqgemm *mps_isa_qgemm(const struct mps_ukernels *k);
/* MPS_ERR_USAGE where MPSRUN_INT8_KERNELS names no int8 tile of k's that
   this CPU runs (a plan's compile asks: no silent fallback). */
enum mps_status mps_isa_check_int8(const struct mps_ukernels *k, struct mps_error *err);
bool mps_isa_runs(const struct mps_ukernels *k);

#endif
