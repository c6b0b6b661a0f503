"""Length-prefixed messages between grader and worker: JSON plus raw tensor bytes, never pickle."""
from __future__ import annotations

import json
import socket
import struct
import time
from typing import Any

from .safetext import clean

# Only plain numeric dtypes cross the boundary; anything else is refused on decode.
_DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")
DTYPES: dict = {}
_NAMES: dict = {}


def _torch():
    """torch, imported on first use: launching the zygote must not wait for the grader's own torch import."""
    import torch
    if not DTYPES:
        DTYPES.update({n: getattr(torch, n) for n in _DTYPE_NAMES})
        _NAMES.update({v: k for k, v in DTYPES.items()})
    return torch
_HEAD = struct.Struct("!II")  # header length, blob area length
MAX_MESSAGE = 256 * 1024 * 1024
MAX_DIMS = 32  # torch allows 64; no check sends more than a handful
MAX_DIM = 1 << 31  # a bound on each dimension, so that shapes multiply without overflow before any allocation


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed message."""


class ChannelClosed(ProtocolError):
    """The other side closed the connection (it exited or was killed)."""


class ChannelTimeout(ProtocolError):
    """No complete message arrived before the deadline."""


class Opaque:
    """A value the worker could not or would not send as data (e.g. a tensor subclass), by description only."""

    def __init__(self, description: str):
        self.description = description

    def __repr__(self) -> str:
        return f"<{self.description}>"


def _encode(obj: Any, blobs: list[bytes]) -> Any:
    torch = _torch()
    if obj is None or type(obj) in (bool, int, float, str):
        return obj
    if isinstance(obj, torch.Tensor):
        if type(obj) is not torch.Tensor and not isinstance(obj, torch.nn.Parameter):
            return {"$opaque": f"{type(obj).__name__} (a torch.Tensor subclass)"}
        t = obj.detach()
        if t.dtype not in _NAMES:
            return {"$opaque": f"tensor of dtype {t.dtype}"}
        if t.device.type == "meta":
            return {"$opaque": "tensor on the meta device"}
        t = t.to("cpu").contiguous()
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        blobs.append(data)
        return {"$t": len(blobs) - 1, "dtype": _NAMES[t.dtype], "shape": list(t.shape),
                "device": obj.device.type}
    if type(obj) is torch.Size:
        return {"$tuple": [int(d) for d in obj]}
    if type(obj) in (list, tuple):
        items = [_encode(x, blobs) for x in obj]
        return items if type(obj) is list else {"$tuple": items}
    if type(obj) is dict:
        return {"$dict": [[str(k), _encode(v, blobs)] for k, v in obj.items()]}
    return {"$opaque": f"object of type {type(obj).__name__}"}


def _decode(obj: Any, blobs: list[memoryview]) -> Any:
    if type(obj) is str:
        return clean(obj)  # the boundary: no escape codes or lone surrogates get past the grader's door
    if obj is None or type(obj) in (bool, int, float):
        return obj
    if type(obj) is list:
        return [_decode(x, blobs) for x in obj]
    if type(obj) is not dict:
        raise ProtocolError(f"unexpected value of type {type(obj).__name__}")
    if "$t" in obj:
        torch = _torch()
        dtype = DTYPES.get(obj.get("dtype"))
        shape = obj.get("shape")
        idx = obj["$t"]
        if dtype is None or type(shape) is not list or len(shape) > MAX_DIMS \
                or not all(type(s) is int and 0 <= s <= MAX_DIM for s in shape):
            raise ProtocolError("malformed tensor header")
        if type(idx) is not int or not 0 <= idx < len(blobs):
            raise ProtocolError("tensor refers to a missing blob")
        raw = blobs[idx]
        numel = 1
        for s in shape:
            numel *= s
        if len(raw) != numel * torch.empty((), dtype=dtype).element_size():
            raise ProtocolError("tensor size does not match its shape")
        if numel == 0:
            return torch.empty(shape, dtype=dtype)
        # bytearray copies the bytes: the tensor owns writable memory and shares nothing with the socket buffer.
        return torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape).clone()
    if "$tuple" in obj:
        return tuple(_decode(x, blobs) for x in obj["$tuple"])
    if "$dict" in obj:
        return {clean(k): _decode(v, blobs) for k, v in obj["$dict"]}
    if "$opaque" in obj:
        return Opaque(clean(obj["$opaque"])[:200])
    raise ProtocolError("unknown tagged value")


def pack(obj: Any) -> bytes:
    blobs: list[bytes] = []
    head = json.dumps({"body": _encode(obj, blobs), "sizes": [len(b) for b in blobs]}).encode()
    area = b"".join(blobs)
    return _HEAD.pack(len(head), len(area)) + head + area


def unpack(head: bytes, area: bytes) -> Any:
    try:
        meta = json.loads(head)
        sizes = meta["sizes"]
        if type(sizes) is not list or not all(type(s) is int and s >= 0 for s in sizes) or sum(sizes) != len(area):
            raise ProtocolError("blob sizes do not add up")
        view = memoryview(area)
        blobs, at = [], 0
        for s in sizes:
            blobs.append(view[at:at + s])
            at += s
        return _decode(meta["body"], blobs)
    except ProtocolError:
        raise
    except Exception as e:  # torch's RuntimeError, MemoryError, ...: whatever the data does, it is malformed
        raise ProtocolError(f"malformed message: {type(e).__name__}") from None


def send(sock: socket.socket, obj: Any) -> None:
    sock.sendall(pack(obj))


def _recv_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout("timed out")
            sock.settimeout(left)
        else:
            sock.settimeout(None)
        try:
            chunk = sock.recv(min(n - len(buf), 1 << 20))
        except socket.timeout:
            raise ChannelTimeout("timed out") from None
        except OSError as e:
            raise ChannelClosed(str(e)) from None
        if not chunk:
            raise ChannelClosed("connection closed")
        buf += chunk
    return bytes(buf)


def recv(sock: socket.socket, deadline: float | None = None, max_bytes: int = MAX_MESSAGE,
         max_head: int | None = None) -> Any:
    """max_head caps the JSON part alone: a few MB of `[{},{},...]` decode to GBs of Python objects."""
    head_len, area_len = _HEAD.unpack(_recv_exact(sock, _HEAD.size, deadline))
    if head_len + area_len > max_bytes or (max_head is not None and head_len > max_head):
        raise ProtocolError(f"message of {head_len + area_len} bytes is over the {max_bytes}-byte limit")
    head = _recv_exact(sock, head_len, deadline)
    area = _recv_exact(sock, area_len, deadline)
    return unpack(head, area)
