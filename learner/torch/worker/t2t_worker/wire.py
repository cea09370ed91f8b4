"""The wire format: a small msgpack codec and length-prefixed frames (PROTOCOL.md, "Frames").

This module owns every byte that crosses the pipe. It never imports the ``msgpack`` package:
the same code path runs everywhere. Supported msgpack types: nil, bool, int (positive and
negative fixint, uint8..uint64, int8..int64), float32 and float64, str, bin, array and map.
Encoding picks the smallest int form, always writes floats as float64, writes ``bytes``,
``bytearray`` and ``memoryview`` as bin and tuples as arrays. Decoding returns bin as
``bytes``. Anything else (ext types, the never-used 0xc1, truncated or trailing bytes,
invalid UTF-8) is a ``WireError``.

A frame is a 4-byte big-endian length N (1 <= N <= 2^30) and N bytes holding one msgpack map
with string keys. ``FrameReader`` reads frames from a file descriptor, blocking or not (the
non-blocking form lets generation look for ``cancel`` between decode steps); ``FrameWriter``
writes them.
"""

import os
import select
import struct

MAX_FRAME = 1 << 30
MAX_DEPTH = 256

_pack_d = struct.Struct(">d").pack
_u16 = struct.Struct(">H")
_u32 = struct.Struct(">I")
_u64 = struct.Struct(">Q")
_i8 = struct.Struct(">b")
_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")
_i64 = struct.Struct(">q")
_f32 = struct.Struct(">f")
_f64 = struct.Struct(">d")


class WireError(ValueError):
    """Malformed msgpack or a malformed frame: the stream can no longer be trusted."""


# ---- Encoding.

def packb(obj):
    """Encodes obj as msgpack bytes."""
    out = []
    _pack(obj, out, 0)
    return b"".join(out)


def _pack_int(v, out):
    if 0 <= v:
        if v < 0x80:
            out.append(bytes((v,)))
        elif v <= 0xFF:
            out.append(b"\xcc" + bytes((v,)))
        elif v <= 0xFFFF:
            out.append(b"\xcd" + _u16.pack(v))
        elif v <= 0xFFFFFFFF:
            out.append(b"\xce" + _u32.pack(v))
        elif v <= 0xFFFFFFFFFFFFFFFF:
            out.append(b"\xcf" + _u64.pack(v))
        else:
            raise WireError("int %d does not fit in uint64" % v)
    else:
        if v >= -32:
            out.append(bytes((v & 0xFF,)))
        elif v >= -0x80:
            out.append(b"\xd0" + _i8.pack(v))
        elif v >= -0x8000:
            out.append(b"\xd1" + _i16.pack(v))
        elif v >= -0x80000000:
            out.append(b"\xd2" + _i32.pack(v))
        elif v >= -0x8000000000000000:
            out.append(b"\xd3" + _i64.pack(v))
        else:
            raise WireError("int %d does not fit in int64" % v)


def _pack_len(n, fix_tag, fix_max, tag16, tag32, out, what):
    if n <= fix_max:
        out.append(bytes((fix_tag | n,)))
    elif n <= 0xFFFF:
        out.append(tag16 + _u16.pack(n))
    elif n <= 0xFFFFFFFF:
        out.append(tag32 + _u32.pack(n))
    else:
        raise WireError("%s of %d entries is too long for msgpack" % (what, n))


def _pack(obj, out, depth):
    if depth > MAX_DEPTH:
        raise WireError("value nested deeper than %d levels" % MAX_DEPTH)
    if obj is None:
        out.append(b"\xc0")
    elif obj is True:
        out.append(b"\xc3")
    elif obj is False:
        out.append(b"\xc2")
    elif isinstance(obj, int):
        _pack_int(int(obj), out)
    elif isinstance(obj, float):
        out.append(b"\xcb" + _pack_d(obj))
    elif isinstance(obj, str):
        b = obj.encode("utf-8")
        n = len(b)
        if n < 32:
            out.append(bytes((0xA0 | n,)))
        elif n <= 0xFF:
            out.append(b"\xd9" + bytes((n,)))
        elif n <= 0xFFFF:
            out.append(b"\xda" + _u16.pack(n))
        elif n <= 0xFFFFFFFF:
            out.append(b"\xdb" + _u32.pack(n))
        else:
            raise WireError("string of %d bytes is too long for msgpack" % n)
        out.append(b)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        b = obj.tobytes() if isinstance(obj, memoryview) else bytes(obj)
        n = len(b)
        if n <= 0xFF:
            out.append(b"\xc4" + bytes((n,)))
        elif n <= 0xFFFF:
            out.append(b"\xc5" + _u16.pack(n))
        elif n <= 0xFFFFFFFF:
            out.append(b"\xc6" + _u32.pack(n))
        else:
            raise WireError("bin of %d bytes is too long for msgpack" % n)
        out.append(b)
    elif isinstance(obj, (list, tuple)):
        _pack_len(len(obj), 0x90, 15, b"\xdc", b"\xdd", out, "array")
        for x in obj:
            _pack(x, out, depth + 1)
    elif isinstance(obj, dict):
        _pack_len(len(obj), 0x80, 15, b"\xde", b"\xdf", out, "map")
        for k, v in obj.items():
            _pack(k, out, depth + 1)
            _pack(v, out, depth + 1)
    else:
        # numpy / torch scalars and the like: anything int()- or float()-convertible.
        if hasattr(obj, "item"):
            _pack(obj.item(), out, depth)
        else:
            raise WireError("cannot encode a %s" % type(obj).__name__)


