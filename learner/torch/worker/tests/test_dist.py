"""Steps on several ranks (dist.py, train.Trainer with ranks): each rank's loss is divided by the
trained positions of the whole batch and the ranks' gradients are summed, so ranks holding
shares of a batch step exactly as one rank holding all of it. The ranks here are threads of
this process whose collectives add their tensors in rank order (the real gloo path runs in
learner/torch's Go tests)."""

import copy
import socket
import threading
import unittest

import torch

import helpers
import test_train
from t2t_worker import arrays, dist, train
from t2t_worker.errors import BadRequest, WorkerError

SEED = 4242


class ThreadGroup:
    """n ranks as threads: a collective waits for every rank, then each gets the rank-ordered sum."""

    def __init__(self, n):
        self.n = n
        self.barrier = threading.Barrier(n, timeout=60)
        self.slots = [None] * n
        self.collectives = 0


class ThreadRank:
    sharding, backend = "replicated", "threads"

    def __init__(self, group, rank):
        self.group, self.rank, self.world_size = group, rank, group.n

    def sum_(self, t):
        g = self.group
        g.slots[self.rank] = t.clone()
        g.barrier.wait()
        total = g.slots[0].clone()
        for s in g.slots[1:]:
            total += s
        if self.rank == 0:
            g.collectives += 1
        g.barrier.wait()  # every rank has read the slots before any overwrites them
        t.copy_(total)
        return t


def share(req, r0, r1):
    """Rows [r0, r1) of a protocol batch map (None when empty), as Go's splitRows cuts it."""
    if r0 == r1:
        return None
    r, t = req["rows"], req["t"]
    out = dict(req, rows=r1 - r0)
    for k in ("tokens", "valid", "actions", "mask", "behaviour", "ref"):
        if req.get(k) is not None:
            out[k] = req[k][4 * r0 * t:4 * r1 * t]
    adv = req["advantages"]
    out["advantages"] = adv[4 * r0:4 * r1] if len(adv) == 4 * r else adv[4 * r0 * t:4 * r1 * t]
    return out


def params_of(m):
    return {n: p.detach().clone() for n, p in m.named_parameters()}


