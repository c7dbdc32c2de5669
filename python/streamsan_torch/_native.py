"""The injection library's C ABI (inject/session/torch_entry.cpp) via ctypes."""
import ctypes
import os

# 3: the span_hull flag of a mode word (Note [A span flagged as a hull] in
# inject/session/torch_entry.cpp); 4: op_begin's flag 2, an operator's
# outputs named by its caching allocator blocks (Note [An operator's outputs
# are its blocks] in inject/model/cuda_model_ops.cpp).
ABI_VERSION = 4


def load():
    """(library, None), or (None, why) where why is None when not under streamsan."""
    path = os.environ.get("CUDA_INJECTION64_PATH", "")
    if not path:
        return None, None
    try:
        # The driver dlopens the same file at cuInit; this is the same copy.
        lib = ctypes.CDLL(path)
    except OSError as e:
        return None, "cannot load %s for the PyTorch support: %s" % (path, e)
    try:
        version = lib.streamsan_inject_torch_abi()
    except AttributeError:
        return None, ("%s has no PyTorch entry points (an older streamsan?); the generic "
                      "capture continues" % path)
    if version != ABI_VERSION:
        return None, ("%s speaks PyTorch ABI %d, this support speaks %d; the generic capture "
                      "continues" % (path, version, ABI_VERSION))
    vp, sz, u32 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32
    lib.streamsan_inject_torch_active.restype = ctypes.c_int
    lib.streamsan_inject_torch_active.argtypes = []
    lib.streamsan_inject_torch_frame.restype = None
    lib.streamsan_inject_torch_frame.argtypes = [u32, ctypes.c_char_p, ctypes.c_char_p, u32]
    lib.streamsan_inject_torch_frames.restype = None
    lib.streamsan_inject_torch_frames.argtypes = [vp, sz]
    lib.streamsan_inject_torch_op_begin.restype = None
    lib.streamsan_inject_torch_op_begin.argtypes = [vp, sz, vp, sz, u32]
    lib.streamsan_inject_torch_op_end.restype = None
    lib.streamsan_inject_torch_op_end.argtypes = [vp, sz]
    lib.streamsan_inject_torch_host_access.restype = None
    lib.streamsan_inject_torch_host_access.argtypes = [vp, sz, ctypes.c_char_p, vp, sz]
    # Called by the native hook's allocator tracker only (Note [Caching
    # allocator blocks]); declared for completeness.
    u64 = ctypes.c_uint64
    lib.streamsan_inject_torch_block_alloc.restype = None
    lib.streamsan_inject_torch_block_alloc.argtypes = [u64, u64, ctypes.c_int32, u64]
    lib.streamsan_inject_torch_block_free.restype = None
    lib.streamsan_inject_torch_block_free.argtypes = [u64]
    return lib, None
