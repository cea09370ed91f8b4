"""End to end: the worker as a subprocess (``/usr/bin/python3 -m t2t_worker``) over real pipes."""

import os
import select
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import torch

import helpers
from t2t_worker import arrays, wire
from t2t_worker.model import init_random

# The interpreter running the tests (/usr/bin/python3 with Debian's python3-torch here); override
# with T2T_WORKER_PYTHON.
PYTHON = os.environ.get("T2T_WORKER_PYTHON") or sys.executable
SEED = 555
TIMEOUT = 60


class WorkerProcess:
    def __init__(self, tc, *args, env=None):
        self.tc = tc
        self.err = tempfile.TemporaryFile()
        env = dict(os.environ, PYTHONPATH=helpers.WORKER_DIR, **(env or {}))
        self.proc = subprocess.Popen([PYTHON, "-u", "-m", "t2t_worker", "--threads", "1", *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, env=env)
        self.reader = wire.FrameReader(self.proc.stdout.fileno())
        self.events = []
        tc.addCleanup(self.close)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()
        self.err.close()

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")

    def send(self, obj):
        self.send_raw(wire.encode_frame(obj))

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv(self):
        deadline = time.time() + TIMEOUT
        while True:
            msg = self.reader.read(block=False)
            if msg is not None:
                return msg
            left = deadline - time.time()
            if left <= 0 or self.proc.poll() is not None and not select.select([self.reader.fd], [], [], 0)[0]:
                self.tc.fail("no frame from the worker (rc %s); stderr:\n%s" % (self.proc.poll(), self.stderr()))
            select.select([self.reader.fd], [], [], min(left, 1.0))

    def call(self, req):
        self.send(req)
        while True:
            msg = self.recv()
            if msg.get("event") is not None:
                self.events.append(msg)
                continue
            self.tc.assertEqual(msg["id"], req["id"], msg)
            return msg

    def ok(self, req):
        reply = self.call(req)
        self.tc.assertTrue(reply["ok"], reply)
        return reply

    def wait(self):
        try:
            return self.proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.tc.fail("the worker did not exit; stderr:\n" + self.stderr())


def i32(xs):
    return arrays.to_i32_bin(xs)


def f32s(b):
    return list(struct.unpack("<%df" % (len(b) // 4), b))


class WorkerE2ETest(unittest.TestCase):
    def test_session(self):
        w = WorkerProcess(self)
        hello = w.recv()
        self.assertEqual((hello["type"], hello["protocol"], hello["worker"]), ("hello", 3, "t2t-torch-worker"))
        self.assertEqual((hello["rank"], hello["world_size"], hello["sharding"]), (0, 1, "none"))
        self.assertEqual(hello["pid"], w.proc.pid)
        self.assertEqual((hello["device"], hello["threads"]), ("cpu", 1))
        self.assertEqual(hello["torch"], torch.__version__)
        blas = hello["blas"]
        self.assertLessEqual(blas["check_rel_err"], 1e-6)
        self.assertIsInstance(blas["kernel"], str)
        self.assertIsInstance(blas["set_by_worker"], bool)
        self.assertEqual(blas["threads"], 1 if blas["kernel"] else 0)  # OpenBLAS follows --threads 1
        if not os.environ.get("OPENBLAS_CORETYPE"):
            self.assertEqual(blas["set_by_worker"], blas["coretype_env"] != "")
        else:
            self.assertEqual(blas["coretype_env"], os.environ["OPENBLAS_CORETYPE"])

        def err(req, kind):
            reply = w.call(req)
            self.assertFalse(reply["ok"], reply)
            self.assertEqual(reply["error"]["kind"], kind, reply)
            self.assertNotIn("\n", reply["error"]["message"])
            return reply

        err({"id": 1, "op": "logits", "seqs": [i32([1, 2])]}, "no_model")
        err({"id": 2, "op": "frobnicate"}, "bad_request")
        self.assertEqual(w.call({"id": 0, "op": "stats"})["error"]["kind"], "bad_request")
        err({"id": 3, "op": "init", "config": helpers.tiny_json(rope_scaling={"factor": 2.0}), "seed": 1}, "unsupported")
        err({"id": 4, "op": "init", "config": helpers.tiny_json(head_dim=7), "seed": 1}, "bad_request")
        err({"id": 5, "op": "load", "dir": "/nonexistent/model"}, "bad_checkpoint")

        cfg_js = helpers.tiny_json()
        rep = w.ok({"id": 6, "op": "init", "config": cfg_js, "seed": SEED})
        local = init_random(helpers.tiny_config(), SEED)
        self.assertEqual(rep["params"], local.cfg.num_params())
        self.assertEqual(rep["config"]["hidden_size"], 64)
        g = torch.Generator().manual_seed(SEED)
        seqs = [helpers.rand_tokens(g, n) for n in (3, 5, 3)]
        rep = w.ok({"id": 7, "op": "logits", "seqs": [i32(s) for s in seqs]})
        for s, got in zip(seqs, rep["logits"]):
            want = helpers.full_logits(local, s).reshape(-1)
            self.assertLess((torch.tensor(f32s(got)) - want).abs().max().item(), 1e-5, "seed %d" % SEED)
        err({"id": 8, "op": "logits", "seqs": [i32([1, 512])]}, "bad_request")

        w.ok({"id": 9, "op": "train_config", "clip_eps": 0.2, "is_cap": 3.0, "kl_coef": 0.0, "lr": 1e-3,
              "weight_decay": 0.0, "max_grad_norm": 1.0, "micro_batch": 2})
        err({"id": 10, "op": "train_config", "clip_eps": 0.2}, "bad_request")
        samples = [[[1, 2, 3], [4, 5], [-6.0, -6.1], 1.0, None], [[7], [8, 9, 10], [-6.2, -6.0, -6.3], -0.5, None]]
        batch = helpers.seq_batch(samples)
        rep = w.ok({"id": 11, "op": "step", "kind": "grpo", "batch": batch})
        for k in ("loss", "positions", "clip_frac", "approx_kl", "mean_ratio", "ref_kl", "mean_abs_adv",
                  "accuracy", "entropy", "grad_norm", "micro_batches", "step"):
            self.assertIn(k, rep)
        self.assertEqual((rep["positions"], rep["micro_batches"], rep["step"]), (5, 1, 1))
        err({"id": 12, "op": "step", "kind": "grpo", "batch": dict(batch, tokens=i32([1]))}, "bad_request")
        err({"id": 13, "op": "step", "kind": "ppo", "batch": batch}, "bad_request")
        rep = w.ok({"id": 14, "op": "logprobs", "batch": batch})
        lp = f32s(rep["logprobs"])
        self.assertEqual(len(lp), batch["rows"] * batch["t"])
        self.assertTrue(all(x < 0 for x, m in zip(lp, f32s(batch["mask"])) if m))
        self.assertEqual(w.ok({"id": 15, "op": "stats"})["steps"], 1)

        rep = w.ok({"id": 16, "op": "generate", "prompts": [i32([1, 2, 3]), i32([4])], "max_new_tokens": 4,
                    "temperature": 1.0, "top_k": 0, "top_p": 0.0, "stop": [], "seed": 3, "stream": True,
                    "top_logprobs": 2})
        self.assertEqual([e["step"] for e in w.events], [0, 1, 2, 3])
        self.assertTrue(all(e["id"] == 16 and e["event"] == "token" and len(e["top"]) == 2 for e in w.events))
        toks = [list(struct.unpack("<%di" % (len(b) // 4), b)) for b in rep["tokens"]]
        self.assertEqual(toks, [[e["tokens"][r] for e in w.events] for r in range(2)])
        self.assertEqual(rep["stopped"], [False, False])
        self.assertFalse(rep["cancelled"])
        w.events.clear()

        # Cancel a running generate; then a cancel for no running id is ignored (no reply).
        w.send({"id": 17, "op": "generate", "prompts": [i32([1, 2, 3]), i32([5, 6])], "max_new_tokens": 500,
                "temperature": 1.0, "stop": [], "seed": 1, "stream": False, "top_logprobs": 0})
        w.send({"id": 18, "op": "cancel", "target": 17, "rows": [0]})
        w.send({"id": 19, "op": "cancel", "target": 17})
        rep = w.recv()
        self.assertEqual(rep["id"], 17, rep)
        self.assertTrue(rep["ok"] and rep["cancelled"], rep)
        self.assertEqual(rep["stopped"][0], True)
        self.assertLess(len(rep["tokens"][1]) // 4, 500)
        w.send({"id": 20, "op": "cancel", "target": 99})
        w.send({"op": "cancel", "target": 17})  # as Go sends it (no id), after 17 replied
        w.send({"op": "cancel", "target": 17, "rows": [1]})
        self.assertEqual(w.ok({"id": 21, "op": "sleep", "seconds": 0.01})["id"], 21)

        with tempfile.TemporaryDirectory() as tmp:
            self.assertGreater(w.ok({"id": 22, "op": "add_lora", "rank": 2, "alpha": 4.0,
                                     "targets": ["q_proj", "v_proj"], "seed": 1})["trainable"], 0)
            err({"id": 23, "op": "add_lora", "rank": 2, "alpha": 4.0, "targets": ["q_proj"], "seed": 1}, "bad_request")
            w.ok({"id": 24, "op": "step", "kind": "bc", "batch": batch})
            w.ok({"id": 25, "op": "save_adapter", "dir": os.path.join(tmp, "ad")})
            rep = w.ok({"id": 26, "op": "save", "dir": os.path.join(tmp, "m"), "dtype": "bfloat16"})
            self.assertEqual(sorted(os.path.basename(f) for f in rep["files"]), ["config.json", "model.safetensors"])
            err({"id": 27, "op": "save", "dir": os.path.join(tmp, "m"), "dtype": "int8"}, "bad_request")
            rep = w.ok({"id": 28, "op": "load", "dir": os.path.join(tmp, "m")})
            self.assertEqual(rep["config"]["torch_dtype"], "bfloat16")
            w.ok({"id": 29, "op": "load_adapter", "dir": os.path.join(tmp, "ad")})
            err({"id": 30, "op": "load_adapter", "dir": os.path.join(tmp, "ad")}, "bad_request")
        w.ok({"id": 31, "op": "reset_peak"})
        st = w.ok({"id": 32, "op": "stats"})
        self.assertGreater(st["rss_bytes"], 0)
        self.assertGreaterEqual(st["peak_rss_bytes"], st["rss_bytes"])
        self.assertEqual((st["cuda_allocated"], st["steps"]), (0, 0))
        w.ok({"id": 33, "op": "shutdown"})
        self.assertEqual(w.wait(), 0, w.stderr())

    @unittest.skipUnless(torch.cuda.is_available(), "no CUDA device: the CUDA session is not checked")
    def test_cuda_session(self):
        w = WorkerProcess(self, "--device", "cuda")
        self.assertEqual(w.recv()["device"], "cuda:0")
        g = torch.Generator().manual_seed(SEED)
        seqs = [helpers.rand_tokens(g, n) for n in (4, 9)]
        local = helpers.tiny_model(SEED, sharp=False)
        with tempfile.TemporaryDirectory() as tmp:
            from t2t_worker import ops

            ops.save_model(local, tmp)
            for i, ac in enumerate(("", "bf16")):
                base = 100 * (i + 1)
                w.ok({"id": base, "op": "load", "dir": tmp, "autocast": ac})
                rep = w.ok({"id": base + 1, "op": "logits", "seqs": [i32(s) for s in seqs]})
                tol = 1e-4 if ac == "" else 0.05
                for s, got in zip(seqs, rep["logits"]):
                    want = helpers.full_logits(local, s).reshape(-1)
                    err = (torch.tensor(f32s(got)) - want).abs().max().item()
                    self.assertLess(err, tol, "autocast %r: %g (seed %d)" % (ac, err, SEED))
                samples = [[[1, 2, 3], [4, 5], [-6.0, -6.1], 1.0, None], [[7], [8, 9, 10], [-6.2, -6.0, -6.3], -0.5, None]]
                w.ok({"id": base + 2, "op": "step", "kind": "grpo", "batch": helpers.seq_batch(samples)})
                rep = w.ok({"id": base + 3, "op": "generate", "prompts": [i32(s) for s in seqs], "max_new_tokens": 8,
                            "temperature": 1.0, "top_k": 20, "top_p": 0.9, "stop": [], "seed": 2, "stream": False,
                            "top_logprobs": 0})
                self.assertEqual([len(t) // 4 for t in rep["tokens"]], [8, 8])
                self.assertGreater(w.ok({"id": base + 4, "op": "stats"})["cuda_max_allocated"], 0)
        w.ok({"id": 999, "op": "shutdown"})
        self.assertEqual(w.wait(), 0, w.stderr())

    def test_malformed_frames_exit_3(self):
        for what, data in (("zero length", b"\x00\x00\x00\x00"),
                           ("not a map", struct.pack(">I", 3) + b"\x92\x01\x02")):
            w = WorkerProcess(self)
            self.assertEqual(w.recv()["type"], "hello")
            w.send_raw(data)
            self.assertEqual(w.wait(), 3, what)
            self.assertIn("t2t-worker: protocol error:", w.stderr(), what)

    def test_stdin_eof_exits_0(self):
        w = WorkerProcess(self)
        self.assertEqual(w.recv()["type"], "hello")
        w.proc.stdin.close()
        self.assertEqual(w.wait(), 0, w.stderr())


if __name__ == "__main__":
    unittest.main()