# ---- Decoding.

def unpackb(data):
    """Decodes exactly one msgpack value filling data (bytes-like); trailing bytes are an error."""
    mv = memoryview(data)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    obj, pos = _unpack(mv, 0, 0)
    if pos != len(mv):
        raise WireError("%d trailing bytes after the msgpack value" % (len(mv) - pos))
    return obj


def _need(mv, pos, n):
    if pos + n > len(mv):
        raise WireError("truncated msgpack: need %d bytes at offset %d, have %d" % (n, pos, len(mv) - pos))


def _unpack(mv, pos, depth):
    if depth > MAX_DEPTH:
        raise WireError("msgpack nested deeper than %d levels" % MAX_DEPTH)
    _need(mv, pos, 1)
    b = mv[pos]
    pos += 1
    if b <= 0x7F:
        return b, pos
    if b >= 0xE0:
        return b - 0x100, pos
    if 0xA0 <= b <= 0xBF:
        return _str(mv, pos, b & 0x1F)
    if 0x90 <= b <= 0x9F:
        return _array(mv, pos, b & 0x0F, depth)
    if 0x80 <= b <= 0x8F:
        return _map(mv, pos, b & 0x0F, depth)
    if b == 0xC0:
        return None, pos
    if b == 0xC2:
        return False, pos
    if b == 0xC3:
        return True, pos
    if b == 0xCC:
        _need(mv, pos, 1)
        return mv[pos], pos + 1
    if b == 0xCD:
        _need(mv, pos, 2)
        return _u16.unpack_from(mv, pos)[0], pos + 2
    if b == 0xCE:
        _need(mv, pos, 4)
        return _u32.unpack_from(mv, pos)[0], pos + 4
    if b == 0xCF:
        _need(mv, pos, 8)
        return _u64.unpack_from(mv, pos)[0], pos + 8
    if b == 0xD0:
        _need(mv, pos, 1)
        return _i8.unpack_from(mv, pos)[0], pos + 1
    if b == 0xD1:
        _need(mv, pos, 2)
        return _i16.unpack_from(mv, pos)[0], pos + 2
    if b == 0xD2:
        _need(mv, pos, 4)
        return _i32.unpack_from(mv, pos)[0], pos + 4
    if b == 0xD3:
        _need(mv, pos, 8)
        return _i64.unpack_from(mv, pos)[0], pos + 8
    if b == 0xCA:
        _need(mv, pos, 4)
        return _f32.unpack_from(mv, pos)[0], pos + 4
    if b == 0xCB:
        _need(mv, pos, 8)
        return _f64.unpack_from(mv, pos)[0], pos + 8
    if b == 0xD9:
        _need(mv, pos, 1)
        return _str(mv, pos + 1, mv[pos])
    if b == 0xDA:
        _need(mv, pos, 2)
        return _str(mv, pos + 2, _u16.unpack_from(mv, pos)[0])
    if b == 0xDB:
        _need(mv, pos, 4)
        return _str(mv, pos + 4, _u32.unpack_from(mv, pos)[0])
    if b == 0xC4:
        _need(mv, pos, 1)
        return _bin(mv, pos + 1, mv[pos])
    if b == 0xC5:
        _need(mv, pos, 2)
        return _bin(mv, pos + 2, _u16.unpack_from(mv, pos)[0])
    if b == 0xC6:
        _need(mv, pos, 4)
        return _bin(mv, pos + 4, _u32.unpack_from(mv, pos)[0])
    if b == 0xDC:
        _need(mv, pos, 2)
        return _array(mv, pos + 2, _u16.unpack_from(mv, pos)[0], depth)
    if b == 0xDD:
        _need(mv, pos, 4)
        return _array(mv, pos + 4, _u32.unpack_from(mv, pos)[0], depth)
    if b == 0xDE:
        _need(mv, pos, 2)
        return _map(mv, pos + 2, _u16.unpack_from(mv, pos)[0], depth)
    if b == 0xDF:
        _need(mv, pos, 4)
        return _map(mv, pos + 4, _u32.unpack_from(mv, pos)[0], depth)
    if b in (0xC7, 0xC8, 0xC9) or 0xD4 <= b <= 0xD8:
        raise WireError("msgpack ext type 0x%02x at offset %d is not supported" % (b, pos - 1))
    raise WireError("invalid msgpack byte 0x%02x at offset %d" % (b, pos - 1))


