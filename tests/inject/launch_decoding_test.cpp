// What the Sanitizer API source learns of a call at its entry besides a
// launch (decode_call_role): every API id of a role, in both domains.
#include "inject/capture/launch_decoding.h"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "inject/capture/api_names.h"
#include "inject/capture/api_params.h"

namespace streamsan::injection {
namespace {

api_call call_of(api_domain domain, std::uint32_t cbid, const void* params = nullptr) {
  return api_call{domain, cbid, api_site::entry, params, nullptr, nullptr};
}

TEST(CallRole, EveryGraphInstantiationOfEitherDomainIsOne) {
  for (const auto cbid : {CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000,
                          CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000,
                          CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040,
                          CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000,
                          CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000}) {
    EXPECT_EQ(decode_call_role(call_of(api_domain::runtime, cbid)).role,
              call_role::graph_instantiate)
        << cbid;
  }
  for (const auto cbid : {CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
                          CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
                          CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
                          CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
                          CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz}) {
    EXPECT_EQ(decode_call_role(call_of(api_domain::driver, cbid)).role,
              call_role::graph_instantiate)
        << cbid;
  }
}

TEST(CallRole, AnExecDestroyNamesItsExec) {
  const auto exec = reinterpret_cast<cudaGraphExec_t>(0xe0);
  const cudaGraphExecDestroy_v10000_params runtime{exec};
  const auto r = decode_call_role(
      call_of(api_domain::runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecDestroy_v10000, &runtime));
  EXPECT_EQ(r.role, call_role::graph_exec_destroy);
  EXPECT_EQ(r.graph_exec, exec);
  const cuGraphExecDestroy_params driver{reinterpret_cast<CUgraphExec>(0xe1)};
  const auto d =
      decode_call_role(call_of(api_domain::driver, CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy, &driver));
  EXPECT_EQ(d.role, call_role::graph_exec_destroy);
  EXPECT_EQ(d.graph_exec, reinterpret_cast<const void*>(0xe1));
}

// Without its parameters the call names nothing, so it has no role.
TEST(CallRole, AnExecDestroyWithoutParametersHasNone) {
  EXPECT_EQ(decode_call_role(call_of(api_domain::driver, CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy))
                .role,
            call_role::other);
}

TEST(CallRole, SynchronizesAreHostWaitsOrContextSynchronizes) {
  const std::pair<api_domain, std::uint32_t> waits[] = {
      {api_domain::runtime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020},
      {api_domain::runtime, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020},
      {api_domain::driver, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize},
      {api_domain::driver, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize}};
  for (const auto& [domain, cbid] : waits) {
    EXPECT_EQ(decode_call_role(call_of(domain, cbid)).role, call_role::host_wait) << cbid;
  }
  EXPECT_EQ(decode_call_role(call_of(api_domain::runtime,
                                     CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020))
                .role,
            call_role::context_synchronize);
  EXPECT_EQ(decode_call_role(call_of(api_domain::driver, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2))
                .role,
            call_role::context_synchronize);
}

TEST(CallRole, OtherCallsHaveNone) {
  EXPECT_EQ(decode_call_role(call_of(api_domain::driver, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2)).role,
            call_role::other);
}

// The Sanitizer API source skips decode_call_role at a launch call's exit
// (sanitizer_source.cpp's on_api): that holds only while no call that
// decode_launch takes for a launch has a role.
TEST(CallRole, NoLaunchCallHasARole) {
  alignas(16) const std::array<std::byte, 256> params{};
  int launches = 0;
  for (const api_domain domain : {api_domain::runtime, api_domain::driver}) {
    for (std::uint32_t cbid = 1; cbid < api_names(domain).size(); ++cbid) {
      const api_call call = call_of(domain, cbid, params.data());
      if (!decode_launch(call)) continue;
      ++launches;
      EXPECT_EQ(decode_call_role(call).role, call_role::other) << cbid;
    }
  }
  EXPECT_EQ(launches, 8);  // cuLaunchKernel{,Ex,Cooperative}{,_ptsz}, __cudaLaunchKernel{,_ptsz}
}

}  // namespace
}  // namespace streamsan::injection
