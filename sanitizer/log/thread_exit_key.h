// A value per thread handed to a function when the thread ends.
#pragma once

#include <pthread.h>

namespace streamsan {

// A pthread key made once, whose destructor gets each thread's value at
// the thread's exit (after its thread_locals' destructors, which may still
// call CUDA). Keys can run out: then nothing is set, and the values stay
// (what each user says then). Make one as a function's static.
class thread_exit_key {
 public:
  explicit thread_exit_key(void (*at_exit)(void*)) noexcept
      : created_(pthread_key_create(&key_, at_exit) == 0) {}
  thread_exit_key(const thread_exit_key&) = delete;
  thread_exit_key& operator=(const thread_exit_key&) = delete;

  // The calling thread's value, for `at_exit` at its exit.
  void set(void* value) const noexcept {
    if (created_) pthread_setspecific(key_, value);
  }

 private:
  pthread_key_t key_{};
  bool created_ = false;
};

}  // namespace streamsan
