"""Checkpoint write and read throughput against TensorFlow, measured in one run on this machine.

Writes and reads 1 GiB of float32 variables (16 x 64 MiB) with savedmodel's bundle writer and
reader and with TensorFlow's SaveV2 / RestoreV2 kernels. Each side runs in a subprocess of its
own (neither pays for the other's imports or memory) that sets up once and then times one
operation per request, so that the parent can interleave the two sides round by round and a
noisy shared disk affects both alike. Prints median and best throughput (GB/s) both ways with
the ratios, and the peak memory of each reading: for ours the tracemalloc peak (numpy reports
its allocations to it), and for both the growth of the process's peak RSS over its RSS before
reading. Both sides read the same files. Our writes fsync every file (they are crash safe) and
TensorFlow's do not, so a second row times our writer with the sync switched off in its
benchmark process. Nothing is asserted: these are measurements.

Usage: python bench/bench_checkpoint.py [--rounds N] [--dir DIR]   (needs the `bench` extra)
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
NUM_TENSORS = 16
TENSOR_BYTES = 64 << 20
TOTAL_BYTES = NUM_TENSORS * TENSOR_BYTES
NAMES = [f"model/layer_{i:02d}/kernel/.ATTRIBUTES/VARIABLE_VALUE" for i in range(NUM_TENSORS)]
WRITERS = ("write-tf", "write-ours", "write-ours-unsynced")
READERS = ("read-ours", "read-tf")


def make_tensors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {name: rng.random(TENSOR_BYTES // 4, dtype=np.float32) for name in NAMES}


def current_rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss() -> int:
    """This process's peak RSS: VmHWM, which unlike getrusage's ru_maxrss does not carry the
    parent's peak over a fork and exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# --- child processes: set up, then time one operation per request ---------------------------


def setup_write_ours(prefix: str):
    from savedmodel.runtime.bundle_writer import write_bundle
    tensors = make_tensors()
    return lambda: write_bundle(prefix, tensors), dict


def setup_write_ours_unsynced(prefix: str):
    """Our writer with fsync switched off in this process only: the format work alone, on
    the same terms as TensorFlow's writer, which does not sync."""
    from savedmodel.runtime import atomic_files
    atomic_files._datasync = os.fsync = lambda fd: None
    return setup_write_ours(prefix)


def setup_write_tf(prefix: str):
    import tensorflow as tf
    tensors = [tf.constant(v) for v in make_tensors().values()]
    return lambda: tf.raw_ops.SaveV2(prefix=prefix, tensor_names=NAMES,
                                     shape_and_slices=[""] * NUM_TENSORS, tensors=tensors), dict


def setup_read_ours(prefix: str):
    from savedmodel.runtime.tensor_bundle import BundleReader
    baseline = current_rss()

    def read() -> list:
        reader = BundleReader(prefix)
        return [reader.read(name) for name in reader.keys()]

    def memory() -> dict:
        rss_growth = peak_rss() - baseline
        tracemalloc.start()
        values = read()
        traced_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return {"rss_growth": rss_growth, "traced_peak": traced_peak,
                "bytes": sum(v.nbytes for v in values)}

    return read, memory


def setup_read_tf(prefix: str):
    import tensorflow as tf
    baseline = current_rss()

    def read() -> list:
        tensors = tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=NAMES,
                                       shape_and_slices=[""] * NUM_TENSORS,
                                       dtypes=[tf.float32] * NUM_TENSORS)
        return [t.numpy() for t in tensors]

    return read, lambda: {"rss_growth": peak_rss() - baseline}


SETUPS = {"write-ours": setup_write_ours, "write-ours-unsynced": setup_write_ours_unsynced,
          "write-tf": setup_write_tf, "read-ours": setup_read_ours, "read-tf": setup_read_tf}


def serve(mode: str, prefix: str) -> None:
    """The child's loop: `run` times the operation once, anything else ends with the stats."""
    operation, stats = SETUPS[mode](prefix)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        start = time.perf_counter()
        operation()
        print(time.perf_counter() - start, flush=True)
    print(json.dumps(stats()), flush=True)