def _str(mv, pos, n):
    _need(mv, pos, n)
    try:
        return str(mv[pos:pos + n], "utf-8"), pos + n
    except UnicodeDecodeError as e:
        raise WireError("invalid UTF-8 in msgpack string at offset %d: %s" % (pos, e)) from None


def _bin(mv, pos, n):
    _need(mv, pos, n)
    return mv[pos:pos + n].tobytes(), pos + n


def _array(mv, pos, n, depth):
    # Every element takes at least one byte: reject absurd counts before allocating.
    _need(mv, pos, n)
    out = []
    for _ in range(n):
        x, pos = _unpack(mv, pos, depth + 1)
        out.append(x)
    return out, pos


def _map(mv, pos, n, depth):
    _need(mv, pos, 2 * n)
    out = {}
    for _ in range(n):
        k, pos = _unpack(mv, pos, depth + 1)
        v, pos = _unpack(mv, pos, depth + 1)
        try:
            out[k] = v
        except TypeError:
            raise WireError("unhashable msgpack map key of type %s" % type(k).__name__) from None
    return out, pos


# ---- Frames.

def decode_body(body):
    """Decodes a frame body: one msgpack map with string keys."""
    obj = unpackb(body)
    if not isinstance(obj, dict):
        raise WireError("frame body is a msgpack %s, want a map" % type(obj).__name__)
    for k in obj:
        if not isinstance(k, str):
            raise WireError("frame map key %r is not a string" % (k,))
    return obj


def encode_frame(obj):
    """Returns the frame (length prefix and body) holding the map obj."""
    return b"".join(_frame_parts(obj))


def _frame_parts(obj):
    if not isinstance(obj, dict):
        raise WireError("a frame holds a map, not a %s" % type(obj).__name__)
    body = packb(obj)
    if not 1 <= len(body) <= MAX_FRAME:
        raise WireError("frame body of %d bytes is outside [1, 2^30]" % len(body))
    return _u32.pack(len(body)), body


def frame_length(header):
    """Validates a 4-byte frame header and returns the body length."""
    n = _u32.unpack(bytes(header))[0]
    if n == 0 or n > MAX_FRAME:
        raise WireError("frame length %d is outside [1, 2^30]" % n)
    return n


class FrameReader:
    """Reads frames from a file descriptor, with a buffer of its own (so that select() on the
    descriptor tells the truth about pending input)."""

    def __init__(self, fd):
        self.fd = fd
        self.buf = bytearray()
        self.eof = False

    def _complete(self):
        """The total size of the first buffered frame if it is complete, else None."""
        if len(self.buf) < 4:
            return None
        n = frame_length(self.buf[:4])
        return 4 + n if len(self.buf) >= 4 + n else None

    def _want(self):
        if len(self.buf) < 4:
            return 4 - len(self.buf)
        return 4 + frame_length(self.buf[:4]) - len(self.buf)

    def read(self, block=True):
        """Returns the next frame's map. Without block, returns None when no complete frame is
        available now. Raises EOFError at a clean end of input and WireError on a malformed
        frame (including input that ends inside a frame)."""
        while True:
            size = self._complete()
            if size is not None:
                body = bytes(self.buf[4:size])
                del self.buf[:size]
                return decode_body(body)
            if self.eof:
                if self.buf:
                    raise WireError("input ended inside a frame (%d bytes buffered)" % len(self.buf))
                raise EOFError("end of input")
            if not block:
                ready, _, _ = select.select([self.fd], [], [], 0)
                if not ready:
                    return None
            chunk = os.read(self.fd, min(max(self._want(), 1 << 16), 1 << 26))
            if not chunk:
                self.eof = True
            else:
                self.buf += chunk


class FrameWriter:
    """Writes frames to a file descriptor (unbuffered: each frame is written out at once)."""

    def __init__(self, fd):
        self.fd = fd

    def write(self, obj):
        for part in _frame_parts(obj):  # header and body written apart: no copy of a large body
            data = memoryview(part)
            while data:
                n = os.write(self.fd, data)
                data = data[n:]
