/* fwbench's speed canary (fwbench.memory.canary): two fixed-work kernels a benchmark cell runs
 * between its timed samples, and the hardware stage runs quietly for their baseline. Single
 * threaded, no OpenMP (it is loaded into framework processes that bring their own runtime),
 * compiled without -march=native so one build serves every node of an architecture.
 *
 *   fw_canary_chain: a chain of dependent register adds (one per cycle): the core's speed;
 *   fw_canary_read:  s += a[i] over a slice of a buffer sized to a memory level: that level's
 *                    speed (a DRAM-sized buffer is walked slice by slice, so every slice
 *                    comes from DRAM).
 * Each returns its own elapsed nanoseconds (CLOCK_MONOTONIC), or -1 for bad arguments.
 */
#include <stdint.h>
#include <time.h>

#define LANES 8

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t fw_canary_chain(int64_t iterations) {
    if (iterations < 1)
        return -1;
    uint64_t x = 0, one = 1;
    int64_t start = now_ns();
    for (int64_t i = 0; i < iterations; i++) {
#if defined(__x86_64__)
#define ADD1 "add %1, %0\n\t"
#elif defined(__aarch64__)
#define ADD1 "add %0, %0, %1\n\t"
#endif
#if defined(ADD1)
#define ADD4 ADD1 ADD1 ADD1 ADD1
        __asm__ volatile(ADD4 ADD4 ADD4 ADD4 : "+r"(x) : "r"(one)); /* 16 dependent adds */
#else
        for (int k = 0; k < 16; k++)
            x = x * 3 + one; /* dependent, not foldable: the chain on other ISAs */
        __asm__ volatile("" : "+r"(x));
#endif
    }
    int64_t elapsed = now_ns() - start;
    volatile uint64_t sink = x;
    (void)sink;
    return elapsed;
}

/* Reads `count` doubles of `a` starting at `offset` (both multiples of LANES), `reps` times. */
int64_t fw_canary_read(const double *a, int64_t offset, int64_t count, int64_t reps) {
    if (!a || count < LANES || count % LANES || offset < 0 || offset % LANES || reps < 1)
        return -1;
    const double *p = a + offset;
    double acc[LANES] = {0};
    int64_t start = now_ns();
    for (int64_t r = 0; r < reps; r++) {
        for (int64_t i = 0; i < count; i += LANES)
            for (int k = 0; k < LANES; k++)
                acc[k] += p[i + k];
        __asm__ volatile("" ::: "memory"); /* each repetition really reads */
    }
    int64_t elapsed = now_ns() - start;
    double s = 0.0;
    for (int k = 0; k < LANES; k++)
        s += acc[k];
    volatile double sink = s;
    (void)sink;
    return elapsed;
}
