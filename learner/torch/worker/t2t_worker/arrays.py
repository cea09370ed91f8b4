"""Request fields to tensors and tensors to reply values.

Arrays of numbers travel as msgpack bin holding little-endian int32 (``i32``) or float32
(``f32``) elements (PROTOCOL.md, "Frames"); a plain msgpack array of numbers is accepted too.
The field helpers raise ``BadRequest`` naming the field when a value is missing, mistyped or
of the wrong length.
"""

import math
import struct

import torch

from .errors import BadRequest


def _is_bin(v):
    return isinstance(v, (bytes, bytearray, memoryview))


def _from_bin(v, dtype, field):
    if len(v) % 4:
        raise BadRequest("%s: %d bytes is not a whole number of 4-byte elements" % (field, len(v)))
    if len(v) == 0:
        return torch.empty(0, dtype=dtype)
    return torch.frombuffer(bytearray(v), dtype=dtype)


def i32(v, field, n=None):
    """An int32 array field (bin or list of ints) as a 1-D torch.int64 tensor."""
    if _is_bin(v):
        t = _from_bin(v, torch.int32, field).long()
    elif isinstance(v, (list, tuple)):
        if not all(isinstance(x, int) and not isinstance(x, bool) and -2**31 <= x < 2**31 for x in v):
            raise BadRequest("%s: want int32 values" % field)
        t = torch.tensor(v, dtype=torch.int64)
    else:
        raise BadRequest("%s: want an i32 array (msgpack bin), got %s" % (field, type(v).__name__))
    if n is not None and t.numel() != n:
        raise BadRequest("%s: %d values, want %d" % (field, t.numel(), n))
    return t


def f32(v, field, n=None, allowed=None):
    """A float32 array field (bin or list of numbers) as a 1-D torch.float32 tensor. allowed, if
    given, lists the accepted lengths (n is then ignored)."""
    if _is_bin(v):
        t = _from_bin(v, torch.float32, field).clone()
    elif isinstance(v, (list, tuple)):
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            raise BadRequest("%s: want float values" % field)
        t = torch.tensor(v, dtype=torch.float32)
    else:
        raise BadRequest("%s: want an f32 array (msgpack bin), got %s" % (field, type(v).__name__))
    if allowed is not None:
        if t.numel() not in allowed:
            raise BadRequest("%s: %d values, want %s" % (field, t.numel(), " or ".join(str(a) for a in allowed)))
    elif n is not None and t.numel() != n:
        raise BadRequest("%s: %d values, want %d" % (field, t.numel(), n))
    return t


def i32_rows(v, field):
    """A list of i32 arrays as a list of 1-D int64 tensors."""
    if not isinstance(v, (list, tuple)):
        raise BadRequest("%s: want a list of i32 arrays, got %s" % (field, type(v).__name__))
    return [i32(x, "%s[%d]" % (field, i)) for i, x in enumerate(v)]


def to_i32_bin(t):
    """A tensor (any integer dtype) or list of ints as i32 bin bytes."""
    if not torch.is_tensor(t):
        return struct.pack("<%di" % len(t), *t)
    return _raw(t.detach().to("cpu", torch.int32).contiguous())


def to_f32_bin(t):
    """A tensor or list of floats as f32 bin bytes."""
    if not torch.is_tensor(t):
        return struct.pack("<%df" % len(t), *t)
    return _raw(t.detach().to("cpu", torch.float32).contiguous())


def _raw(t):
    from .safetensors_io import tensor_bytes

    return tensor_bytes(t)


# ---- Scalar fields.

def req(d, field):
    if field not in d or d[field] is None:
        raise BadRequest("missing field %r" % field)
    return d[field]


def get_int(d, field, default=None, lo=None, hi=None):
    """An int field (default when absent or nil; required when default is None)."""
    v = d.get(field)
    if v is None:
        if default is None:
            raise BadRequest("missing field %r" % field)
        return default
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadRequest("%s: want an integer, got %r" % (field, v))
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise BadRequest("%s=%d: want %s" % (field, v, _range(lo, hi)))
    return v


def get_float(d, field, default=None, lo=None, hi=None):
    """A finite float field (default when absent or nil; required when default is None)."""
    v = d.get(field)
    if v is None:
        if default is None:
            raise BadRequest("missing field %r" % field)
        return float(default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise BadRequest("%s: want a finite number, got %r" % (field, v))
    v = float(v)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise BadRequest("%s=%g: want %s" % (field, v, _range(lo, hi)))
    return v


def get_str(d, field, default=None, choices=None):
    v = d.get(field)
    if v is None:
        if default is None:
            raise BadRequest("missing field %r" % field)
        v = default
    if not isinstance(v, str):
        raise BadRequest("%s: want a string, got %r" % (field, v))
    if choices is not None and v not in choices:
        raise BadRequest("%s=%r: want one of %s" % (field, v, ", ".join(repr(c) for c in choices)))
    return v


def get_bool(d, field, default=False):
    v = d.get(field)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise BadRequest("%s: want a boolean, got %r" % (field, v))
    return v


def _range(lo, hi):
    if hi is None:
        return ">= %s" % lo
    if lo is None:
        return "<= %s" % hi
    return "in [%s, %s]" % (lo, hi)
