// For tests and benchmarks that drive the Compute Sanitizer API source over
// its fakes: the parameters of the driver calls they deliver, laid out as
// generated_cuda_meta.h lays them out (that header cannot meet sanitizer.h
// in one translation unit), and a call-site source that captures nothing.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "inject/capture/call_sites.h"

namespace streamsan::injection::driver_calls {

struct launch_params {  // cuLaunchKernel
  CUfunction f;
  unsigned int grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
  CUstream hStream;
  void** kernelParams;
  void** extra;
};
struct runtime_launch_params {  // cudaLaunchKernel (the runtime's, by host stub)
  const void* func;
  unsigned int grid_x, grid_y, grid_z, block_x, block_y, block_z;
  void** args;
  std::size_t shared_bytes;
  CUstream stream;
};
struct stream_create_params {  // cuStreamCreate
  CUstream* phStream;
  unsigned int Flags;
};
struct stream_params {  // cuStreamDestroy_v2, cuStreamSynchronize
  CUstream hStream;
};
struct event_create_params {  // cuEventCreate
  CUevent* phEvent;
  unsigned int Flags;
};
struct event_record_params {  // cuEventRecord
  CUevent hEvent;
  CUstream hStream;
};
struct stream_wait_event_params {  // cuStreamWaitEvent
  CUstream hStream;
  CUevent hEvent;
  unsigned int Flags;
};
struct mem_alloc_params {  // cuMemAlloc_v2
  CUdeviceptr* dptr;
  std::size_t bytesize;
};
struct graph_launch_params {  // cuGraphLaunch
  CUgraphExec hGraph;
  CUstream hStream;
};
struct graph_exec_params {  // cuGraphExecDestroy
  CUgraphExec hGraphExec;
};

class no_call_sites final : public call_site_source {
 public:
  call_site capture(std::uint64_t) noexcept override { return {}; }
};

}  // namespace streamsan::injection::driver_calls
