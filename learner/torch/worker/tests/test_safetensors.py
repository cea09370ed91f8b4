"""Safetensors reading/writing, sharded indexes and checkpoint loading checks."""

import json
import os
import struct
import tempfile
import unittest

import torch

import helpers
from t2t_worker import errors, ops, safetensors_io as st

SEED = 4242


class SafetensorsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.g = torch.Generator().manual_seed(SEED)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_roundtrip_dtypes(self):
        a = torch.randn(3, 5, generator=self.g)
        b = torch.randn(7, generator=self.g) * 1000
        special = torch.tensor([0.0, -0.0, 1e-40, 65504.0, 1e5, float("inf"), -float("inf")])
        for dtype, tdtype in (("F32", torch.float32), ("BF16", torch.bfloat16), ("F16", torch.float16)):
            p = self.path("x_%s.safetensors" % dtype)
            st.write_file(p, [("a", a), ("b", b), ("s", special), ("empty", torch.zeros(0, 4))], dtype, {"format": "pt"})
            ts, meta, dtypes = st.read_file(p)
            self.assertEqual(meta, {"format": "pt"})
            self.assertEqual(dtypes, {"a": dtype, "b": dtype, "s": dtype, "empty": dtype})
            for name, want in (("a", a), ("b", b), ("s", special)):
                self.assertTrue(torch.equal(ts[name], want.to(tdtype).float()), "%s %s seed %d" % (dtype, name, SEED))
            self.assertEqual(list(ts["empty"].shape), [0, 4])
            with open(p, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
            self.assertEqual((8 + n) % 8, 0)

    def test_bf16_rounding_is_nearest_even(self):
        # 1 + 2^-8 lies halfway between two bfloat16 values: ties to even (1.0); 1 + 3·2^-8 rounds up.
        x = torch.tensor([1 + 2 ** -8, 1 + 3 * 2 ** -8])
        p = self.path("r.safetensors")
        st.write_file(p, [("x", x)], "BF16")
        got = st.read_file(p)[0]["x"]
        self.assertEqual(got.tolist(), [1.0, 1 + 2 ** -6])

    def test_lazy_tensors(self):
        calls = []
        lazy = st.Lazy([2, 2], lambda: calls.append(1) or torch.ones(2, 2))
        p = self.path("lazy.safetensors")
        st.write_file(p, [("l", lazy)])
        self.assertEqual(calls, [1])
        self.assertTrue(torch.equal(st.read_file(p)[0]["l"], torch.ones(2, 2)))

    def write_raw(self, name, header, data=b""):
        js = json.dumps(header).encode()
        with open(self.path(name), "wb") as f:
            f.write(struct.pack("<Q", len(js)) + js + data)
        return self.path(name)

    def test_bad_files(self):
        cases = {
            "hole": ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8),
            "overlap": ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                         "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8),
            "size mismatch": ({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8),
            "unknown dtype": ({"a": {"dtype": "F8", "shape": [1], "data_offsets": [0, 1]}}, b"\0"),
            "data too long": ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 8),
            "data too short": ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4),
            "bad metadata": ({"__metadata__": {"a": 1}}, b""),
            "negative shape": ({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}}, b""),
        }
        for what, (hdr, data) in cases.items():
            with self.assertRaises(st.SafetensorsError, msg=what):
                st.SafetensorsFile(self.write_raw(what.replace(" ", "_"), hdr, data))
        with open(self.path("short"), "wb") as f:
            f.write(b"\x01\x02")
        with self.assertRaises(st.SafetensorsError):
            st.SafetensorsFile(self.path("short"))
        with self.assertRaises(st.SafetensorsError):
            st.SafetensorsFile(self.path("missing"))
        p = self.write_raw("ints", {"i": {"dtype": "I32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4)
        with st.SafetensorsFile(p) as f, self.assertRaises(st.SafetensorsError):
            f.read_float("i")

    def test_atomic_write_failure_keeps_old_file(self):
        p = self.path("keep.safetensors")
        st.write_file(p, [("a", torch.ones(2))])
        before = helpers.read_bytes(p)

        def boom():
            raise RuntimeError("boom")
        with self.assertRaises(RuntimeError):
            st.write_file(p, [("a", torch.zeros(2)), ("b", st.Lazy([1], boom))])
        self.assertEqual(helpers.read_bytes(p), before)
        self.assertEqual(sorted(os.listdir(self.tmp.name)), ["keep.safetensors"])

    def sharded(self, weight_map=None):
        d = self.path("sharded")
        os.makedirs(d, exist_ok=True)
        st.write_file(os.path.join(d, "s1.safetensors"), [("a", torch.ones(2)), ("b", torch.full((3,), 2.0))])
        st.write_file(os.path.join(d, "s2.safetensors"), [("c", torch.full((2, 2), 3.0))], "BF16")
        wm = weight_map or {"a": "s1.safetensors", "b": "s1.safetensors", "c": "s2.safetensors"}
        with open(os.path.join(d, st.INDEX_FILE), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, f)
        return d

    def test_sharded_index(self):
        with st.SafetensorsSet(self.sharded()) as s:
            self.assertEqual(s.names(), ["a", "b", "c"])
            self.assertEqual(s.info("c")["dtype"], "BF16")
            self.assertTrue(torch.equal(s.read_float("c"), torch.full((2, 2), 3.0)))
            self.assertIsNone(s.info("zz"))

    def test_sharded_inconsistent(self):
        cases = {
            "wrong shard": {"a": "s2.safetensors", "b": "s1.safetensors", "c": "s2.safetensors"},
            "unindexed tensor": {"a": "s1.safetensors", "c": "s2.safetensors"},
            "path shard": {"a": "../s1.safetensors", "b": "s1.safetensors", "c": "s2.safetensors"},
            "missing shard": {"a": "s1.safetensors", "b": "s1.safetensors", "c": "s3.safetensors"},
        }
        for what, wm in cases.items():
            with self.assertRaises(st.SafetensorsError, msg=what):
                st.SafetensorsSet(self.sharded(wm))


class CheckpointTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_save_load_roundtrip_sharded_and_dtypes(self):
        m = helpers.tiny_model(SEED, tie_word_embeddings=False)
        d = os.path.join(self.tmp.name, "m")
        files = ops.save_model(m, d, "float32")
        self.assertEqual([os.path.basename(f) for f in files], ["config.json", "model.safetensors"])
        cfg = ops.load_config(d)
        m2 = ops.load_weights(d, cfg, torch.device("cpu"))
        for (n, p), (_, q) in zip(m.hf_parameters(), m2.hf_parameters()):
            self.assertTrue(torch.equal(p, q), n)
        # Re-shard the same tensors into two files with an index.
        ts, _, _ = st.read_file(os.path.join(d, "model.safetensors"))
        names = sorted(ts)
        half = len(names) // 2
        sd = os.path.join(self.tmp.name, "sharded")
        os.makedirs(sd)
        st.write_file(os.path.join(sd, "model-00001-of-00002.safetensors"), [(n, ts[n]) for n in names[:half]], "BF16")
        st.write_file(os.path.join(sd, "model-00002-of-00002.safetensors"), [(n, ts[n]) for n in names[half:]], "F16")
        wm = {n: "model-0000%d-of-00002.safetensors" % (1 if i < half else 2) for i, n in enumerate(names)}
        with open(os.path.join(sd, st.INDEX_FILE), "w") as f:
            json.dump({"weight_map": wm}, f)
        with open(os.path.join(sd, "config.json"), "w") as f:
            f.write(helpers.read_bytes(os.path.join(d, "config.json")).decode())
        m3 = ops.load_weights(sd, ops.load_config(sd), torch.device("cpu"))
        for n, p in m3.hf_parameters():
            want = ts[n].to(torch.bfloat16 if n in names[:half] else torch.float16).float()
            self.assertTrue(torch.equal(p.detach(), want), n)
        # Saving over a sharded directory removes the stale index.
        ops.save_model(m3, sd, "bfloat16")
        self.assertFalse(os.path.exists(os.path.join(sd, st.INDEX_FILE)))
        self.assertEqual(helpers.read_json(os.path.join(sd, "config.json"))["torch_dtype"], "bfloat16")

    def test_bad_checkpoints(self):
        m = helpers.tiny_model(SEED)
        d = os.path.join(self.tmp.name, "m")
        ops.save_model(m, d)
        good = st.read_file(os.path.join(d, "model.safetensors"))[0]
        name = "model.layers.1.mlp.up_proj.weight"

        def write(ts):
            st.write_file(os.path.join(d, "model.safetensors"), sorted(ts.items()))

        cases = {
            "missing": {k: v for k, v in good.items() if k != name},
            "shape": dict(good, **{name: torch.zeros(3, 3)}),
            "unexpected": dict(good, **{"model.extra.weight": torch.zeros(2)}),
            "non-finite": dict(good, **{name: good[name].clone().fill_(float("nan"))}),
        }
        for what, ts in cases.items():
            write(ts)
            with self.assertRaises(errors.BadCheckpoint, msg=what) as cm:
                ops.load_weights(d, ops.load_config(d), torch.device("cpu"))
            self.assertIn("model.", str(cm.exception), what)
        # A tied checkpoint may carry lm_head.weight and rotary buffers: ignored.
        write(dict(good, **{"lm_head.weight": good["model.embed_tokens.weight"],
                            "model.layers.0.self_attn.rotary_emb.inv_freq": torch.ones(8)}))
        ops.load_weights(d, ops.load_config(d), torch.device("cpu"))
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write("{not json")
        with self.assertRaises(errors.BadCheckpoint):
            ops.load_config(d)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(helpers.tiny_json(rope_scaling={"factor": 2}), f)
        with self.assertRaises(errors.Unsupported):
            ops.load_config(d)
        with self.assertRaises(errors.BadCheckpoint):
            ops.load_config(os.path.join(self.tmp.name, "nowhere"))


if __name__ == "__main__":
    unittest.main()
