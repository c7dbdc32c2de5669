/* streamsan annotations: tell the sanitizer what a launch or the host really
 * accesses, where inference from kernel arguments is too coarse.
 *
 * Header-only C and C++. Every call is a no-op unless the program runs under
 * `streamsan run` (the injection library is loaded): the functions look the
 * library up with dlopen(RTLD_NOLOAD) on first use, so nothing needs to be
 * linked and an unsanitized build pays a getenv per call.
 *
 *   #include <streamsan/annotate.h>
 *
 *   // The next kernel on `s` reads in[0, n) and writes out[0, n) only
 *   // (inference would take everything from each pointer to the end of its
 *   // allocation).
 *   streamsan_range r[] = {{in, n * sizeof(float), STREAMSAN_READ},
 *                          {out, n * sizeof(float), STREAMSAN_WRITE}};
 *   streamsan_annotate_next_launch(s, r, 2);
 *   scale<<<grid, block, 0, s>>>(in, out, n);
 *
 *   // The host reads a pinned buffer now (host-device races are found only
 *   // for host accesses streamsan is told about).
 *   streamsan_host_read(pinned, bytes);
 *
 * Streams: pass the cudaStream_t (or CUstream) the launch uses. 0 names the
 * legacy default stream; a program built with --default-stream per-thread
 * passes cudaStreamPerThread.
 */
#ifndef STREAMSAN_ANNOTATE_H
#define STREAMSAN_ANNOTATE_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st; /* cudaStream_t and CUstream are both CUstream_st* */

enum streamsan_access_mode {
  STREAMSAN_READ = 1,
  STREAMSAN_WRITE = 2,
  STREAMSAN_READ_WRITE = 3
};

typedef struct streamsan_range {
  const void* address;
  size_t size; /* bytes */
  int mode;    /* enum streamsan_access_mode */
} streamsan_range;

typedef void (*streamsan_annotate_launch_fn)(struct CUstream_st* stream,
                                             const streamsan_range* ranges, size_t count);
typedef void (*streamsan_host_access_fn)(const void* address, size_t size, int mode,
                                         const char* label);

/* The library's function `name`, or NULL when not running under streamsan. */
static inline void* streamsan_detail_lookup(const char* name) {
  const char* path = getenv("CUDA_INJECTION64_PATH");
  void* lib;
  void* sym;
  if (path == NULL || *path == '\0') return NULL;
  lib = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
  if (lib == NULL) return NULL; /* not loaded (yet): CUDA not initialized */
  sym = dlsym(lib, name);
  dlclose(lib); /* balances the NOLOAD reference; the driver keeps it loaded */
  return sym;
}

/* Nonzero when annotations reach streamsan. */
static inline int streamsan_is_active(void) {
  return streamsan_detail_lookup("streamsan_inject_annotate_next_launch") != NULL;
}

/* The next kernel launch (or host function) enqueued on `stream` accesses
 * exactly `ranges` instead of what streamsan infers from its arguments. */
static inline void streamsan_annotate_next_launch(struct CUstream_st* stream,
                                                  const streamsan_range* ranges, size_t count) {
  static streamsan_annotate_launch_fn fn = NULL;
  if (fn == NULL) {
    fn = (streamsan_annotate_launch_fn)streamsan_detail_lookup(
        "streamsan_inject_annotate_next_launch");
  }
  if (fn != NULL) fn(stream, ranges, count);
}

/* The calling host thread accesses [address, address + size) now. */
static inline void streamsan_host_access(const void* address, size_t size, int mode,
                                         const char* label) {
  static streamsan_host_access_fn fn = NULL;
  if (fn == NULL) {
    fn = (streamsan_host_access_fn)streamsan_detail_lookup("streamsan_inject_host_access");
  }
  if (fn != NULL) fn(address, size, mode, label);
}

static inline void streamsan_host_read(const void* address, size_t size) {
  streamsan_host_access(address, size, STREAMSAN_READ, "host read");
}

static inline void streamsan_host_write(const void* address, size_t size) {
  streamsan_host_access(address, size, STREAMSAN_WRITE, "host write");
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STREAMSAN_ANNOTATE_H */