class Child:
    def __init__(self, mode: str, prefix: str):
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--child", mode, "--prefix", prefix],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.seconds: list[float] = []
        self._reply()

    def _reply(self) -> str:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"benchmark child exited with {self.process.wait()}")
        return line.strip()

    def run(self, timed: bool = True) -> None:
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        seconds = float(self._reply())
        if timed:
            self.seconds.append(seconds)

    def finish(self) -> dict:
        self.process.stdin.write("done\n")
        self.process.stdin.flush()
        stats = json.loads(self._reply())
        self.process.wait()
        return stats


# --- the parent: interleave the sides and print ---------------------------------------------


def interleave(children: list[Child], rounds: int) -> None:
    """One warm-up call each, then `rounds` rounds, alternating which side goes first."""
    for child in children:
        child.run(timed=False)
    for i in range(rounds):
        for child in (children if i % 2 == 0 else children[::-1]):
            child.run()


def gbps(seconds: float) -> float:
    return TOTAL_BYTES / seconds / 1e9


def throughput_row(label: str, ours: list[float], theirs: list[float]) -> str:
    cells = []
    for pick in (statistics.median, min):
        a, b = gbps(pick(ours)), gbps(pick(theirs))
        cells.append(f"{a:6.2f} / {b:5.2f} GB/s = {a / b:5.2f}x")
    return f"{label:<20}" + "   ".join(cells)


def report(workdir: str, rounds: int) -> None:
    prefix = {mode: os.path.join(workdir, mode.split("-", 1)[1]) for mode in WRITERS}
    writers = {mode: Child(mode, prefix[mode]) for mode in WRITERS}
    interleave(list(writers.values()), rounds)
    seconds = {mode: child.seconds for mode, child in writers.items()}
    for child in writers.values():
        child.finish()
    same = all(filecmp.cmp(f"{prefix['write-ours']}{s}", f"{prefix['write-tf']}{s}", shallow=False)
               for s in (".index", ".data-00000-of-00001"))
    readers = {mode: Child(mode, prefix["write-ours"]) for mode in READERS}
    interleave(list(readers.values()), rounds)
    seconds |= {mode: child.seconds for mode, child in readers.items()}
    memory = {mode: child.finish() for mode, child in readers.items()}

    print(f"checkpoint of {NUM_TENSORS} x {TENSOR_BYTES >> 20} MiB float32 = "
          f"{TOTAL_BYTES / 2**30:.0f} GiB; {rounds} interleaved rounds after a warm-up; "
          f"our files byte-identical to TensorFlow's: {same}")
    print(f"{'ours / TensorFlow':<20}{'median':^33}   {'best':^33}")
    print(throughput_row("write (fsynced)", seconds["write-ours"], seconds["write-tf"]))
    print(throughput_row("write (no fsync)", seconds["write-ours-unsynced"], seconds["write-tf"]))
    print(throughput_row("read", seconds["read-ours"], seconds["read-tf"]))
    print("  our writes fsync every file before renaming it into place, TensorFlow's do not; "
          "the no-fsync row switches our sync off in the benchmark only")
    ours, theirs = memory["read-ours"], memory["read-tf"]
    mib = lambda n: f"{n / 2**20:,.0f} MiB"
    print(f"peak memory reading {mib(ours['bytes'])} of tensors:")
    print(f"  savedmodel: tracemalloc peak {mib(ours['traced_peak'])} "
          f"({ours['traced_peak'] / ours['bytes']:.3f}x the tensors), "
          f"peak RSS growth {mib(ours['rss_growth'])}")
    print(f"  TensorFlow: peak RSS growth {mib(theirs['rss_growth'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    parser.add_argument("--child", choices=sorted(SETUPS), help=argparse.SUPPRESS)
    parser.add_argument("--prefix", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        serve(args.child, args.prefix)
        return
    with tempfile.TemporaryDirectory(dir=args.dir) as workdir:
        report(workdir, args.rounds)


if __name__ == "__main__":
    main()
