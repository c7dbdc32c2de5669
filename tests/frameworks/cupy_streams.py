"""CuPy on several streams, as its documentation shows them: a memory pool,
elementwise and raw kernels on disjoint slices of one array, cuBLAS on a
side stream, an event handing a result over, pinned asynchronous copies.

    python3 cupy_streams.py [--fixed]

Racy version: the default stream reads the side stream's matmul result
without waiting for its event. Exits 77 without CuPy or a GPU.
"""
import sys

try:
    import cupy as cp
    import cupyx
    import numpy as np
except ImportError as e:
    print("cupy_streams: %s" % e)
    sys.exit(77)
try:
    if cp.cuda.runtime.getDeviceCount() == 0:
        raise RuntimeError("no device")
except Exception as e:  # no driver or no GPU
    print("cupy_streams: no GPU (%s)" % e)
    sys.exit(77)

fixed = "--fixed" in sys.argv
n, parts = 1 << 20, 4

add_one = cp.ElementwiseKernel("float32 x", "float32 y", "y = x + 1.0f", "add_one")
scale = cp.RawKernel(r"""
extern "C" __global__ void scale(float* p, float f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= f;
}""", "scale")

data = cp.zeros(n, dtype=cp.float32)
cp.cuda.Device().synchronize()
streams = [cp.cuda.Stream(non_blocking=True) for _ in range(parts)]
chunk = n // parts
# Each stream owns its slice of one allocation.
for i, s in enumerate(streams):
    with s:
        part = data[i * chunk:(i + 1) * chunk]
        add_one(part, part)
        scale(((chunk + 255) // 256,), (256,), (part, cp.float32(2.0), cp.int32(chunk)))
done = [s.record() for s in streams]
for e in done:
    cp.cuda.get_current_stream().wait_event(e)
total = float(data.sum())
assert total == 2.0 * n, total

# cuBLAS on a side stream; the default stream uses the product.
side = cp.cuda.Stream(non_blocking=True)
a = cp.random.rand(512, 512, dtype=cp.float32)
b = cp.random.rand(512, 512, dtype=cp.float32)
cp.cuda.Device().synchronize()
with side:
    c = a @ b
    product_ready = side.record()
if fixed:
    cp.cuda.get_current_stream().wait_event(product_ready)
norm = cp.linalg.norm(c)

# Pinned asynchronous copies both ways on a side stream.
host = cupyx.empty_pinned((n,), dtype=np.float32)
host[:] = 3.0
device = cp.empty(n, dtype=cp.float32)
with side:
    device.set(host, stream=side)
    add_one(device, device)
    back = cupyx.empty_pinned((n,), dtype=np.float32)
    device.get(stream=side, out=back)
side.synchronize()
assert float(back[0]) == 4.0
print("cupy_streams: done, norm %.1f" % float(norm))
