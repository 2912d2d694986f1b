/*===- AllocationCounter.c - counts heap allocations, for LD_PRELOAD ------===//
 *
 * Preloaded into a rank executable by the e2e tests: every malloc, calloc,
 * realloc, aligned_alloc, posix_memalign and memalign (operator new calls
 * malloc) goes to glibc's own implementation and is counted, and
 * zbc_rt_test_allocations() returns the count, which the runtime reads
 * before and after each step (Rank.cpp) to report the allocations made
 * during steps: "no allocation after start-up" as a number a test checks.
 * Only the rank's own thread counts, and not while the runtime is inside
 * MPI (zbc_rt_test_pause_allocations): the transport's internals (lazy
 * connections, fragment lists, ORTE's progress thread) are MPI's memory,
 * not the arena's.
 * With ZBC_ALLOC_TRACE set, every allocation after the runtime's first
 * look at the count prints a backtrace to stderr, to find the culprit.
 *
 *===----------------------------------------------------------------------===*/
#include <execinfo.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static uint64_t allocations;
static int armed, tracing;
static __thread int counting, paused;

static void count(void) {
  if (!counting || paused)
    return;
  __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
  if (armed && !tracing) {
    void *frames[32];
    tracing = 1; /* backtrace() may allocate the first time */
    backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    tracing = 0;
  }
}

void zbc_rt_test_pause_allocations(int pause) { paused = pause; }

uint64_t zbc_rt_test_allocations(void) {
  counting = 1; /* the thread that asks is the one that counts */
  if (!armed && getenv("ZBC_ALLOC_TRACE"))
    armed = 1;
  return __atomic_load_n(&allocations, __ATOMIC_RELAXED);
}

void *malloc(size_t size) {
  count();
  return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
  count();
  return __libc_calloc(n, size);
}

void *realloc(void *pointer, size_t size) {
  count();
  return __libc_realloc(pointer, size);
}

void *memalign(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
  count();
  void *p = __libc_memalign(alignment, size);
  if (!p)
    return 12; /* ENOMEM */
  *out = p;
  return 0;
}
