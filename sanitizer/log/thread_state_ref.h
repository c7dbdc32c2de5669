// One look at a thread_local per callback (Note [One look at the thread's
// state]).
#pragma once

namespace streamsan {

// Note [One look at the thread's state]
// In libstreamsan_inject.so, which the driver dlopens, the address of a
// thread_local comes from a call to __tls_get_addr. GCC takes that address
// for a constant it can compute again, and computes it again after every
// call rather than keep it in a register: a launch's path through the
// Sanitizer API source had 57 calls to __tls_get_addr in on_api alone (its
// callers' `me` propagated into it as that constant), and the dispatcher
// looked its own state up in dispatch, on_driver, run and key_of. A
// reference passed through an empty asm is a value GCC cannot compute
// again, so a callback looks its state up once and hands it down.
template <class T>
T& thread_state_ref(T& thread_local_state) noexcept {
  T* p = &thread_local_state;
  asm("" : "+r"(p));
  return *p;
}

}  // namespace streamsan
