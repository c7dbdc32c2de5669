"""Daemon threads launch CuPy kernels in a loop while the main thread exits,
so the interpreter finalizes with threads inside CUDA calls, whose Python
frames the injection library reads (Note [No walk once the interpreter
finalizes] in inject/stack/python_frames.cpp). No report and no crash
allowed: it has no racy twin.

    python3 cupy_daemon_exit.py

The kernel is compiled on the main thread first: NVRTC itself is not safe
to use from a thread while the process exits (daemon threads compiling at
exit crashed in libnvrtc natively too, 1 run in 20 on an H200). Exits 77
without CuPy or a GPU.
"""
import sys
import threading
import time

try:
    import cupy as cp

    cp.cuda.runtime.getDeviceCount()
except Exception as e:  # no CuPy, no driver, no device
    print("cupy_daemon_exit: %s" % e)
    sys.exit(77)

warm = cp.zeros(1 << 10, dtype=cp.float32)
warm += 1
cp.cuda.Device().synchronize()


def spin():
    a = cp.zeros(1 << 10, dtype=cp.float32)
    while True:
        a += 1


for _ in range(4):
    threading.Thread(target=spin, daemon=True).start()
time.sleep(0.3)
print("cupy_daemon_exit: main exits with 4 threads launching")
