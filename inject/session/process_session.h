// The process's one session: made by the first entry point the driver or
// NVTX calls (entry.cpp), over the CUDA driver that loaded the library,
// never destroyed, and reported at exit (Note [Reports at exit]).
#pragma once

#include "inject/session/session.h"

namespace streamsan::injection::process_session {

// Starts the session once (later calls return it). On bad options or
// unusable files it prints why and ends the process: running unsanitized
// while the user believes otherwise would be worse.
session& start();
// The running session, or nullptr before start().
session* current() noexcept;

// The driver is loaded (InitializeInjection, from cuInit): resolve its entry
// points, hide its frames and subscribe to the callbacks, once. Ends the
// process if it cannot.
void cuda_initialized();

}  // namespace streamsan::injection::process_session
