"""The runtime's private CUDA streams.

On CUDA the runtime's copy, warmup and capture streams are made here, outside c10's stream
pool, so no user's ``torch.cuda.Stream()`` is ever one of them (case G8).
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any

import torch

log = logging.getLogger("graphdispatch")

_CUDART: list[Any] = []


def _cudart() -> Any:
    """The CUDA runtime library torch loaded (found in /proc/self/maps), or None."""
    if not _CUDART:
        path = None
        try:
            with open("/proc/self/maps") as maps:
                for line in maps:
                    if "/libcudart.so" in line:
                        path = line.split()[-1]
                        break
        except OSError:
            pass
        _CUDART.append(ctypes.CDLL(path) if path else None)
    return _CUDART[0]


def new_cuda_stream(device: str) -> int | None:
    """The stream id of a new CUDA stream on ``device``, for the runtime's pipeline (case G8).

    c10's stream pool hands its 32 streams per priority round-robin to every caller
    (``getStreamFromPool``, c10/cuda/CUDAStream.cpp; ``torch.cuda.Stream()`` takes one), so a
    pool stream is eventually also a user's. This one comes from the CUDA runtime itself,
    non-blocking as the pool's are, wrapped as ``torch.cuda.ExternalStream``; it lives for the
    process. None (c10's pool then serves, with a log line) when torch's CUDA runtime is not a
    loaded shared library.
    """
    cudart = _cudart()
    if cudart is None:
        log.info(
            "graphdispatch: libcudart not found among loaded libraries; %s uses c10's "
            "stream pool, which user streams share",
            device,
        )
        return None
    index = torch.device(device).index or 0
    stream = ctypes.c_void_p()
    with torch.cuda.device(index):
        error = cudart.cudaStreamCreateWithFlags(ctypes.byref(stream), 1)  # cudaStreamNonBlocking
    if error != 0:
        log.info(
            "graphdispatch: cudaStreamCreateWithFlags failed (error %d) on %s; c10's "
            "stream pool serves",
            error,
            device,
        )
        return None
    return torch.cuda.ExternalStream(stream.value, device=index).stream_id
