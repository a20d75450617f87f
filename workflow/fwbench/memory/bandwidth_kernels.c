/* fwbench's working-set sweep kernels (likwid-bench / ERT style), loaded with ctypes by
 * fwbench.memory.native. Each OpenMP thread allocates and first-touches its own arrays,
 * then repeats one kernel `reps` times on them inside a single parallel region, so a point's
 * time holds no fork/join or dispatch per repetition. Bytes are counted as STREAM does (the
 * arrays a kernel names, no write-allocate). Element type: double.
 *
 *   read:  s += a[i]          (1 array)
 *   copy:  c[i] = a[i]        (2 arrays)
 *   triad: a[i] = b[i] + q*c[i] (3 arrays)
 */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

enum { KERNEL_READ = 0, KERNEL_COPY = 1, KERNEL_TRIAD = 2 };
#define LANES 32 /* independent accumulators for read: hides the FP add latency */
static const double SCALAR = 3.0, A0 = 1.0, B0 = 2.0, C0 = 0.5;

static double read_kernel(const double *restrict a, long n) {
    double acc[LANES] = {0};
    for (long i = 0; i < n; i += LANES)
        for (int k = 0; k < LANES; k++)
            acc[k] += a[i + k];
    double s = 0.0;
    for (int k = 0; k < LANES; k++)
        s += acc[k];
    return s;
}

static void copy_kernel(double *restrict c, const double *restrict a, long n) {
    for (long i = 0; i < n; i++)
        c[i] = a[i];
}

static void triad_kernel(double *restrict a, const double *restrict b, const double *restrict c,
                         long n) {
    for (long i = 0; i < n; i++)
        a[i] = b[i] + SCALAR * c[i];
}

/* Runs `kernel` `reps` times on every thread (n elements per array per thread, a multiple of
 * LANES). Returns the seconds from the barrier before the first repetition to the barrier after
 * the last, or a negative value on failure: -1 bad arguments, -2 allocation failed, -3 the
 * arrays did not hold the expected values afterwards (a kernel was skipped or wrong). */
double fw_sweep_point(int kernel, long n, long reps) {
    if (n < LANES || n % LANES || reps < 1 || kernel < KERNEL_READ || kernel > KERNEL_TRIAD)
        return -1.0;
    double start = 0.0, elapsed = 0.0;
    int failed = 0;
#pragma omp parallel reduction(| : failed)
    {
        size_t bytes = (size_t)n * sizeof(double);
        double *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);
        double *c = aligned_alloc(64, bytes);
        int ok = a && b && c;
#pragma omp barrier
        if (ok) {
            for (long i = 0; i < n; i++) {
                a[i] = A0;
                b[i] = B0;
                c[i] = C0;
            }
            /* one untimed pass over the arrays the kernel uses: pages mapped, lines in place */
            volatile double sink = read_kernel(a, n);
            if (kernel != KERNEL_READ)
                sink += read_kernel(c, n);
            if (kernel == KERNEL_TRIAD)
                sink += read_kernel(b, n);
            (void)sink;
        }
#pragma omp barrier
#pragma omp master
        start = omp_get_wtime();
        double sum = 0.0;
        if (ok) {
            for (long r = 0; r < reps; r++) {
                if (kernel == KERNEL_READ)
                    sum += read_kernel(a, n);
                else if (kernel == KERNEL_COPY)
                    copy_kernel(c, a, n);
                else
                    triad_kernel(a, b, c, n);
                __asm__ volatile("" ::: "memory"); /* each repetition really happens */
            }
        }
#pragma omp barrier
#pragma omp master
        elapsed = omp_get_wtime() - start;
        if (!ok) {
            failed |= 2;
        } else if (kernel == KERNEL_READ) {
            failed |= sum != (double)reps * (double)n * A0;
        } else {
            const double *out = kernel == KERNEL_COPY ? c : a;
            const double want = kernel == KERNEL_COPY ? A0 : B0 + SCALAR * C0;
            for (long i = 0; i < n; i++)
                failed |= out[i] != want;
        }
        free(a);
        free(b);
        free(c);
    }
    if (failed & 2)
        return -2.0;
    if (failed)
        return -3.0;
    return elapsed;
}

int fw_threads(void) {
    int threads = 0;
#pragma omp parallel
#pragma omp master
    threads = omp_get_num_threads();
    return threads;
}

/* The core clock of every thread at once: a chain of dependent register-to-register adds
 * retires one per cycle, so adds / seconds is the clock the cores run at under load (turbo
 * included). Adds of an immediate are not used: Golden Cove and later fold those at rename,
 * several per cycle. Writes
 * each thread's Hz to hz[0..threads-1]; returns the thread count, or 0 where the chain has no
 * assembly for this ISA. */
int fw_clock_hz(long iterations, double *hz, int capacity) {
#if defined(__x86_64__) || defined(__aarch64__)
    int threads = 0;
#pragma omp parallel
    {
        uint64_t x = 0, one = 1;
        double t0 = omp_get_wtime();
        for (long i = 0; i < iterations; i++) {
#if defined(__x86_64__)
#define ADD1 "add %1, %0\n\t"
#else
#define ADD1 "add %0, %0, %1\n\t"
#endif
#define ADD4 ADD1 ADD1 ADD1 ADD1
            __asm__ volatile(ADD4 ADD4 ADD4 ADD4 : "+r"(x) : "r"(one)); /* 16 dependent adds */
        }
        double seconds = omp_get_wtime() - t0;
        int id = omp_get_thread_num();
        if (id < capacity)
            hz[id] = 16.0 * (double)iterations / seconds;
#pragma omp master
        threads = omp_get_num_threads();
    }
    return threads < capacity ? threads : capacity;
#else
    (void)iterations;
    (void)hz;
    (void)capacity;
    return 0;
#endif
}
