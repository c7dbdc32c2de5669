"""The operator hook's frame lookup alone (op_frame_cost.cpp, which includes
op_hook.cpp), built against the running Python's torch and run in
interleaved rounds, on one thread and on two at once:

    python3 bench/torch/op_frame_cost.py [ROUNDS] [OTHER_OP_HOOK_CPP]

With OTHER_OP_HOOK_CPP (an earlier op_hook.cpp, say from `git show
REV:python/streamsan_torch/op_hook.cpp`), both are built and their rounds
interleaved. Prints the median over ROUNDS (default 5) of ns per call.
"""
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


def build(torch, hook_source, output):
    from streamsan_torch import _native_hook
    includes, libdir = _native_hook._torch_paths(torch)
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    compiler, why = _native_hook._compiler()
    if compiler is None:
        sys.exit(why)
    cmd = [compiler, "-std=c++17", "-O2", "-w", "-DNDEBUG",
           "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi, '-DOP_HOOK="%s"' % os.path.abspath(hook_source)]
    cmd += ["-I" + d for d in includes]
    cmd += [os.path.join(HERE, "op_frame_cost.cpp"), "-o", output, "-L" + libdir,
            "-Wl,-rpath," + libdir, "-ltorch_cpu", "-lc10", "-ldl", "-pthread"]
    subprocess.run(cmd, check=True)


def main():
    import torch
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    sources = {"this": os.path.join(HERE, "..", "..", "python", "streamsan_torch", "op_hook.cpp")}
    if len(sys.argv) > 2:
        sources["other"] = sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        programs = {}
        for name, source in sources.items():
            programs[name] = os.path.join(tmp, name)
            build(torch, source, programs[name])
        times = {(name, threads): [] for name in sources for threads in (1, 2)}
        for _ in range(rounds):
            for name, program in programs.items():
                for threads in (1, 2):
                    out = subprocess.run([program, str(threads), "100000"], check=True,
                                         capture_output=True, text=True)
                    times[(name, threads)].append(float(out.stdout))
        print("| op_hook.cpp | threads | ns per call (median of %d) | runs |" % rounds)
        print("| --- | ---: | ---: | --- |")
        for (name, threads), runs in times.items():
            print("| %s | %d | %.1f | %s |" % (name, threads, statistics.median(runs),
                                            ", ".join("%.1f" % r for r in runs)))


if __name__ == "__main__":
    main()
