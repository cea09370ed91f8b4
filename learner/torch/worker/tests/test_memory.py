"""The memory-saving paths of a training step give the plain path's loss and gradients: chunked
log-probs (the output layer on a few trained positions at a time) and activation checkpointing
(each decoder layer run again in the backward pass)."""

import copy
import unittest

import torch

import helpers
from t2t_worker import lora, train
from test_train import make_samples, set_behaviour

SEED = 4242
TOL = 1e-5


class MemoryPathsTest(unittest.TestCase):
    def setUp(self):
        self.g = torch.Generator().manual_seed(SEED)
        self.m = helpers.tiny_model(SEED, sharp=False)
        self.samples = make_samples(self.g, n=6)
        set_behaviour(self.m, self.samples, self.g)
        self.cfg = train.TrainConfig(clip_eps=0.2, is_cap=3.0, kl_coef=0.1, lr=1e-2, weight_decay=0.1,
                                     max_grad_norm=0.05, micro_batch=4)

    def run_step(self, m, kind, req, chunk, ckpt=False):
        """Loss and metric sums of one accumulate, and every trainable parameter's gradient."""
        m.activation_checkpointing = ckpt
        tr = train.Trainer(m, train.TrainConfig(**self.cfg.as_dict()), helpers.NULL_CTX, logprob_chunk=chunk)
        sums, _ = tr.accumulate(kind, train.parse_batch(req, kind, 512))
        grads = {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}
        for p in m.parameters():
            p.grad = None
        return sums, grads

    def assert_same(self, a, b, what):
        (sa, ga), (sb, gb) = a, b
        for k in range(train.NUM_METRICS):
            err = abs(float(sa[k]) - float(sb[k]))
            self.assertLessEqual(err, TOL * max(1.0, abs(float(sb[k]))), "%s: metric %d differs by %g (seed %d)" % (what, k, err, SEED))
        self.assertEqual(sorted(ga), sorted(gb), what)
        self.assertTrue(ga, what)
        for n in gb:
            err = (ga[n] - gb[n]).abs().max().item()
            self.assertLessEqual(err, TOL, "%s: grad %s differs by %g (seed %d)" % (what, n, err, SEED))

    def cases(self):
        for kind in (train.GRPO, train.BC):
            for with_ref, tail in ((True, True), (False, False)):
                yield kind, with_ref, tail, helpers.seq_batch(self.samples, with_ref=with_ref, tail=tail)

    def test_chunked_logprobs_equal_plain_path(self):
        for kind, with_ref, tail, req in self.cases():
            plain = self.run_step(self.m, kind, req, chunk=0)
            for chunk in (1, 3, 7, train.DEFAULT_LOGPROB_CHUNK):
                what = "%s ref=%s tail=%s chunk=%d" % (kind, with_ref, tail, chunk)
                self.assert_same(self.run_step(self.m, kind, req, chunk=chunk), plain, what)

    def test_chunked_logprobs_with_lora(self):
        lora.add_lora(self.m, 2, 4.0, ["q_proj", "down_proj"], 5)
        helpers.perturb_lora_b(self.m, self.g)
        req = helpers.seq_batch(self.samples, with_ref=True)
        plain = self.run_step(self.m, train.GRPO, req, chunk=0)
        self.assertEqual(len(plain[1]), 2 * 2 * 2)  # adapters only
        self.assert_same(self.run_step(self.m, train.GRPO, req, chunk=5), plain, "lora chunk=5")

    def test_chunks_bound_the_logits(self):
        """The output layer never sees more than chunk positions at once, and only trained ones."""
        req = helpers.seq_batch(self.samples, with_ref=True, tail=False)
        b = train.parse_batch(req, train.GRPO, 512)
        seen = []
        real = self.m.head

        def head(x):
            seen.append(x.reshape(-1, x.shape[-1]).shape[0])
            return real(x)
        self.m.head = head
        try:
            self.run_step(self.m, train.GRPO, req, chunk=3)
        finally:
            del self.m.head
        self.assertTrue(seen)
        self.assertLessEqual(max(seen), 3)
        self.assertEqual(sum(seen), int(b.mask.sum()))
        # The plain path computes every position of each micro-batch.
        self.assertGreater(b.rows * b.t, sum(seen))

    def test_logprobs_chunked_equal_plain(self):
        for tail in (True, False):
            b = train.parse_batch(helpers.seq_batch(self.samples, tail=tail), train.BC, 512)
            plain = train.logprobs(self.m, b, 4, helpers.NULL_CTX, chunk=0)
            for chunk in (1, 5, 1024):
                got = train.logprobs(self.m, b, 4, helpers.NULL_CTX, chunk=chunk)
                err = (got - plain).abs().max().item()
                self.assertLessEqual(err, TOL, "tail=%s chunk=%d: %g" % (tail, chunk, err))

    def test_activation_checkpointing_equals_plain_path(self):
        for kind, with_ref, tail, req in self.cases():
            for chunk in (0, 4):
                what = "%s ref=%s tail=%s chunk=%d checkpointed" % (kind, with_ref, tail, chunk)
                plain = self.run_step(self.m, kind, req, chunk=chunk)
                self.assert_same(self.run_step(self.m, kind, req, chunk=chunk, ckpt=True), plain, what)

    def test_activation_checkpointing_recomputes_each_layer(self):
        """With checkpointing each layer runs twice per micro-batch (forward, then again in the
        backward pass); without, once. Inference never recomputes."""
        req = helpers.seq_batch(self.samples, with_ref=True)
        counts = {}
        for ckpt in (False, True):
            m = copy.deepcopy(self.m)
            calls = [0]
            for layer in m.model.layers:
                real = layer.run

                def run(*a, real=real):
                    calls[0] += 1
                    return real(*a)
                layer.run = run
            self.run_step(m, train.GRPO, req, chunk=0, ckpt=ckpt)
            counts[ckpt] = calls[0]
            calls[0] = 0
            b = train.parse_batch(req, train.BC, 512)
            train.logprobs(m, b, 4, helpers.NULL_CTX)
            self.assertEqual(calls[0], len(m.model.layers) * 2, "logprobs ckpt=%s" % ckpt)  # 2 micro-batches
        n_micro = 2  # 6 rows in micro-batches of 4
        self.assertEqual(counts[False], len(self.m.model.layers) * n_micro)
        self.assertEqual(counts[True], 2 * len(self.m.model.layers) * n_micro)


if __name__ == "__main__":
    unittest.main()
