// Test control of the fake CUDA driver (fake_cuda_driver.cpp, a shared
// library named libcuda.so.1 that the Sanitizer API source finds with
// dlopen(RTLD_NOLOAD)): events complete when the test says so.
#pragma once

#include <cuda.h>

#include <string>

extern "C" {
// Events recorded from now on complete only at fake_cuda_complete_events().
void fake_cuda_hold_events(bool hold);
void fake_cuda_complete_events();
// cuFuncGetModule and cuFuncGetName of `function`.
void fake_cuda_define_function(CUfunction function, CUmodule module, const char* mangled);
void fake_cuda_set_capturing(CUstream stream, bool capturing);
// cuStreamQuery answers CUDA_ERROR_NOT_READY for a busy stream.
void fake_cuda_set_stream_busy(CUstream stream, bool busy);
// The next cuKernelGetFunction calls `hook(arg)` first, as the driver's lazy
// module loading delivers a module-loaded callback from inside that call.
void fake_cuda_on_next_kernel_lookup(void (*hook)(void*), void* arg);
}
