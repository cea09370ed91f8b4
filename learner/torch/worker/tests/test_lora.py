"""LoRA: identity at B = 0, merge-on-save, PEFT adapter round trips and checks."""

import json
import os
import tempfile
import unittest

import torch

import helpers
from t2t_worker import lora, ops, safetensors_io as st

SEED = 9090
TARGETS = ["q_proj", "v_proj", "o_proj", "down_proj"]


class LoRATest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.g = torch.Generator().manual_seed(SEED)
        self.m = helpers.tiny_model(SEED)
        self.seq = helpers.rand_tokens(self.g, 9)

    def test_zero_b_keeps_outputs_and_freezes_base(self):
        before = helpers.full_logits(self.m, self.seq)
        n = lora.add_lora(self.m, 4, 8.0, TARGETS, 1)
        self.assertTrue(torch.equal(helpers.full_logits(self.m, self.seq), before), "seed %d" % SEED)
        trainable = [name for name, p in self.m.named_parameters() if p.requires_grad]
        self.assertTrue(trainable and all(".lora_" in name for name in trainable), trainable)
        h, d = 64, 16
        per_layer = 4 * (h + 4 * d) + 4 * (h + 2 * d) + 4 * (4 * d + h) + 4 * (128 + h)
        self.assertEqual(n, 2 * per_layer)
        a = self.m.model.layers[0].self_attn.q_proj.lora_A
        self.assertLessEqual(a.abs().max().item(), 1 / 8 + 1e-7)  # bound 1/sqrt(in=64)
        self.assertGreater(a.abs().max().item(), 0.1)
        with self.assertRaises(lora.LoRAError):
            lora.add_lora(self.m, 4, 8.0, TARGETS, 1)

    def test_detach_restores_the_base_model(self):
        before = helpers.full_logits(self.m, self.seq)
        lora.add_lora(self.m, 4, 8.0, TARGETS, 1)
        helpers.perturb_lora_b(self.m, self.g)
        self.assertGreater((helpers.full_logits(self.m, self.seq) - before).abs().max().item(), 1e-3)
        lora.detach(self.m)
        self.assertIsNone(self.m.lora)
        self.assertTrue(torch.equal(helpers.full_logits(self.m, self.seq), before), "seed %d" % SEED)
        names = [name for name, p in self.m.named_parameters()]
        self.assertFalse([n for n in names if ".lora_" in n], names)
        self.assertTrue(all(p.requires_grad for p in self.m.parameters()))
        with self.assertRaises(lora.LoRAError):
            lora.detach(self.m)
        lora.add_lora(self.m, 2, 4.0, ["q_proj"], 2)  # another shape attaches after a detach
        self.assertEqual(self.m.lora.targets, ["q_proj"])

    def test_validation(self):
        for rank, alpha, targets in ((0, 8, TARGETS), (4, 0, TARGETS), (4, float("nan"), TARGETS),
                                     (4, 8, []), (4, 8, ["q_proj", "lm_head"]), (True, 8, TARGETS)):
            with self.assertRaises(lora.LoRAError, msg=repr((rank, alpha, targets))):
                lora.add_lora(self.m, rank, alpha, targets, 1)
        self.assertIsNone(self.m.lora)

    def test_merge_on_save_equals_adapter_forward(self):
        lora.add_lora(self.m, 4, 8.0, TARGETS, 1)
        helpers.perturb_lora_b(self.m, self.g)
        want = helpers.full_logits(self.m, self.seq)
        d = os.path.join(self.tmp.name, "merged")
        ops.save_model(self.m, d)
        merged = ops.load_weights(d, ops.load_config(d), torch.device("cpu"))
        self.assertIsNone(merged.lora)
        err = (helpers.full_logits(merged, self.seq) - want).abs().max().item()
        self.assertLess(err, 1e-4, "seed %d: %g" % (SEED, err))
        base = helpers.tiny_model(SEED)
        self.assertGreater((helpers.full_logits(base, self.seq) - want).abs().max().item(), 1e-2)

    def test_adapter_roundtrip_and_layout(self):
        lora.add_lora(self.m, 4, 8.0, TARGETS, 1)
        helpers.perturb_lora_b(self.m, self.g)
        want = helpers.full_logits(self.m, self.seq)
        d = os.path.join(self.tmp.name, "adapter")
        lora.save_adapter(self.m, d, "/base/model")
        cfg = helpers.read_json(os.path.join(d, lora.CONFIG_FILE))
        self.assertEqual((cfg["peft_type"], cfg["r"], cfg["lora_alpha"], cfg["target_modules"], cfg["base_model_name_or_path"]),
                         ("LORA", 4, 8, TARGETS, "/base/model"))
        ts, _, dtypes = st.read_file(os.path.join(d, lora.WEIGHTS_FILE))
        self.assertEqual(set(dtypes.values()), {"F32"})
        self.assertEqual(list(ts["base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight"].shape), [4, 64])
        self.assertEqual(list(ts["base_model.model.model.layers.0.mlp.down_proj.lora_B.weight"].shape), [64, 4])
        self.assertEqual(len(ts), 2 * 2 * len(TARGETS))
        fresh = helpers.tiny_model(SEED)
        lora.load_adapter(fresh, d)
        self.assertTrue(torch.equal(helpers.full_logits(fresh, self.seq), want), "seed %d" % SEED)
        self.assertEqual(fresh.lora.targets, TARGETS)

    def test_bad_adapters(self):
        lora.add_lora(self.m, 4, 8.0, TARGETS, 1)
        d = os.path.join(self.tmp.name, "adapter")
        lora.save_adapter(self.m, d)
        cfg_path, w_path = os.path.join(d, lora.CONFIG_FILE), os.path.join(d, lora.WEIGHTS_FILE)
        cfg = helpers.read_json(cfg_path)
        ts = st.read_file(w_path)[0]
        name = "base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight"

        def attempt(cfg_over=None, tensors=None):
            with open(cfg_path, "w") as f:
                json.dump(dict(cfg, **(cfg_over or {})), f)
            st.write_file(w_path, sorted((tensors or ts).items()))
            fresh = helpers.tiny_model(SEED, sharp=False)
            with self.assertRaises(lora.LoRAError) as cm:
                lora.load_adapter(fresh, d)
            self.assertIsNone(fresh.lora)
            self.assertTrue(all(p.requires_grad for p in fresh.parameters()))
            return cm.exception

        self.assertEqual(attempt({"use_dora": True}).kind, "unsupported")
        self.assertEqual(attempt({"peft_type": "IA3"}).kind, "unsupported")
        self.assertEqual(attempt({"r": "four"}).kind, "bad_checkpoint")
        self.assertEqual(attempt({"target_modules": ["q_proj", "nope"]}).kind, "bad_checkpoint")
        e = attempt(tensors={k: v for k, v in ts.items() if k != name})
        self.assertEqual(e.kind, "bad_checkpoint")
        self.assertIn(name, str(e))
        self.assertIn("shape", str(attempt(tensors=dict(ts, **{name: torch.zeros(3, 3)}))))
        self.assertIn("unexpected", str(attempt(tensors=dict(ts, **{"base_model.model.extra": torch.zeros(1)}))))

    @unittest.skipUnless(__import__("importlib").util.find_spec("peft") and __import__("importlib").util.find_spec("transformers"),
                         "peft/transformers not installed: the PEFT loader check needs both")
    def test_peft_loads_adapter(self):
        import peft
        import transformers

        lora.add_lora(self.m, 4, 8.0, TARGETS, 1)
        helpers.perturb_lora_b(self.m, self.g)
        base_dir, ad_dir = os.path.join(self.tmp.name, "base"), os.path.join(self.tmp.name, "ad")
        ops.save_model(helpers.tiny_model(SEED), base_dir)
        lora.save_adapter(self.m, ad_dir, base_dir)
        hf = transformers.AutoModelForCausalLM.from_pretrained(base_dir).float()
        pm = peft.PeftModel.from_pretrained(hf, ad_dir).eval()
        with torch.no_grad():
            got = pm(torch.tensor([self.seq])).logits[0]
        err = (got - helpers.full_logits(self.m, self.seq)).abs().max().item()
        self.assertLess(err, 1e-4, "peft vs worker adapter forward, seed %d: %g" % (SEED, err))


if __name__ == "__main__":
    unittest.main()
