"""Parity with Hugging Face transformers' Qwen3ForCausalLM on a tiny random config (float32).

Skipped when transformers is not installed (Debian's python3-torch has no transformers; the GPU
machine's environment does)."""

import importlib.util
import os
import tempfile
import unittest

import torch

import helpers
from t2t_worker import ops

SEED = 8080
TOL = 1e-4
HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None


def hf_tiny(tied):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=512,
                      rope_theta=1e6, rms_norm_eps=1e-6, tie_word_embeddings=tied, attn_implementation="eager")
    torch.manual_seed(SEED)
    m = Qwen3ForCausalLM(cfg).float().eval()
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():  # sharper than the initialisation, so that every part moves the logits
        for name, p in m.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.normal_(0, 0.25, generator=g)
    return m


@unittest.skipUnless(HAVE_TRANSFORMERS, "transformers is not installed: parity with Qwen3ForCausalLM not checked")
class TransformersParityTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        g = torch.Generator().manual_seed(SEED)
        self.seqs = [helpers.rand_tokens(g, n) for n in (1, 6, 13)]

    def check(self, got, want, what):
        err = (got - want).abs().max().item()
        self.assertLessEqual(err, TOL, "%s: max abs logit diff %g (seed %d)" % (what, err, SEED))

    def test_load_hf_checkpoint(self):
        for tied in (True, False):
            hf = hf_tiny(tied)
            d = os.path.join(self.tmp.name, "hf_%s" % tied)
            hf.save_pretrained(d, safe_serialization=True)
            ours = ops.load_weights(d, ops.load_config(d), torch.device("cpu"))
            with torch.no_grad():
                for s in self.seqs:
                    want = hf(torch.tensor([s])).logits[0].float()
                    self.check(helpers.full_logits(ours, s), want, "tied=%s len %d" % (tied, len(s)))
                # Left padding, with transformers given the same positions.
                t = max(len(s) for s in self.seqs)
                tok = torch.zeros(len(self.seqs), t, dtype=torch.long)
                mask = torch.zeros(len(self.seqs), t, dtype=torch.long)
                for i, s in enumerate(self.seqs):
                    tok[i, t - len(s):] = torch.tensor(s)
                    mask[i, t - len(s):] = 1
                pos = (mask.cumsum(1) - 1).clamp(min=0)
                want = hf(input_ids=tok, attention_mask=mask, position_ids=pos).logits.float()
                got = ours(tok, mask.bool())
                for i, s in enumerate(self.seqs):
                    self.check(got[i, t - len(s):], want[i, t - len(s):], "left-padded row %d tied=%s" % (i, tied))

    def test_hf_loads_our_save(self):
        from transformers import Qwen3ForCausalLM

        ours = helpers.tiny_model(SEED, tie_word_embeddings=False)
        d = os.path.join(self.tmp.name, "ours")
        ops.save_model(ours, d, "float32")
        hf = Qwen3ForCausalLM.from_pretrained(d).float().eval()
        with torch.no_grad():
            for s in self.seqs:
                self.check(helpers.full_logits(ours, s), hf(torch.tensor([s])).logits[0].float(), "len %d" % len(s))


if __name__ == "__main__":
    unittest.main()
