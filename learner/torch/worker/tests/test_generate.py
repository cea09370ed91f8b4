"""Generation: greedy against the full forward, stop tokens, top-k/top-p, seeds, cancellation."""

import math
import unittest

import torch

import helpers
from t2t_worker import generate as gen, lora, model, train

SEED = 2024


def run(m, prompts, **kw):
    on_step, poll = kw.pop("on_step", None), kw.pop("poll", None)
    return gen.generate(m, prompts, gen.SampleConfig(**kw), helpers.NULL_CTX, on_step=on_step, poll=poll)


class GenerateTest(unittest.TestCase):
    def setUp(self):
        self.g = torch.Generator().manual_seed(SEED)
        self.m = helpers.tiny_model(SEED)
        self.prompts = [helpers.rand_tokens(self.g, n) for n in (3, 7, 1, 5)]

    def assert_greedy_is_full_forward(self, m, what, steps=4):
        """Greedy generation from self.prompts picks the argmax of m's full forward at each
        step, with its log-prob; returns the Result."""
        res = run(m, self.prompts, max_new_tokens=steps)
        for i, p in enumerate(self.prompts):
            seq = list(p)
            for k in range(steps):
                logits = helpers.full_logits(m, seq)[-1]
                want = int(logits.argmax())
                self.assertEqual(res.tokens[i][k], want, "%s: row %d step %d (seed %d)" % (what, i, k, SEED))
                lp = torch.log_softmax(logits.double(), -1)[want].item()
                self.assertAlmostEqual(res.logprobs[i][k], lp, delta=1e-4, msg=what)
                seq.append(want)
        return res

    def test_greedy_equals_argmax_of_full_forward(self):
        res = self.assert_greedy_is_full_forward(self.m, "greedy", steps=6)
        self.assertEqual(res.stopped, [False] * 4)
        self.assertFalse(res.cancelled)

    def test_decode_sees_weight_updates(self):
        # Decode steps read the fused q/k/v and gate/up weights; training steps and in-place
        # edits of the parameters (as loads make) must show in the next generation.
        self.assert_greedy_is_full_forward(self.m, "before")
        b = helpers.seq_batch([(p, [7, 8, 9], None, 1.0 - i, None) for i, p in enumerate(self.prompts)])
        batch = train.parse_batch(b, train.GRPO, self.m.cfg.vocab_size)
        tr = train.Trainer(self.m, train.TrainConfig(lr=0.05), helpers.NULL_CTX)
        before = self.m.model.layers[1].mlp.up_proj.weight.clone()
        tr.step(train.GRPO, batch)
        self.assertFalse(torch.equal(self.m.model.layers[1].mlp.up_proj.weight, before))
        self.assert_greedy_is_full_forward(self.m, "after a step")
        with torch.no_grad():
            self.m.model.layers[0].self_attn.k_proj.weight.mul_(-1.5)
        self.assert_greedy_is_full_forward(self.m, "after an in-place edit")
        # The parameters are still views of the fused weights (no copies) ...
        attn, mlp = self.m.model.layers[0].self_attn, self.m.model.layers[0].mlp
        qkv = (attn.q_proj, attn.k_proj, attn.v_proj)
        self.assertIs(model.fused_weight(attn.qkv_weight, qkv), attn.qkv_weight)
        self.assertIs(model.fused_weight(mlp.gate_up_weight, (mlp.gate_proj, mlp.up_proj)), mlp.gate_up_weight)
        # ... until one is replaced: then decode concatenates them.
        attn.v_proj.weight = torch.nn.Parameter(attn.v_proj.weight.detach().clone() * 2)
        self.assertIsNot(model.fused_weight(attn.qkv_weight, qkv), attn.qkv_weight)
        self.assert_greedy_is_full_forward(self.m, "after a replaced weight")

    def test_decode_with_lora(self):
        lora.add_lora(self.m, 4, 8.0, ["q_proj", "v_proj", "o_proj", "up_proj", "down_proj"], 1)
        helpers.perturb_lora_b(self.m, self.g)
        self.assert_greedy_is_full_forward(self.m, "lora")

    def test_stop_tokens_and_compaction(self):
        ref = run(self.m, self.prompts, max_new_tokens=8)
        stops = {ref.tokens[0][1], ref.tokens[2][4]}
        res = run(self.m, self.prompts, max_new_tokens=8, stop=stops)
        for i, p in enumerate(self.prompts):
            alone = run(self.m, [p], max_new_tokens=8, stop=stops)
            self.assertEqual(res.tokens[i], alone.tokens[0], "row %d (seed %d)" % (i, SEED))
            self.assertEqual(res.stopped[i], alone.stopped[0])
            cut = next((k for k, t in enumerate(ref.tokens[i]) if t in stops), None)
            if cut is None:
                self.assertEqual(res.tokens[i], ref.tokens[i])
                self.assertFalse(res.stopped[i])
            else:
                self.assertEqual(res.tokens[i], ref.tokens[i][: cut + 1])
                self.assertTrue(res.stopped[i])

    def test_top_k_one_is_greedy(self):
        greedy = run(self.m, self.prompts, max_new_tokens=5)
        res = run(self.m, self.prompts, max_new_tokens=5, temperature=0.7, top_k=1, seed=3)
        self.assertEqual(res.tokens, greedy.tokens)
        # Log-probs are under softmax(logits / T) over the whole vocabulary.
        logits = helpers.full_logits(self.m, self.prompts[1])[-1].double()
        want = torch.log_softmax(logits / 0.7, -1)[res.tokens[1][0]].item()
        self.assertAlmostEqual(res.logprobs[1][0], want, delta=1e-4)
        tiny_p = run(self.m, self.prompts, max_new_tokens=5, temperature=1.0, top_p=1e-9, seed=4)
        self.assertEqual(tiny_p.tokens, greedy.tokens)

    def test_seeded_sampling_is_reproducible(self):
        for kw in ({}, {"top_k": 20}, {"top_p": 0.9}, {"top_k": 50, "top_p": 0.8}):
            a = run(self.m, self.prompts, max_new_tokens=6, temperature=1.0, seed=11, **kw)
            b = run(self.m, self.prompts, max_new_tokens=6, temperature=1.0, seed=11, **kw)
            c = run(self.m, self.prompts, max_new_tokens=6, temperature=1.0, seed=12, **kw)
            self.assertEqual(a.tokens, b.tokens, kw)
            self.assertEqual(a.logprobs, b.logprobs, kw)
            self.assertNotEqual(a.tokens, c.tokens, kw)
            for i, p in enumerate(self.prompts):
                logits = helpers.full_logits(self.m, p)[-1].double()
                want = torch.log_softmax(logits, -1)[a.tokens[i][0]].item()
                self.assertAlmostEqual(a.logprobs[i][0], want, delta=1e-4, msg="seed %d %s" % (SEED, kw))

    def sampler(self, **kw):
        return gen.Sampler(gen.SampleConfig(max_new_tokens=1, seed=5, **kw), 6, torch.device("cpu"))

    def test_truncation_sets(self):
        probs = torch.tensor([0.05, 0.5, 0.15, 0.3, 0.0, 0.0]) + 1e-12
        logits = probs.log().float().expand(4000, 6).contiguous()
        cases = [
            ({"temperature": 1.0, "top_k": 2}, {1, 3}),
            ({"temperature": 1.0, "top_p": 0.7}, {1, 3}),
            ({"temperature": 1.0, "top_p": 0.81}, {1, 3, 2}),
            ({"temperature": 1.0, "top_k": 3, "top_p": 0.9}, {1, 3, 2}),  # renormalised within the top 3
            ({"temperature": 1.0, "top_k": 3, "top_p": 0.83}, {1, 3}),  # 0.8/0.95 = 0.842 >= 0.83
        ]
        for kw, want in cases:
            ids, lps, _ = self.sampler(**kw).sample(logits)
            self.assertEqual(set(ids.tolist()), want, kw)
            full = torch.log_softmax(logits[0].double(), -1)
            self.assertTrue(torch.allclose(lps, full[ids], atol=1e-9), kw)
        ids, _, _ = self.sampler(temperature=1.0, top_k=2).sample(logits)
        share = (ids == 1).float().mean().item()
        self.assertAlmostEqual(share, 0.5 / 0.8, delta=0.03)

    def test_greedy_ties_pick_lowest_id(self):
        logits = torch.tensor([[0.0, 3.0, 1.0, 3.0, 3.0, -1.0], [5.0, 5.0, 0.0, 0.0, 0.0, 0.0]])
        ids, lps, top = self.sampler(top_logprobs=3).sample(logits)
        self.assertEqual(ids.tolist(), [1, 0])
        self.assertEqual(top[0][0].tolist(), [1, 3, 4])
        self.assertEqual(top[0][1].tolist(), [0, 1, 2])
        ids, _, _ = self.sampler(temperature=1.0, top_k=1).sample(logits)
        self.assertEqual(ids.tolist(), [1, 0])
        self.assertAlmostEqual(lps[0].item(), 3.0 - math.log(3 * math.exp(3) + 1 + math.exp(1) + math.exp(-1)), delta=1e-12)

    def test_streaming_and_cancel(self):
        events = []
        res = run(self.m, self.prompts, max_new_tokens=5, top_logprobs=2,
                  on_step=lambda *e: events.append(e))
        self.assertEqual([e[0] for e in events], list(range(5)))
        for s, toks, lps, top in events:
            self.assertEqual(toks, [res.tokens[i][s] for i in range(4)])
            self.assertEqual(lps, [res.logprobs[i][s] for i in range(4)])
            for i in range(4):
                self.assertEqual(top[i][0][0], toks[i])  # greedy: the top token is the pick
                self.assertGreaterEqual(top[i][0][1], top[i][1][1])
        # Cancel rows 1 and 3 after step 1, then everything after step 3.
        polls = iter([None, ([1, 3, 99], False), ([], False), ([], True)])
        events = []
        res2 = run(self.m, self.prompts, max_new_tokens=8, on_step=lambda *e: events.append(e),
                   poll=lambda: next(polls))
        self.assertTrue(res2.cancelled)
        self.assertEqual([len(t) for t in res2.tokens], [4, 2, 4, 2])
        self.assertEqual(res2.stopped, [False, True, False, True])
        self.assertEqual(events[2][1][1], -1)
        self.assertEqual(res2.tokens[0], res.tokens[0][:4])

    def test_validation(self):
        for kw in ({"max_new_tokens": 0}, {"max_new_tokens": 1, "temperature": -1},
                   {"max_new_tokens": 1, "top_k": -1}, {"max_new_tokens": 1, "top_p": 1.5},
                   {"max_new_tokens": 1, "top_logprobs": -2}, {"max_new_tokens": 1, "seed": 2**64}):
            self.assertIsNotNone(gen.SampleConfig(**kw).validate(), kw)
        self.assertIsNone(gen.SampleConfig(max_new_tokens=1, seed=-5).validate())


if __name__ == "__main__":
    unittest.main()
