// Devices (S-DEV-1, S-DEV-2, S-SYNC-1, S-COPY-5).
//
// Every function taking `int device` accepts -1 for the calling thread's
// current device, and throws usage_error for an index outside
// [0, device_count()).
#pragma once

#include <string>
#include <utility>

#include "runtime/backend/device_properties.h"

namespace streamsan::rt {

int device_count();

// The calling thread's current device (0 until set_device).
int current_device();
// Sets the calling thread's current device; streams and allocations without
// an explicit device go to it.
void set_device(int device);

std::string get_device_name(int device = -1);
// {major, minor}.
std::pair<int, int> get_device_capability(int device = -1);
device_properties get_device_properties(int device = -1);
memory_info mem_get_info(int device = -1);
bool can_device_access_peer(int device, int peer);

// Blocks until all work on all streams of `device` has completed (S-SYNC-1).
// A synchronizing operation (sync debug mode); illegal while a stream of the
// device is capturing (S-GRAPH-1).
void synchronize(int device = -1);

}  // namespace streamsan::rt
