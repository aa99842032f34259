/* avx2only.c: an LD_PRELOAD library that makes the process see a CPU without AVX-512 and without AVX-VNNI,
 * as an AMD Zen 3 or an Intel client CPU before Alder Lake: scripts/bench-peers --as-avx2 runs mpsrun,
 * onnxruntime and PyTorch under it so that all three pick their AVX2 kernels on the same machine (onnxruntime
 * and PyTorch have no switch of their own for that).
 *
 * Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID, 0) turns every CPUID instruction of the process into a
 * SIGSEGV; the handler here runs the real CPUID with faulting lifted for that one instruction, clears the
 * feature bits below from leaf 7 and steps over the instruction. Threads inherit the setting; exec resets it.
 * A program that sets its own SIGSEGV handler (node does) gets it called for every other fault: sigaction is
 * wrapped so that ours stays installed. Libraries that read CPUID in their constructors before this one's
 * (OpenBLAS) see the real CPU: bench-peers names OpenBLAS's kernels by OPENBLAS_CORETYPE instead.
 * Where the kernel or CPU cannot fault on CPUID, the process stops at start with a message.
 *
 *   cc -O2 -shared -fPIC -o avx2only.so avx2only.c -ldl
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define BIT(n) (1u << (n))

/* leaf 7, subleaf 0: EBX AVX512 F, DQ, IFMA, PF, ER, CD, BW, VL; ECX VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ;
   EDX 4VNNIW, 4FMAPS, VP2INTERSECT, FP16. Subleaf 1: EAX AVX-VNNI, AVX512_BF16, AVX-IFMA; EDX AVX-VNNI-INT8. */
static const uint32_t HIDE_7_0_EBX = BIT(16) | BIT(17) | BIT(21) | BIT(26) | BIT(27) | BIT(28) | BIT(30) | BIT(31);
static const uint32_t HIDE_7_0_ECX = BIT(1) | BIT(6) | BIT(11) | BIT(12) | BIT(14);
static const uint32_t HIDE_7_0_EDX = BIT(2) | BIT(3) | BIT(8) | BIT(23);
static const uint32_t HIDE_7_1_EAX = BIT(4) | BIT(5) | BIT(23);
static const uint32_t HIDE_7_1_EDX = BIT(4);

typedef int sigaction_fn(int, const struct sigaction *, struct sigaction *);
static sigaction_fn *real_sigaction;
static int installed;                   /* ours is SIGSEGV's handler */
static struct sigaction program_action; /* the program's own SIGSEGV action, for faults that are not CPUID */

static sigaction_fn *real(void)
{
    if (!real_sigaction)
        real_sigaction = (sigaction_fn *)dlsym(RTLD_NEXT, "sigaction");
    return real_sigaction;
}

static long cpuid_faulting(int on)
{
    return syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1);
}

static void pass_on(int sig, siginfo_t *info, void *context)
{
    if (program_action.sa_flags & SA_SIGINFO) {
        program_action.sa_sigaction(sig, info, context);
    } else if (program_action.sa_handler != SIG_DFL && program_action.sa_handler != SIG_IGN) {
        program_action.sa_handler(sig);
    } else {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        real()(SIGSEGV, &dfl, NULL);
        raise(SIGSEGV); /* delivered on return: the default action, a core as without this library */
    }
}

static void on_segv(int sig, siginfo_t *info, void *context)
{
    greg_t *reg = ((ucontext_t *)context)->uc_mcontext.gregs;
    const uint8_t *ip = (const uint8_t *)reg[REG_RIP];
    if (info->si_code != SI_KERNEL || ip[0] != 0x0f || ip[1] != 0xa2) {
        pass_on(sig, info, context);
        return;
    }
    uint32_t leaf = (uint32_t)reg[REG_RAX], sub = (uint32_t)reg[REG_RCX];
    uint32_t a = leaf, b, c = sub, d;
    cpuid_faulting(0);
    __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
    cpuid_faulting(1);
    if (leaf == 7 && sub == 0) {
        b &= ~HIDE_7_0_EBX;
        c &= ~HIDE_7_0_ECX;
        d &= ~HIDE_7_0_EDX;
    } else if (leaf == 7 && sub == 1) {
        a &= ~HIDE_7_1_EAX;
        d &= ~HIDE_7_1_EDX;
    }
    reg[REG_RAX] = a;
    reg[REG_RBX] = b;
    reg[REG_RCX] = c;
    reg[REG_RDX] = d;
    reg[REG_RIP] += 2;
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (sig != SIGSEGV || !installed)
        return real()(sig, act, old);
    if (old)
        *old = program_action;
    if (act)
        program_action = *act;
    return 0;
}

__attribute__((constructor)) static void start(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    if (!real() || real()(SIGSEGV, &sa, &program_action) != 0 || cpuid_faulting(1) != 0) {
        fprintf(stderr, "avx2only: this kernel or CPU cannot fault on CPUID (arch_prctl ARCH_SET_CPUID): "
                        "AVX-512 cannot be hidden here\n");
        _exit(2);
    }
    installed = 1;
}
