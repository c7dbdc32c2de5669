// Stream memory operations of the driver API (Note [Stream memory
// operations]): cuStreamWriteValue32/64, cuStreamWaitValue32/64, and the
// same operations batched by cuStreamBatchMemOp. The runtime has none.

#include <string>

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"

namespace streamsan::injection {
namespace {

// Every variant (v1, _v2, _ptsz) is (stream, address, value, flags).
template <class Params, std::uint32_t Size>
void write_value(api_context& c) {
  const auto& p = c.params<Params>();
  const bool fenced = (p.flags & CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) == 0;
  c.model.stream_value_written(c.here(), c.stream(p.stream), p.addr, Size, fenced,
                               Size == 4 ? "cuStreamWriteValue32" : "cuStreamWriteValue64");
}

template <class Params, std::uint32_t Size>
void wait_value(api_context& c) {
  const auto& p = c.params<Params>();
  c.model.stream_value_waited(c.here(), c.stream(p.stream), p.addr, Size,
                              Size == 4 ? "cuStreamWaitValue32" : "cuStreamWaitValue64");
}

// The operations in order; barriers and remote-write flushes order nothing
// the model follows (they make writes visible, the waits order).
void batch_mem_op(api_context& c) {
  const auto& p = c.params<cuStreamBatchMemOp_v2_params>();
  if (p.paramArray == nullptr) return;
  const call_site site = c.here();
  const stream_arg stream = c.stream(p.stream);
  for (unsigned i = 0; i < p.count; ++i) {
    const CUstreamBatchMemOpParams& op = p.paramArray[i];
    switch (op.operation) {
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
      case CU_STREAM_MEM_OP_WRITE_VALUE_64: {
        const bool wide = op.operation == CU_STREAM_MEM_OP_WRITE_VALUE_64;
        const bool fenced = (op.writeValue.flags & CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) == 0;
        c.model.stream_value_written(site, stream, op.writeValue.address, wide ? 8 : 4, fenced,
                                     wide ? "cuStreamBatchMemOp (write value 64)"
                                          : "cuStreamBatchMemOp (write value 32)");
        break;
      }
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
      case CU_STREAM_MEM_OP_WAIT_VALUE_64: {
        const bool wide = op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
        c.model.stream_value_waited(site, stream, op.waitValue.address, wide ? 8 : 4,
                                    wide ? "cuStreamBatchMemOp (wait value 64)"
                                         : "cuStreamBatchMemOp (wait value 32)");
        break;
      }
      case CU_STREAM_MEM_OP_BARRIER:
      case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        break;
      default:
        c.model.unmodelled(site, "cuStreamBatchMemOp (operation " +
                                     std::to_string(static_cast<int>(op.operation)) + ")");
        break;
    }
  }
}

}  // namespace

void add_stream_memop_handlers(api_tables& t) {
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_ptsz,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_v2,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_v2_ptsz},
               {.on_exit = write_value<cuStreamWriteValue32_v2_params, 4>});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64_ptsz,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64_v2,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64_v2_ptsz},
               {.on_exit = write_value<cuStreamWriteValue64_v2_params, 8>});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_ptsz,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2_ptsz},
               {.on_exit = wait_value<cuStreamWaitValue32_v2_params, 4>});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_ptsz,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2_ptsz},
               {.on_exit = wait_value<cuStreamWaitValue64_v2_params, 8>});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp,
                CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_ptsz,
                CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_v2,
                CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_v2_ptsz},
               {.on_exit = batch_mem_op});
}

}  // namespace streamsan::injection
