"""Safetensors files with torch and json only (no ``safetensors`` or numpy package).

Format (as learner/safetensors.go): an 8-byte little-endian header length N, N bytes of JSON
``{name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}``, then the
raw little-endian tensor bytes. Offsets are relative to the end of the header and must tile
the data exactly. This module reads F32, F16, BF16 and F64 tensors as float32 (others are
reported, not read), reads a sharded checkpoint through ``model.safetensors.index.json`` with
Go's consistency checks, and writes F32/BF16/F16 files through a temporary file in the same
directory renamed into place (``atomic_write``). Every failure is a ``SafetensorsError``.
"""

import ctypes
import json
import os
import struct
import sys
import tempfile

import torch

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
MAX_HEADER = 100 << 20

DTYPE_SIZES = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "F16": 2, "BF16": 2, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
FLOAT_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}
WRITE_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}

if sys.byteorder != "little":  # tensors are read and written in host order
    raise ImportError("t2t_worker needs a little-endian host")


class SafetensorsError(ValueError):
    """A malformed, inconsistent or unreadable safetensors file or index."""


def parse_header(js):
    """Parses and validates header JSON bytes. Returns (tensors, metadata, data_len) where tensors
    maps name -> {"dtype", "shape", "offsets"}."""
    try:
        raw = json.loads(js)
    except (ValueError, UnicodeDecodeError) as e:
        raise SafetensorsError("header JSON: %s" % e) from None
    if not isinstance(raw, dict):
        raise SafetensorsError("header JSON is not an object")
    tensors, metadata, spans = {}, {}, []
    for name, info in raw.items():
        if name == "__metadata__":
            if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()):
                raise SafetensorsError("__metadata__ must map strings to strings")
            metadata = info
            continue
        if name == "":
            raise SafetensorsError("empty tensor name")
        if not isinstance(info, dict):
            raise SafetensorsError("tensor %r: entry is not an object" % name)
        dtype, shape, offs = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        size = DTYPE_SIZES.get(dtype) if isinstance(dtype, str) else None
        if size is None:
            raise SafetensorsError("tensor %r: unsupported dtype %r" % (name, dtype))
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise SafetensorsError("tensor %r: bad shape %r" % (name, shape))
        if (not isinstance(offs, list) or len(offs) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offs)):
            raise SafetensorsError("tensor %r: bad data_offsets %r" % (name, offs))
        n = 1
        for d in shape:
            n *= d
        b, e = offs
        if b < 0 or e < b or e - b != n * size:
            raise SafetensorsError("tensor %r: offsets %r do not hold %d x %s" % (name, offs, n, dtype))
        tensors[name] = {"dtype": dtype, "shape": list(shape), "offsets": (b, e)}
        spans.append((b, e, name))
    spans.sort()
    data_len = 0
    for b, e, name in spans:
        if b != data_len:
            raise SafetensorsError("tensor %r starts at %d, want %d (holes or overlaps)" % (name, b, data_len))
        data_len = e
    return tensors, metadata, data_len


class SafetensorsFile:
    """An open safetensors file; tensors are read on demand."""

    def __init__(self, path):
        self.path = path
        try:
            self.f = open(path, "rb")
        except OSError as e:
            raise SafetensorsError("%s: %s" % (path, e.strerror or e)) from None
        try:
            head = self.f.read(8)
            if len(head) != 8:
                raise SafetensorsError("%s: file too short for a safetensors header" % path)
            n = struct.unpack("<Q", head)[0]
            if n > MAX_HEADER:
                raise SafetensorsError("%s: header of %d bytes exceeds %d" % (path, n, MAX_HEADER))
            js = self.f.read(n)
            if len(js) != n:
                raise SafetensorsError("%s: truncated header" % path)
            self.tensors, self.metadata, data_len = parse_header(js)
            self.data_start = 8 + n
            size = os.fstat(self.f.fileno()).st_size
            if size - self.data_start != data_len:
                raise SafetensorsError("%s: %d data bytes, the header describes %d" % (path, size - self.data_start, data_len))
        except Exception:
            self.f.close()
            raise

    def names(self):
        return sorted(self.tensors)

    def read_raw(self, name):
        """Returns (dtype, shape, bytearray) of a tensor."""
        info = self.tensors.get(name)
        if info is None:
            raise SafetensorsError("%s: no tensor %r" % (self.path, name))
        b, e = info["offsets"]
        self.f.seek(self.data_start + b)
        buf = bytearray(e - b)
        if self.f.readinto(buf) != e - b:
            raise SafetensorsError("%s: tensor %r: short read" % (self.path, name))
        return info["dtype"], info["shape"], buf

    def read_float(self, name):
        """Returns a float tensor as a float32 CPU tensor."""
        dtype, shape, buf = self.read_raw(name)
        tdtype = FLOAT_DTYPES.get(dtype)
        if tdtype is None:
            raise SafetensorsError("%s: tensor %r: dtype %s is not a float" % (self.path, name, dtype))
        return bytes_to_tensor(buf, tdtype, shape).to(torch.float32)

    def close(self):
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def bytes_to_tensor(buf, dtype, shape):
    """A CPU tensor of dtype and shape over a writable bytes-like buffer (little-endian)."""
    n = 1
    for d in shape:
        n *= d
    if n == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(buf, dtype=dtype).reshape(shape)