class DistStepTest(unittest.TestCase):
    def setUp(self):
        self.g = torch.Generator().manual_seed(SEED)
        self.m = helpers.tiny_model(SEED, sharp=False)
        self.samples = test_train.make_samples(self.g, n=6)
        test_train.set_behaviour(self.m, self.samples, self.g)
        self.req = helpers.seq_batch(self.samples, with_ref=True)
        self.cfg = dict(clip_eps=0.2, is_cap=3.0, kl_coef=0.1, lr=1e-2, weight_decay=0.1,
                        max_grad_norm=0.05, micro_batch=2)

    def trainer(self, m, ranks=None):
        return train.Trainer(m, train.TrainConfig(**self.cfg), helpers.NULL_CTX, ranks=ranks)

    def run_ranks(self, bounds, steps, refuse_rank=None):
        """Trains one model copy per rank, rank k on rows [bounds[k], bounds[k+1]), for steps
        steps; returns (replies per rank per step or the exception, models, group)."""
        n = len(bounds) - 1
        group = ThreadGroup(n)
        models = [copy.deepcopy(self.m) for _ in range(n)]
        results = [[] for _ in range(n)]

        def run(k):
            tr = self.trainer(models[k], ThreadRank(group, k))
            try:
                for _ in range(steps):
                    d = share(self.req, bounds[k], bounds[k + 1])
                    b = None if d is None else train.parse_batch(d, train.GRPO, 512)
                    refused = BadRequest("injected refusal") if k == refuse_rank else None
                    results[k].append(tr.step(train.GRPO, b, refused))
            except WorkerError as e:
                results[k].append(e)
        threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return results, models, group

    def one_rank(self, steps):
        m = copy.deepcopy(self.m)
        tr = self.trainer(m)
        b = train.parse_batch(self.req, train.GRPO, 512)
        return [tr.step(train.GRPO, b) for _ in range(steps)], m

    def assertClose(self, a, b, tol, what):
        err = (a - b).abs().max().item() if torch.is_tensor(a) else abs(a - b)
        self.assertLessEqual(err, tol, "%s: diff %g (seed %d)" % (what, err, SEED))

    def test_shares_step_as_one_rank(self):
        want, m1 = self.one_rank(3)
        # Equal shares, unequal shares, and a rank with no rows at all.
        for bounds in ([0, 3, 6], [0, 1, 6], [0, 6, 6], [0, 2, 4, 6]):
            got, models, group = self.run_ranks(bounds, 3)
            what = "shares %s" % bounds
            for k, replies in enumerate(got):
                for s, (rep, w) in enumerate(zip(replies, want)):
                    self.assertIsInstance(rep, dict, "%s rank %d step %d: %r" % (what, k, s, rep))
                    for key in ("loss", "clip_frac", "approx_kl", "mean_ratio", "ref_kl", "entropy", "grad_norm"):
                        self.assertClose(rep[key], w[key], 1e-5 * max(1, abs(w[key])), "%s rank %d step %d %s" % (what, k, s, key))
                    self.assertEqual(rep["positions"], w["positions"], what)
            for k, m in enumerate(models):
                for n, p in m.named_parameters():
                    self.assertTrue(torch.equal(p, models[0].state_dict()[n]), "%s: rank %d's %s differs from rank 0's" % (what, k, n))
            ref = params_of(m1)
            for n, p in models[0].named_parameters():
                self.assertClose(p.detach(), ref[n], 1e-5, "%s weights %s" % (what, n))
            # Per step: the total, the metrics, one gradient bucket.
            self.assertEqual(group.collectives, 3 * 3, what)

    def test_loss_is_normalised_by_the_whole_batch(self):
        """Rank k's loss share is Σ_k mask·ℓ / Σ_all mask: the shares add up to the one-rank loss
        even when the ranks hold different numbers of trained positions."""
        got, _, _ = self.run_ranks([0, 1, 6], 1)
        want, _ = self.one_rank(1)
        mask = arrays.f32(self.req["mask"], "mask")
        t = self.req["t"]
        self.assertNotEqual(float(mask[:t].sum()), float(mask[t:].sum()))
        self.assertClose(got[0][0]["loss"], want[0]["loss"], 1e-6, "loss")

    def test_a_refused_share_fails_every_rank_and_changes_nothing(self):
        before = params_of(self.m)
        got, models, _ = self.run_ranks([0, 3, 6], 1, refuse_rank=1)
        self.assertIn("injected refusal", str(got[1][0]))
        self.assertIn("another rank refused", str(got[0][0]))
        for m in models:
            for n, p in m.named_parameters():
                self.assertTrue(torch.equal(p, before[n]), n)

    def test_from_env(self):
        self.assertEqual(dist.from_env(torch.device("cpu"), env={}).world_size, 1)
        self.assertEqual(dist.from_env(torch.device("cpu"), env={"WORLD_SIZE": "1"}).sharding, "none")
        for env, want in (({"WORLD_SIZE": "2", "RANK": "2"}, "outside"),
                          ({"WORLD_SIZE": "2", "RANK": "0"}, "MASTER_ADDR"),
                          ({"WORLD_SIZE": "x"}, "integer")):
            with self.assertRaises(dist.DistError) as cm:
                dist.from_env(torch.device("cpu"), env=env)
            self.assertIn(want, str(cm.exception))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class GlooWorkersTest(unittest.TestCase):
    """Two worker processes as gloo ranks (WORLD_SIZE=2) against one worker alone: the same
    step replies, including a rank with no rows (batch nil)."""

    def test_two_gloo_ranks_step_as_one_worker(self):
        from test_worker_e2e import WorkerProcess
        port = str(free_port())
        ranks = [WorkerProcess(self, env={"WORLD_SIZE": "2", "RANK": str(k), "MASTER_ADDR": "127.0.0.1",
                                          "MASTER_PORT": port}) for k in range(2)]
        alone = WorkerProcess(self)
        hellos = [w.recv() for w in ranks + [alone]]
        self.assertEqual([(h["rank"], h["world_size"], h["backend"], h["sharding"]) for h in hellos],
                         [(0, 2, "gloo", "replicated"), (1, 2, "gloo", "replicated"), (0, 1, "", "none")])
        g = torch.Generator().manual_seed(SEED)
        req = helpers.seq_batch(test_train.make_samples(g, n=4))
        for w in ranks + [alone]:
            w.ok({"id": 1, "op": "init", "config": helpers.tiny_json(), "seed": SEED})
            w.ok({"id": 2, "op": "train_config", "clip_eps": 0.2, "is_cap": 3.0, "kl_coef": 0.0, "lr": 1e-3,
                  "weight_decay": 0.0, "max_grad_norm": 1.0, "micro_batch": 2})
        for step, bounds in enumerate(([0, 4, 4], [0, 1, 4], [0, 2, 4]), start=3):
            want = alone.ok({"id": step, "op": "step", "kind": "grpo", "batch": req})
            for k, w in enumerate(ranks):
                w.send({"id": step, "op": "step", "kind": "grpo", "batch": share(req, bounds[k], bounds[k + 1])})
            got = [w.recv() for w in ranks]
            for k, rep in enumerate(got):
                self.assertTrue(rep["ok"], rep)
                self.assertEqual(rep["positions"], want["positions"])
                self.assertLessEqual(abs(rep["loss"] - want["loss"]), 1e-6 * max(1, abs(want["loss"])),
                                     "shares %s rank %d: loss %r, alone %r (seed %d)" % (bounds, k, rep["loss"], want["loss"], SEED))
                self.assertEqual(rep["step"], want["step"])
        for w in ranks + [alone]:
            w.ok({"id": 99, "op": "shutdown"})
            self.assertEqual(w.wait(), 0)


if __name__ == "__main__":
    unittest.main()
