/* isa.c: the kernel families this build holds and the one this process runs. */
#include "isa.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <stdatomic.h>

#include "ukernel_x86.h"

/* XCR0: the register state the OS saves on a context switch. */
static unsigned long long mps_x86_xcr0(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_OSXSAVE))
        return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* CPUID leaf 7's EBX (0 where the leaf is missing). */
static unsigned mps_x86_leaf7_ebx(void)
{
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) ? ebx : 0;
}

static bool mps_x86_ask_avx2(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_FMA))
        return false;
    return (mps_x86_xcr0() & 0x6) == 0x6 && (mps_x86_leaf7_ebx() & bit_AVX2);
}

static bool mps_x86_ask_vnni(void)
{
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 11));
}

static bool mps_x86_ask_vbmi(void) /* CPUID leaf 7: ECX bit 1 (AVX512_VBMI), EBX bit 30 (AVX512BW) */
{
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 1)) && (ebx & (1u << 30));
}

static bool mps_x86_ask_avxvnni(void) /* CPUID leaf 7, subleaf 1, EAX bit 4 */
{
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4));
}

/* What the CPU and OS run, asked once: CPUID traps to the hypervisor in a
   VM (microseconds a call), and the int8 nodes ask at each run. */
enum {
    MPS_X86_KNOWN = 1,
    MPS_X86_AVX2 = 2,
    MPS_X86_AVX512 = 4,
    MPS_X86_VNNI = 8,
    MPS_X86_AVXVNNI = 16,
    MPS_X86_VBMI = 32
};
static unsigned mps_x86_features(void)
{
    static _Atomic unsigned known;
    unsigned f = atomic_load_explicit(&known, memory_order_relaxed);
    if (f)
        return f;
    f = MPS_X86_KNOWN;
    if (mps_x86_ask_avx2())
        f |= MPS_X86_AVX2;
    /* XMM, YMM, the opmask registers and both halves of ZMM state */
    if ((f & MPS_X86_AVX2) && (mps_x86_xcr0() & 0xe6) == 0xe6 && (mps_x86_leaf7_ebx() & bit_AVX512F))
        f |= MPS_X86_AVX512;
    if ((f & MPS_X86_AVX512) && mps_x86_ask_vnni())
        f |= MPS_X86_VNNI;
    if ((f & MPS_X86_AVX512) && mps_x86_ask_vbmi())
        f |= MPS_X86_VBMI;
    if ((f & MPS_X86_AVX2) && mps_x86_ask_avxvnni())
        f |= MPS_X86_AVXVNNI;
    atomic_store_explicit(&known, f, memory_order_relaxed);
    return f;
}

bool mps_x86_has_avx2(void)
{
    return mps_x86_features() & MPS_X86_AVX2;
}

bool mps_x86_has_avx512(void)
{
    return mps_x86_features() & MPS_X86_AVX512;
}

bool mps_x86_has_vnni(void)
{
    return mps_x86_features() & MPS_X86_VNNI;
}

bool mps_x86_has_vbmi(void)
{
    return mps_x86_features() & MPS_X86_VBMI;
}

bool mps_x86_has_avxvnni(void)
{
    return mps_x86_features() & MPS_X86_AVXVNNI;
}

static const struct mps_ukernels *const mps_isa_all[] = {&mps_ukernels_avx512, &mps_ukernels_avx2, &mps_ukernels_c};
#elif defined(__aarch64__)
#if defined(__APPLE__)
#include <sys/sysctl.h>
#elif defined(__linux__)
#include <sys/auxv.h>
#endif

bool mps_neon_has_dotprod(void)
{
#if defined(__APPLE__)
    int v = 0;
    size_t len = sizeof v;
    return sysctlbyname("hw.optional.arm.FEAT_DotProd", &v, &len, NULL, 0) == 0 && v;
#elif defined(__linux__)
    return (getauxval(AT_HWCAP) & (1ul << 20)) != 0; /* HWCAP_ASIMDDP */
#else
    return false;
#endif
}