def tensor_bytes(t):
    """The raw bytes of a tensor (copied to a contiguous CPU tensor first)."""
    t = t.detach().to("cpu").contiguous()
    n = t.numel() * t.element_size()
    if n == 0:
        return b""
    return ctypes.string_at(t.data_ptr(), n)


class SafetensorsSet:
    """A model directory's weights: model.safetensors, or the shards an index names."""

    def __init__(self, dir_path):
        self.shards, self.where = [], {}
        idx_path = os.path.join(dir_path, INDEX_FILE)
        if not os.path.exists(idx_path):
            s = SafetensorsFile(os.path.join(dir_path, SINGLE_FILE))
            self.shards.append(s)
            self.where = {n: s for n in s.tensors}
            return
        try:
            with open(idx_path, "rb") as f:
                idx = json.loads(f.read())
        except OSError as e:
            raise SafetensorsError("%s: %s" % (idx_path, e.strerror or e)) from None
        except ValueError as e:
            raise SafetensorsError("%s: %s" % (idx_path, e)) from None
        wm = idx.get("weight_map") if isinstance(idx, dict) else None
        if not isinstance(wm, dict) or not wm:
            raise SafetensorsError("%s: empty or missing weight_map" % idx_path)
        by_file = {}
        try:
            for name, fname in wm.items():
                if not isinstance(fname, str) or os.path.basename(fname) != fname or fname in ("", ".", ".."):
                    raise SafetensorsError("%s: shard %r is not a plain file name" % (idx_path, fname))
                by_file.setdefault(fname, None)
            for fname in sorted(by_file):
                s = SafetensorsFile(os.path.join(dir_path, fname))
                by_file[fname] = s
                self.shards.append(s)
            for name, fname in wm.items():
                s = by_file[fname]
                if name not in s.tensors:
                    raise SafetensorsError("%s: tensor %r is not in shard %s" % (idx_path, name, fname))
                self.where[name] = s
            for s in self.shards:
                for name in s.tensors:
                    if self.where.get(name) is not s:
                        raise SafetensorsError("%s: tensor %r in %s is not indexed there" % (idx_path, name, s.path))
        except Exception:
            self.close()
            raise

    def names(self):
        return sorted(self.where)

    def info(self, name):
        s = self.where.get(name)
        return None if s is None else s.tensors[name]

    def read_float(self, name):
        s = self.where.get(name)
        if s is None:
            raise SafetensorsError("no tensor %r" % name)
        return s.read_float(name)

    def close(self):
        for s in self.shards:
            s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_file(path):
    """Reads every float tensor of a safetensors file: ({name: float32 tensor}, metadata, {name: dtype})."""
    with SafetensorsFile(path) as f:
        return ({n: f.read_float(n) for n in f.names()}, dict(f.metadata),
                {n: f.tensors[n]["dtype"] for n in f.names()})


def encode_header(entries, metadata=None):
    """Header bytes (length prefix + space-padded JSON, data then 8-byte aligned) for entries,
    a list of (name, dtype, shape) in data order."""
    hdr = {}
    if metadata:
        hdr["__metadata__"] = dict(metadata)
    off = 0
    for name, dtype, shape in entries:
        if not name or name == "__metadata__":
            raise SafetensorsError("invalid tensor name %r" % name)
        if name in hdr:
            raise SafetensorsError("duplicate tensor name %r" % name)
        n = DTYPE_SIZES[dtype]
        for d in shape:
            n *= d
        hdr[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    js = json.dumps(hdr, sort_keys=True, separators=(",", ":")).encode("utf-8")
    js += b" " * (-len(js) % 8)
    return struct.pack("<Q", len(js)) + js


def write_stream(f, tensors, dtype="F32", metadata=None):
    """Writes tensors, a list of (name, tensor or zero-argument function returning a tensor),
    converted to dtype (F32, BF16 or F16), to the binary file f. A function is called when its
    data is written, so a caller can produce one large tensor at a time."""
    if dtype not in WRITE_DTYPES:
        raise SafetensorsError("cannot write dtype %r (want F32, BF16 or F16)" % dtype)
    tdtype = WRITE_DTYPES[dtype]
    shapes = []
    for name, t in tensors:
        shape = t.shape if torch.is_tensor(t) else getattr(t, "shape", None)
        if shape is None:
            raise SafetensorsError("tensor %r: a lazy tensor needs a .shape attribute" % name)
        shapes.append((name, dtype, list(shape)))
    f.write(encode_header(shapes, metadata))
    for (name, t), (_, _, shape) in zip(tensors, shapes):
        if not torch.is_tensor(t):
            t = t()
        if list(t.shape) != shape:
            raise SafetensorsError("tensor %r: produced shape %s, announced %s" % (name, list(t.shape), shape))
        f.write(tensor_bytes(t.detach().to(tdtype)))


class Lazy:
    """A tensor produced on demand (for write_stream): shape plus a zero-argument function."""

    def __init__(self, shape, fn):
        self.shape = list(shape)
        self.fn = fn

    def __call__(self):
        return self.fn()


def atomic_write(path, write):
    """Calls write(f) on a temporary file in path's directory, fsyncs it and renames it to path.
    On failure the temporary file is removed and path is left as it was."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp creates 0600; a checkpoint is shared like any file the user writes.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_file(path, tensors, dtype="F32", metadata=None):
    """Writes a safetensors file atomically (see write_stream for tensors)."""
    atomic_write(path, lambda f: write_stream(f, tensors, dtype, metadata))
