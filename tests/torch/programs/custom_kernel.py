# A custom CUDA kernel (torch.utils.cpp_extension.load_inline) on a side
# stream reads what the default stream wrote, without wait_stream. Not an
# ATen operator: its footprint comes from streamsan's generic capture.
# Exits 77 (skipped) when nvcc or ninja is missing.
import os
import shutil
import sys
import torch

FIXED = "--fixed" in sys.argv
if shutil.which("nvcc") is None or shutil.which("ninja") is None:
    print("nvcc or ninja missing: skipped")
    sys.exit(77)
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void scale_kernel(const float* in, float* out, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}
void scale(torch::Tensor in, torch::Tensor out) {
  long n = in.numel();
  auto stream = at::cuda::getCurrentCUDAStream();
  scale_kernel<<<(n + 255) / 256, 256, 0, stream>>>(in.data_ptr<float>(), out.data_ptr<float>(), n);
}
"""
cpp_src = "void scale(torch::Tensor in, torch::Tensor out);"
ext = load_inline("streamsan_scale", cpp_sources=cpp_src,
                  cuda_sources="#include <ATen/cuda/CUDAContext.h>\n" + cuda_src,
                  functions=["scale"], verbose=False,
                  build_directory=os.environ.get("STREAMSAN_EXT_DIR") or None)
x = torch.empty(1 << 20, device="cuda")
x.fill_(1.0)
out = torch.empty_like(x)
torch.cuda.synchronize()
x.fill_(3.0)
s = torch.cuda.Stream()
if FIXED:
    s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    ext.scale(x, out)
torch.cuda.synchronize()
print(float(out[0]))
