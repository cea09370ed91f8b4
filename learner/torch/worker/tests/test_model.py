"""Model invariants: a written-out reference, padding, KV cache, tail window, tied heads."""

import math
import unittest

import torch
import torch.nn.functional as F

import helpers
from t2t_worker import model as qm

SEED = 777
TOL = 1e-4


def ref_logits(m, seq):
    """A deliberately plain forward pass of one unpadded sequence: per-head loops, float64 RoPE
    tables, -inf causal mask. Independent of the model's batched code."""
    c = m.cfg
    p = dict(m.named_parameters())
    nh, kvh, d = c.num_attention_heads, c.num_key_value_heads, c.head_dim
    t = len(seq)

    def rms(x, w):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + c.rms_norm_eps) * w

    inv = torch.tensor([c.rope_theta ** (-(2.0 * (i % (d // 2))) / d) for i in range(d)], dtype=torch.float64)
    ang = torch.arange(t, dtype=torch.float64)[:, None] * inv[None]
    cos, sin = ang.cos().float(), ang.sin().float()

    def rope(x):  # [T, D]
        rot = torch.cat([-x[:, d // 2:], x[:, : d // 2]], dim=1)
        return x * cos + rot * sin

    x = p["model.embed_tokens.weight"][torch.tensor(seq)]
    for l in range(c.num_hidden_layers):
        w = lambda name: p["model.layers.%d.%s.weight" % (l, name)]  # noqa: E731
        h = rms(x, w("input_layernorm"))
        q = (h @ w("self_attn.q_proj").T).view(t, nh, d)
        k = (h @ w("self_attn.k_proj").T).view(t, kvh, d)
        v = (h @ w("self_attn.v_proj").T).view(t, kvh, d)
        outs = []
        for hh in range(nh):
            kv = hh // (nh // kvh)
            qh = rope(rms(q[:, hh], w("self_attn.q_norm")))
            kh = rope(rms(k[:, kv], w("self_attn.k_norm")))
            s = qh @ kh.T / math.sqrt(d)
            s = s.masked_fill(torch.ones(t, t).triu(1).bool(), float("-inf"))
            outs.append(torch.softmax(s, -1) @ v[:, kv])
        x = x + torch.cat(outs, dim=1) @ w("self_attn.o_proj").T
        h = rms(x, w("post_attention_layernorm"))
        g = h @ w("mlp.gate_proj").T
        x = x + (g * torch.sigmoid(g) * (h @ w("mlp.up_proj").T)) @ w("mlp.down_proj").T
    head = p["model.embed_tokens.weight"] if c.tie_word_embeddings else p["lm_head.weight"]
    return rms(x, p["model.norm.weight"]) @ head.T


class ModelTest(unittest.TestCase):
    def setUp(self):
        self.g = torch.Generator().manual_seed(SEED)
        self.m = helpers.tiny_model(SEED)

    def assertClose(self, a, b, tol=TOL, what=""):
        err = (a - b).abs().max().item()
        self.assertLessEqual(err, tol, "%s: max abs diff %g (seed %d)" % (what, err, SEED))

    def test_matches_reference(self):
        for tied in (True, False):
            m = helpers.tiny_model(SEED, tie_word_embeddings=tied)
            seq = helpers.rand_tokens(self.g, 11)
            with torch.no_grad():
                want = ref_logits(m, seq)
            self.assertGreater(want.abs().max().item(), 1.0)
            self.assertClose(helpers.full_logits(m, seq), want, what="tied=%s" % tied)

    def padded_batch(self, seqs, side):
        t = max(len(s) for s in seqs) + 2
        tok = torch.zeros(len(seqs), t, dtype=torch.long)
        valid = torch.zeros(len(seqs), t, dtype=torch.bool)
        spans = []
        for i, s in enumerate(seqs):
            start = {"left": t - len(s), "right": 0, "both": 1}[side]
            tok[i, start:start + len(s)] = torch.tensor(s)
            tok[i, :start] = 7  # padding tokens must not matter
            valid[i, start:start + len(s)] = True
            spans.append((start, start + len(s)))
        return tok, valid, spans

    def test_padding_either_side(self):
        seqs = [helpers.rand_tokens(self.g, n) for n in (5, 9, 1)]
        alone = [helpers.full_logits(self.m, s) for s in seqs]
        for side in ("left", "right", "both"):
            tok, valid, spans = self.padded_batch(seqs, side)
            with torch.no_grad():
                out = self.m(tok, valid)
            self.assertTrue(torch.isfinite(out).all(), side)
            for i, (a, b) in enumerate(spans):
                self.assertClose(out[i, a:b], alone[i], what="%s padding row %d" % (side, i))

    def test_tail_window(self):
        seqs = [helpers.rand_tokens(self.g, n) for n in (6, 8)]
        tok, valid, _ = self.padded_batch(seqs, "left")
        with torch.no_grad():
            full = self.m(tok, valid)
            for tail in (1, 3, tok.shape[1]):
                self.assertClose(self.m(tok, valid, tail=tail), full[:, full.shape[1] - tail:], what="tail %d" % tail)

    def test_kv_cache_decode_equals_full_forward(self):
        prompts = [helpers.rand_tokens(self.g, n) for n in (4, 7, 2)]
        extra = [helpers.rand_tokens(self.g, 5) for _ in prompts]
        p = max(len(x) for x in prompts)
        tok = torch.zeros(3, p, dtype=torch.long)
        valid = torch.zeros(3, p, dtype=torch.bool)
        pad = torch.tensor([p - len(x) for x in prompts])
        for i, x in enumerate(prompts):
            tok[i, p - len(x):] = torch.tensor(x)
            valid[i, p - len(x):] = True
        with torch.no_grad():
            logits, cache = self.m.prefill(tok, valid, p + 6)
            for i, x in enumerate(prompts):
                self.assertClose(logits[i], helpers.full_logits(self.m, x)[-1], what="prefill row %d" % i)
            for s in range(5):
                logits = self.m.decode(torch.tensor([e[s] for e in extra]), pad, p + s, cache)
                for i, x in enumerate(prompts):
                    want = helpers.full_logits(self.m, x + extra[i][: s + 1])[-1]
                    self.assertClose(logits[i], want, what="decode step %d row %d" % (s, i))
            # Compaction keeps the remaining rows' caches intact.
            cache.select(torch.tensor([2, 0]))
            logits = self.m.decode(torch.tensor([9, 9]), pad[[2, 0]], p + 5, cache)
            for j, i in enumerate((2, 0)):
                self.assertClose(logits[j], helpers.full_logits(self.m, prompts[i] + extra[i] + [9])[-1], what="compacted")

    def test_tied_vs_untied(self):
        tied = helpers.tiny_model(SEED)
        untied = qm.Qwen3(helpers.tiny_config(tie_word_embeddings=False))
        params = dict(tied.named_parameters())
        with torch.no_grad():
            for name, p in untied.hf_parameters():
                p.copy_(params["model.embed_tokens.weight" if name == qm.NAME_LM_HEAD else name])
        seq = helpers.rand_tokens(self.g, 6)
        self.assertClose(helpers.full_logits(untied, seq), helpers.full_logits(tied, seq), tol=1e-6, what="same head")
        self.assertEqual(len(tied.hf_parameters()) + 1, len(untied.hf_parameters()))
        with torch.no_grad():
            untied.lm_head.weight.mul_(-1)
        self.assertClose(helpers.full_logits(untied, seq), -helpers.full_logits(tied, seq), tol=1e-5, what="negated head")

    def test_autocast_bf16_cpu(self):
        seq = helpers.rand_tokens(self.g, 8)
        t = torch.tensor([seq])
        with torch.no_grad(), torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            out = self.m(t, torch.ones_like(t, dtype=torch.bool))[0]
        self.assertEqual(out.dtype, torch.float32)
        self.assertTrue(torch.isfinite(out).all())
        full = helpers.full_logits(self.m, seq)
        rel = ((out - full).norm() / full.norm()).item()
        self.assertLess(rel, 0.1, "bf16 relative error %g (seed %d)" % (rel, SEED))

    @unittest.skipUnless(hasattr(F, "scaled_dot_product_attention"), "torch has no scaled_dot_product_attention (torch < 2)")
    def test_sdpa_matches_written_out_attention(self):
        seqs = [helpers.rand_tokens(self.g, n) for n in (5, 9)]
        tok, valid, spans = self.padded_batch(seqs, "both")
        with torch.no_grad():
            want = self.m(tok, valid)
            self.m.set_attention(True)
            got = self.m(tok, valid)
            self.m.set_attention(False)
        for i, (a, b) in enumerate(spans):
            self.assertClose(got[i, a:b], want[i, a:b], what="sdpa row %d" % i)

    def test_init_random(self):
        m = qm.init_random(helpers.tiny_config(), 5)
        m2 = qm.init_random(helpers.tiny_config(), 5)
        for (n, p), (_, q) in zip(m.hf_parameters(), m2.hf_parameters()):
            self.assertTrue(torch.equal(p, q), n)
            if qm.is_norm_weight(n):
                self.assertTrue(bool((p == 1).all()), n)
        std = m.model.embed_tokens.weight.std().item()
        self.assertAlmostEqual(std, 0.02, delta=0.002)


if __name__ == "__main__":
    unittest.main()