static const struct mps_ukernels *const mps_isa_all[] = {&mps_ukernels_neon, &mps_ukernels_c};
#else
static const struct mps_ukernels *const mps_isa_all[] = {&mps_ukernels_c};
#endif

#define MPS_ISA_COUNT ((int)(sizeof mps_isa_all / sizeof mps_isa_all[0]))

/* Family k's int8 tile called name that this CPU runs ("c": the portable
   one), or NULL. */
static const struct mps_uqgemm *mps_isa_qnamed(const struct mps_ukernels *k, const char *name)
{
    if (!strcmp(name, mps_uqgemm_c.name))
        return &mps_uqgemm_c;
    for (int i = 0; i < 2; i++)
        if (k && k->q[i] && !strcmp(k->q[i]->name, name) && k->q[i]->supported())
            return k->q[i];
    return NULL;
}

const struct mps_uqgemm *mps_isa_qgemm(const struct mps_ukernels *k)
{
    const char *want = getenv("MPSRUN_INT8_KERNELS");
    const struct mps_uqgemm *q = want && want[0] ? mps_isa_qnamed(k, want) : NULL;
    if (q) /* else mps_isa_check_int8 refused it when the plan was made */
        return q;
    for (int i = 0; i < 2; i++)
        if (k && k->q[i] && k->q[i]->supported())
            return k->q[i];
    return &mps_uqgemm_c;
}

enum mps_status mps_isa_check_int8(const struct mps_ukernels *k, struct mps_error *err)
{
    const char *want = getenv("MPSRUN_INT8_KERNELS");
    if (!want || !want[0] || mps_isa_qnamed(k, want))
        return MPS_OK;
    char names[96] = "";
    for (int i = 0; i < 2; i++)
        if (k->q[i] && k->q[i]->supported())
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s, ", k->q[i]->name);
    return mps_fail(err, MPS_ERR_USAGE,
                    "MPSRUN_INT8_KERNELS=%s: not an int8 tile of the %s kernels this CPU runs (%sc)", want, k->name,
                    names);
}

int mps_isa_list(const struct mps_ukernels *const **all)
{
    *all = mps_isa_all;
    return MPS_ISA_COUNT;
}

bool mps_isa_runs(const struct mps_ukernels *k)
{
    return k->supported();
}

const struct mps_ukernels *mps_isa_find(const char *name, struct mps_error *err)
{
    static const char *const known[] = {"avx512", "avx2", "neon", "c"};
    for (int i = 0; i < MPS_ISA_COUNT; i++)
        if (strcmp(mps_isa_all[i]->name, name) == 0) {
            if (mps_isa_all[i]->supported())
                return mps_isa_all[i];
            mps_fail(err, MPS_ERR_USAGE, "this CPU does not run the %s kernels (%s)", name,
                     mps_isa_all[i]->describe);
            return NULL;
        }
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i], name) == 0) {
            mps_fail(err, MPS_ERR_USAGE, "the %s kernels are not built for this architecture", name);
            return NULL;
        }
    mps_fail(err, MPS_ERR_USAGE, "unknown CPU kernel family '%s' (avx512, avx2, neon or c)", name);
    return NULL;
}

enum mps_status mps_isa_kernels(const struct mps_ukernels **k, struct mps_error *err)
{
    const char *want = getenv("MPSRUN_CPU_KERNELS");
    if (want && want[0]) {
        struct mps_error why = {{0}};
        if (!(*k = mps_isa_find(want, &why)))
            return mps_fail(err, MPS_ERR_USAGE, "MPSRUN_CPU_KERNELS=%s: %s", want, why.msg);
        return MPS_OK;
    }
    for (int i = 0; i < MPS_ISA_COUNT; i++)
        if (mps_isa_all[i]->supported()) {
            *k = mps_isa_all[i];
            return MPS_OK;
        }
    *k = &mps_ukernels_c;
    return MPS_OK;
}
