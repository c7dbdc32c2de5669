"""cuda-python (cuda.bindings) on two streams, as its examples use the
driver API: a module loaded from PTX, a kernel filling a buffer on one
stream, another kernel reading it on a second stream, an event between
them, results read back.

    python3 cuda_python_streams.py [--fixed]

Racy version: the second stream does not wait for the first one's event.
cuda-python's Cython releases the GIL around every driver call, so the
report's Python lines come from the library's own reading of the
interpreter (Note [Python frames read in place] in
inject/stack/python_frames.h). Exits 77 without cuda-python or a GPU.
"""
import ctypes
import sys

try:
    from cuda.bindings import driver
except ImportError as e:
    print("cuda_python_streams: %s" % e)
    sys.exit(77)

fixed = "--fixed" in sys.argv
n, rounds = 1 << 20, 3

# nvcc -ptx -arch=compute_80 of:
#   extern "C" __global__ void fill(float* p, float v, int n)
#     { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = v; }
#   extern "C" __global__ void twice(const float* src, float* dst, int n)
#     { int i = ...; if (i < n) dst[i] = 2.0f * src[i]; }
PTX = r"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry fill(.param .u64 fill_param_0, .param .f32 fill_param_1, .param .u32 fill_param_2)
{
  .reg .pred %p<2>; .reg .f32 %f<2>; .reg .b32 %r<6>; .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [fill_param_0];
  ld.param.f32 %f1, [fill_param_1];
  ld.param.u32 %r2, [fill_param_2];
  mov.u32 %r3, %ctaid.x; mov.u32 %r4, %ntid.x; mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.s32 %p1, %r1, %r2;
  @%p1 bra $L__fill_done;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.s32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.f32 [%rd4], %f1;
$L__fill_done:
  ret;
}
.visible .entry twice(.param .u64 twice_param_0, .param .u64 twice_param_1, .param .u32 twice_param_2)
{
  .reg .pred %p<2>; .reg .f32 %f<3>; .reg .b32 %r<6>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [twice_param_0];
  ld.param.u64 %rd2, [twice_param_1];
  ld.param.u32 %r2, [twice_param_2];
  mov.u32 %r3, %ctaid.x; mov.u32 %r4, %ntid.x; mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.s32 %p1, %r1, %r2;
  @%p1 bra $L__twice_done;
  cvta.to.global.u64 %rd3, %rd1;
  mul.wide.s32 %rd4, %r1, 4;
  add.s64 %rd5, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  add.f32 %f2, %f1, %f1;
  cvta.to.global.u64 %rd6, %rd2;
  add.s64 %rd7, %rd6, %rd4;
  st.global.f32 [%rd7], %f2;
$L__twice_done:
  ret;
}
"""


def check(result, what):
    """The values of a cuda-python call after its status; exits on an error."""
    status, *values = result
    if status != driver.CUresult.CUDA_SUCCESS:
        print("cuda_python_streams: %s: %s" % (what, status))
        sys.exit(1)
    return values[0] if len(values) == 1 else values


try:
    status, = driver.cuInit(0)
except Exception as e:  # no driver library at all
    status = e
if status != driver.CUresult.CUDA_SUCCESS:
    print("cuda_python_streams: no GPU (cuInit: %s)" % status)
    sys.exit(77)
status, count = driver.cuDeviceGetCount()
if status != driver.CUresult.CUDA_SUCCESS or count == 0:
    print("cuda_python_streams: no GPU")
    sys.exit(77)
device = check(driver.cuDeviceGet(0), "cuDeviceGet")
context = check(driver.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
check(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
image = ctypes.create_string_buffer(PTX.encode())  # NUL-terminated
module = check(driver.cuModuleLoadData(ctypes.addressof(image)), "cuModuleLoadData")
fill = check(driver.cuModuleGetFunction(module, b"fill"), "cuModuleGetFunction(fill)")
twice = check(driver.cuModuleGetFunction(module, b"twice"), "cuModuleGetFunction(twice)")

flags = int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)
producer = check(driver.cuStreamCreate(flags), "cuStreamCreate")
consumer = check(driver.cuStreamCreate(flags), "cuStreamCreate")
filled = check(driver.cuEventCreate(int(driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)),
               "cuEventCreate")
source = check(driver.cuMemAlloc(4 * n), "cuMemAlloc")
result = check(driver.cuMemAlloc(4 * n), "cuMemAlloc")
blocks, threads = (n + 255) // 256, 256


def launch(kernel, stream, values, types):
    check(driver.cuLaunchKernel(kernel, blocks, 1, 1, threads, 1, 1, 0, stream,
                                (values, types), 0), "cuLaunchKernel")


for step in range(rounds):
    launch(fill, producer, (source, float(step + 1), n), (None, ctypes.c_float, ctypes.c_int))
    check(driver.cuEventRecord(filled, producer), "cuEventRecord")
    if fixed:
        check(driver.cuStreamWaitEvent(consumer, filled, 0), "cuStreamWaitEvent")
    launch(twice, consumer, (source, result, n), (None, None, ctypes.c_int))
    check(driver.cuStreamSynchronize(consumer), "cuStreamSynchronize")
    check(driver.cuStreamSynchronize(producer), "cuStreamSynchronize")

back = (ctypes.c_float * n)()
check(driver.cuMemcpyDtoH(ctypes.addressof(back), result, 4 * n), "cuMemcpyDtoH")
first = back[0]
if fixed:
    assert first == 2.0 * rounds, first
for handle in (source, result):
    check(driver.cuMemFree(handle), "cuMemFree")
check(driver.cuModuleUnload(module), "cuModuleUnload")
print("cuda_python_streams: done, first %.1f" % first)
