// The statically linked NVTX tool of nvtx_injection_test.cpp. NVTX's header
// declares InitializeInjectionNvtx2_fnptr weak in every file that includes
// it, so the strong definition lives here, in a file that does not.
extern "C" int streamsan_test_initialize_nvtx(const void* get_export_table);

using nvtx_initialize = int (*)(const void*);
extern "C" {
nvtx_initialize InitializeInjectionNvtx2_fnptr = &streamsan_test_initialize_nvtx;
}
