"""msgpack codec and frame tests."""

import os
import struct
import tempfile
import unittest

import helpers  # noqa: F401 - sets sys.path
from t2t_worker import wire


class CodecTest(unittest.TestCase):
    def roundtrip(self, v):
        got = wire.unpackb(wire.packb(v))
        self.assertEqual(got, v)
        self.assertEqual(type(got), type(v))
        return got

    def test_scalars(self):
        for v in (None, True, False, 0.0, -1.5, 1e300, float("inf"), "", "héllo", b"", b"\x00\xff"):
            self.roundtrip(v)

    def test_edge_ints(self):
        edges = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1,
                 -1, -32, -33, -128, -129, -32768, -32769, -2**31, -2**31 - 1, -2**63]
        for v in edges:
            self.roundtrip(v)
        for v in (2**64, -2**63 - 1):
            with self.assertRaises(wire.WireError):
                wire.packb(v)

    def test_smallest_int_forms(self):
        self.assertEqual(wire.packb(5), b"\x05")
        self.assertEqual(wire.packb(-3), b"\xfd")
        self.assertEqual(wire.packb(200), b"\xcc\xc8")
        self.assertEqual(wire.packb(-100), b"\xd0\x9c")
        self.assertEqual(wire.packb(70000), b"\xce\x00\x01\x11\x70")
        self.assertEqual(wire.packb(-70000), b"\xd2" + struct.pack(">i", -70000))
        self.assertEqual(wire.packb(1.0), b"\xcb" + struct.pack(">d", 1.0))

    def test_decode_every_int_width(self):
        cases = {b"\xcc\xff": 255, b"\xcd\xff\xff": 65535, b"\xce\xff\xff\xff\xff": 2**32 - 1,
                 b"\xcf" + b"\xff" * 8: 2**64 - 1, b"\xd0\x80": -128, b"\xd1\x80\x00": -32768,
                 b"\xd2\x80\x00\x00\x00": -2**31, b"\xd3\x80" + b"\x00" * 7: -2**63,
                 b"\xcc\x01": 1, b"\xd3" + b"\x00" * 7 + b"\x05": 5}
        for data, want in cases.items():
            self.assertEqual(wire.unpackb(data), want, data)

    def test_float32_decode(self):
        self.assertEqual(wire.unpackb(b"\xca" + struct.pack(">f", 0.5)), 0.5)

    def test_lengths(self):
        for n in (0, 31, 32, 255, 256, 65535, 65536):
            self.roundtrip("x" * n)
            self.roundtrip(bytes(range(256)) * (n // 256) + b"y" * (n % 256))
        for n in (0, 15, 16, 65536):
            self.roundtrip(list(range(n)))
        for n in (0, 15, 16, 300):
            self.roundtrip({"k%d" % i: i for i in range(n)})

    def test_nested(self):
        v = {"id": 7, "batch": {"rows": 2, "tokens": b"\x01\x00\x00\x00" * 4, "ref": None,
                                "nested": [[1, [2, {"a": [True, False, None]}]], {"x": -1.25}]},
             "list": [b"ab", b"", "s", 3.5]}
        self.roundtrip(v)

    def test_tuple_and_bytearray_encode(self):
        self.assertEqual(wire.unpackb(wire.packb((1, bytearray(b"ab"), memoryview(b"cd")))), [1, b"ab", b"cd"])

    def test_rejects(self):
        bad = {
            "truncated int": b"\xcd\x01",
            "truncated str": b"\xa5abc",
            "truncated bin": b"\xc4\x05ab",
            "truncated array": b"\x93\x01\x02",
            "truncated map": b"\x82\xa1a\x01",
            "trailing bytes": b"\x01\x02",
            "reserved byte": b"\xc1",
            "ext": b"\xd4\x01\x02",
            "bad utf-8": b"\xa2\xff\xfe",
            "unhashable key": b"\x81\x90\x01",
            "empty": b"",
        }
        for what, data in bad.items():
            with self.assertRaises(wire.WireError, msg=what):
                wire.unpackb(data)

    def test_unencodable(self):
        with self.assertRaises(wire.WireError):
            wire.packb({"x": object()})


class FrameTest(unittest.TestCase):
    def pipe_with(self, data):
        """A reader over data (a temporary file: pipes hold only 64 KiB without a reader)."""
        f = tempfile.TemporaryFile()
        self.addCleanup(f.close)
        f.write(data)
        f.seek(0)
        return wire.FrameReader(f.fileno())

    def test_frames_roundtrip(self):
        msgs = [{"id": 1, "op": "x"}, {"id": 2, "data": b"\x00" * 100000}, {"a": [1, 2, {"b": None}]}]
        rd = self.pipe_with(b"".join(wire.encode_frame(m) for m in msgs))
        for m in msgs:
            self.assertEqual(rd.read(), m)
        with self.assertRaises(EOFError):
            rd.read()

    def test_nonblocking(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        rd = wire.FrameReader(r)
        self.assertIsNone(rd.read(block=False))
        frame = wire.encode_frame({"op": "cancel", "target": 3})
        os.write(w, frame[:3])
        self.assertIsNone(rd.read(block=False))
        os.write(w, frame[3:])
        self.assertEqual(rd.read(block=False), {"op": "cancel", "target": 3})
        os.close(w)
        with self.assertRaises(EOFError):
            rd.read(block=False)

    def test_writer(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        wire.FrameWriter(w).write({"id": 9, "ok": True})
        os.close(w)
        self.assertEqual(wire.FrameReader(r).read(), {"id": 9, "ok": True})

    def test_bad_frames(self):
        cases = {
            "zero length": b"\x00\x00\x00\x00",
            "too long": struct.pack(">I", (1 << 30) + 1),
            "not a map": struct.pack(">I", 2) + b"\x92\x01",
            "non-string key": struct.pack(">I", 3) + b"\x81\x01\x02",
            "garbage body": struct.pack(">I", 3) + b"\xc1\xc1\xc1",
            "truncated at end of input": struct.pack(">I", 10) + b"\x81\xa1a",
            "truncated header": b"\x00\x00",
        }
        for what, data in cases.items():
            rd = self.pipe_with(data)
            with self.assertRaises(wire.WireError, msg=what):
                rd.read()


if __name__ == "__main__":
    unittest.main()
