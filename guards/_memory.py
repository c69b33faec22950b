"""Peak memory of one build: a child process per build opens a session and runs inference.

Each build runs in its own Python process (this file, run as a script: it imports only the
standard library, numpy and onnxruntime), so one build's arenas, caches and freed pages never
count towards the next. The child reads its resident set size once onnxruntime and the feeds
are loaded, creates the session, runs the feeds three times, and reports its peak resident set
(Linux: `VmHWM` in /proc/self/status; elsewhere `ru_maxrss`) minus that starting point: the
host memory the build itself adds, session creation and inference together.

On CUDA, host RSS misses what the model holds on the device. onnxruntime's Python API exposes
no device-memory statistics, so the child reads the memory NVML attributes to its own process
after inference (`pynvml`, when installed); without it the device figure is None ("n/a").
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

RUNS = 3
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class MemoryUse:
    """Peak host memory a build adds (bytes) and, on a GPU, the device memory it holds."""

    rss_bytes: int
    device_bytes: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return {"peak_rss_bytes": self.rss_bytes, "device_memory_bytes": self.device_bytes}


def peak_memory(
    paths: Sequence[Path],
    feeds: Mapping[str, np.ndarray],
    providers: Sequence[str],
    intra_op_threads: int = 0,
) -> list[MemoryUse | None]:
    """Each build's peak memory, one child process each (None where the child failed)."""
    with tempfile.TemporaryDirectory(prefix="modelwatch-mem-") as tmp:
        batch = Path(tmp) / "feeds.npz"
        save: Any = np.savez  # numpy's stub types **arrays as its own keyword flags
        save(batch, **{k: np.asarray(v) for k, v in feeds.items()})
        return [_child(p, batch, providers, intra_op_threads) for p in paths]


def _child(path: Path, batch: Path, providers: Sequence[str], threads: int) -> MemoryUse | None:
    # -I: the script's folder (this package) is not put on sys.path, nor PYTHONPATH read.
    cmd = [sys.executable, "-I", __file__, str(path), str(batch), ",".join(providers),
           str(threads)]  # fmt: skip
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        log.warning("peak memory of %s: no answer in %.0f s", path.name, TIMEOUT_S)
        return None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        log.warning("peak memory of %s: the child failed: %s", path.name, last)
        return None
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    return MemoryUse(int(doc["rss_bytes"]), doc["device_bytes"])


def _rss_kib(field: str) -> int | None:
    """`VmRSS`/`VmHWM` of this process in KiB (None where /proc is not there)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _max_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def _device_bytes(session: Any) -> int | None:
    """Device memory NVML attributes to this process, when the session runs on CUDA."""
    if not set(session.get_providers()) & {"CUDAExecutionProvider", "TensorrtExecutionProvider"}:
        return None
    try:  # optional: only where the NVIDIA bindings are installed
        pynvml = importlib.import_module("pynvml")
    except ImportError:
        return None
    pynvml.nvmlInit()
    try:
        total = 0
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                if proc.pid == os.getpid() and proc.usedGpuMemory:
                    total += int(proc.usedGpuMemory)
        return total or None
    finally:
        pynvml.nvmlShutdown()


def _main(argv: Sequence[str]) -> None:
    """Child: MODEL FEEDS.npz PROVIDERS THREADS; prints {"rss_bytes", "device_bytes"}."""
    import onnxruntime as ort

    model, batch, providers, threads = argv
    with np.load(batch, allow_pickle=True) as data:  # written by the parent just now
        feeds = {k: data[k] for k in data.files}
    start_kib = _rss_kib("VmRSS")
    start = start_kib * 1024 if start_kib is not None else _max_rss_bytes()
    options = ort.SessionOptions()  # as guards._runtime.session_options sets them
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = int(threads)
    options.log_severity_level = 3
    session = ort.InferenceSession(model, sess_options=options, providers=providers.split(","))
    names = [o.name for o in session.get_outputs()]
    for _ in range(RUNS):
        session.run(names, feeds)
    peak_kib = _rss_kib("VmHWM")
    peak = peak_kib * 1024 if peak_kib is not None else _max_rss_bytes()
    doc = {"rss_bytes": max(peak - start, 0), "device_bytes": _device_bytes(session)}
    print(json.dumps(doc))


if __name__ == "__main__":
    _main(sys.argv[1:])
