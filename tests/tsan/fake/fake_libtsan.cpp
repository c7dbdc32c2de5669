// A stand-in for a ThreadSanitizer runtime, preloaded into a program that
// is not built with TSan: every entry point of the bridge's interface as a
// no-op, so that probe_tsan_runtime finds it (tests/tsan/refusal_test.sh).
// FAKE_WITHOUT_FIBERS leaves the fiber entry points out, as a runtime older
// than fibers would.
extern "C" {

void __tsan_init() {}
#ifndef FAKE_WITHOUT_FIBERS
static int fiber;
void* __tsan_get_current_fiber(void) { return &fiber; }
void* __tsan_create_fiber(unsigned flags) { (void)flags; return &fiber; }
void __tsan_destroy_fiber(void* f) { (void)f; }
void __tsan_switch_to_fiber(void* f, unsigned flags) { (void)f; (void)flags; }
void __tsan_set_fiber_name(void* f, const char* name) { (void)f; (void)name; }
#endif
void __tsan_acquire(void* a) { (void)a; }
void __tsan_release(void* a) { (void)a; }
void __tsan_atomic64_store(volatile long long* a, long long v, int mo) { (void)mo; *a = v; }
void __tsan_read_range(void* a, unsigned long n) { (void)a; (void)n; }
void __tsan_write_range(void* a, unsigned long n) { (void)a; (void)n; }
void __tsan_func_entry(void* pc) { (void)pc; }
void __tsan_func_exit(void) {}
void __tsan_ignore_thread_begin(void) {}
void __tsan_ignore_thread_end(void) {}

}  // extern "C"
