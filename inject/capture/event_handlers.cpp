// Events: create, destroy, record, wait, synchronize, query.

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"

namespace streamsan::injection {
namespace {

// ---- runtime ----

void runtime_event_create(api_context& c) {
  c.model.event_created(c.here(), handle_of(*c.params<cudaEventCreate_v3020_params>().event), 0);
}

void runtime_event_create_with_flags(api_context& c) {
  const auto& p = c.params<cudaEventCreateWithFlags_v3020_params>();
  c.model.event_created(c.here(), handle_of(*p.event), p.flags);
}

void runtime_event_destroy(api_context& c) {
  c.model.event_destroyed(c.here(), handle_of(c.params<cudaEventDestroy_v3020_params>().event));
}

// cudaEventRecord and cudaEventRecordWithFlags start alike.
template <class Params>
void runtime_event_record(api_context& c) {
  const auto& p = c.params<Params>();
  c.model.event_recorded(c.here(), handle_of(p.event), c.ordering_stream(p.stream));
}

void runtime_stream_wait_event(api_context& c) {
  const auto& p = c.params<cudaStreamWaitEvent_v3020_params>();
  c.model.stream_waited_event(c.here(), c.ordering_stream(p.stream), handle_of(p.event));
}

void runtime_event_synchronize(api_context& c) {
  c.model.event_synchronized(c.here(),
                             handle_of(c.params<cudaEventSynchronize_v3020_params>().event));
}

void runtime_event_query(api_context& c) {
  c.model.event_queried(c.here(), handle_of(c.params<cudaEventQuery_v3020_params>().event),
                        c.completed());
}

// ---- driver ----

void driver_event_create(api_context& c) {
  const auto& p = c.params<cuEventCreate_params>();
  c.model.event_created(c.here(), handle_of(*p.phEvent), p.Flags);
}

void driver_event_destroy(api_context& c) {
  c.model.event_destroyed(c.here(), handle_of(c.params<cuEventDestroy_v2_params>().hEvent));
}

template <class Params>
void driver_event_record(api_context& c) {
  const auto& p = c.params<Params>();
  c.model.event_recorded(c.here(), handle_of(p.hEvent), c.ordering_stream(p.hStream));
}

void driver_stream_wait_event(api_context& c) {
  const auto& p = c.params<cuStreamWaitEvent_params>();
  c.model.stream_waited_event(c.here(), c.ordering_stream(p.hStream), handle_of(p.hEvent));
}

void driver_event_synchronize(api_context& c) {
  c.model.event_synchronized(c.here(), handle_of(c.params<cuEventSynchronize_params>().hEvent));
}

void driver_event_query(api_context& c) {
  c.model.event_queried(c.here(), handle_of(c.params<cuEventQuery_params>().hEvent),
                        c.completed());
}

}  // namespace

void add_event_handlers(api_tables& t) {
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020},
                {.on_exit = runtime_event_create});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020},
                {.on_exit = runtime_event_create_with_flags});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020},
                {.on_entry = runtime_event_destroy});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020,
                 CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000},
                {.on_exit = runtime_event_record<cudaEventRecord_v3020_params>});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010,
                 CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010},
                {.on_exit = runtime_event_record<cudaEventRecordWithFlags_v11010_params>});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
                 CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000},
                {.on_exit = runtime_stream_wait_event});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020},
                {.on_exit = runtime_event_synchronize});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020},
                {.on_exit = runtime_event_query, .answers_not_ready = true});

  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuEventCreate}, {.on_exit = driver_event_create});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuEventDestroy, CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2},
               {.on_entry = driver_event_destroy});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuEventRecord, CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz},
               {.on_exit = driver_event_record<cuEventRecord_params>});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags,
                CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz},
               {.on_exit = driver_event_record<cuEventRecordWithFlags_params>});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
                CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz},
               {.on_exit = driver_stream_wait_event});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize},
               {.on_exit = driver_event_synchronize});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuEventQuery},
               {.on_exit = driver_event_query, .answers_not_ready = true});
}

}  // namespace streamsan::injection
