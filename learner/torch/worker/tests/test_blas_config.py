"""BLAS core-type detection (with fake cpuinfo texts) and config.json parsing rules."""

import os
import tempfile
import unittest

import helpers
from t2t_worker import blas, config

CPUINFO_AVX512 = """processor\t: 0
vendor_id\t: AuthenticAMD
flags\t\t: fpu vme sse sse2 avx avx2 avx512f avx512bw
processor\t: 1
flags\t\t: fpu vme sse sse2 avx avx2 avx512f avx512bw
"""
CPUINFO_AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n"
CPUINFO_OLD = "processor\t: 0\nflags\t\t: fpu sse2 avx\n"
CPUINFO_ARM = "processor\t: 0\nFeatures\t: fp asimd evtstrm\n"


class BlasTest(unittest.TestCase):
    def test_flags(self):
        self.assertIn("avx512f", blas.cpu_flags(CPUINFO_AVX512))
        self.assertEqual(blas.cpu_flags(CPUINFO_AVX2), {"fpu", "sse2", "avx", "avx2", "fma"})
        self.assertIn("asimd", blas.cpu_flags(CPUINFO_ARM))
        self.assertEqual(blas.cpu_flags(""), set())

    def test_choose(self):
        self.assertEqual(blas.choose_coretype(blas.cpu_flags(CPUINFO_AVX512), None), ("SkylakeX", True))
        self.assertEqual(blas.choose_coretype(blas.cpu_flags(CPUINFO_AVX2), None), ("Haswell", True))
        self.assertEqual(blas.choose_coretype(blas.cpu_flags(CPUINFO_OLD), None), ("", False))
        self.assertEqual(blas.choose_coretype(blas.cpu_flags(CPUINFO_ARM), ""), ("", False))
        self.assertEqual(blas.choose_coretype(blas.cpu_flags(CPUINFO_AVX512), "Haswell"), ("Haswell", False))

    def test_apply_to_fake_environment(self):
        with tempfile.NamedTemporaryFile("w", suffix="cpuinfo", delete=False) as f:
            f.write(CPUINFO_AVX2)
        self.addCleanup(os.unlink, f.name)
        env = {}
        self.assertEqual(blas.apply_coretype(env, f.name), ("Haswell", True))
        self.assertEqual(env, {"OPENBLAS_CORETYPE": "Haswell"})
        env = {"OPENBLAS_CORETYPE": "Zen"}
        self.assertEqual(blas.apply_coretype(env, f.name), ("Zen", False))
        self.assertEqual(env["OPENBLAS_CORETYPE"], "Zen")
        env = {}
        self.assertEqual(blas.apply_coretype(env, "/nonexistent/cpuinfo"), ("", False))
        self.assertEqual(env, {})

    def test_corename(self):
        name = blas.corename()
        self.assertIsInstance(name, str)
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("7f0000-7f1000 r-xp 00000000 08:01 1 /nonexistent/libopenblas.so.0\n")
        self.addCleanup(os.unlink, f.name)
        self.assertEqual(blas.corename(f.name), "")
        self.assertEqual(blas.mapped_libraries(f.name), ["/nonexistent/libopenblas.so.0"])

    def test_set_threads(self):
        import torch

        try:
            if blas.corename():  # an OpenBLAS is loaded: its pool follows
                self.assertEqual(blas.set_threads(1), 1)
                self.assertEqual(blas.set_threads(2), 2)
            else:
                self.assertEqual(blas.set_threads(1), 0)
        finally:
            blas.set_threads(torch.get_num_threads())
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("7f0000-7f1000 r-xp 00000000 08:01 1 /nonexistent/libopenblas.so.0\n")
        self.addCleanup(os.unlink, f.name)
        self.assertEqual(blas.set_threads(1, f.name), 0)

    def test_matmul_check(self):
        err = blas.matmul_check()
        self.assertLessEqual(err, blas.CHECK_MAX_REL_ERR)
        self.assertGreater(err, 0.0)


class ConfigTest(unittest.TestCase):
    def test_accept_tiny(self):
        c = helpers.tiny_config()
        self.assertEqual((c.hidden_size, c.head_dim, c.num_key_value_heads, c.vocab_size), (64, 16, 2, 512))
        self.assertTrue(c.tie_word_embeddings)

    def test_defaults(self):
        js = helpers.tiny_json()
        del js["head_dim"], js["num_key_value_heads"], js["rope_theta"], js["torch_dtype"]
        js.update(rope_parameters={"rope_theta": 10000.0, "rope_type": "default"}, dtype="bfloat16",
                  hidden_act="silu", attention_bias=False, use_sliding_window=False, model_type="qwen3",
                  layer_types=["full_attention", "full_attention"], rope_scaling=None, sliding_window=None)
        c = config.parse_config(js)
        self.assertEqual(c.head_dim, 16)
        self.assertEqual(c.num_key_value_heads, 4)
        self.assertEqual(c.rope_theta, 10000.0)
        self.assertEqual(c.torch_dtype, "bfloat16")
        self.assertEqual(config.parse_config(helpers.tiny_json(head_dim=None, model_type=None)).head_dim, 16)

    def test_unsupported(self):
        cases = {
            "rope_scaling": {"rope_scaling": {"type": "yarn", "factor": 4.0}},
            "rope_scaling empty": {"rope_scaling": {}},
            "rope_type": {"rope_parameters": {"rope_theta": 1e6, "rope_type": "yarn"}},
            "hidden_act": {"hidden_act": "gelu"},
            "attention_bias": {"attention_bias": True},
            "use_sliding_window": {"use_sliding_window": True},
            "model_type": {"model_type": "llama"},
            "layer_types": {"layer_types": ["full_attention", "sliding_attention"]},
        }
        for what, over in cases.items():
            with self.assertRaises(config.ConfigError, msg=what) as cm:
                config.parse_config(helpers.tiny_json(**over))
            self.assertTrue(cm.exception.unsupported, what)

    def test_invalid(self):
        cases = {
            "odd head_dim": {"head_dim": 15},
            "kv heads do not divide": {"num_key_value_heads": 3},
            "no rope_theta": {"rope_theta": None},
            "rope_theta 1": {"rope_theta": 1},
            "vocab 0": {"vocab_size": 0},
            "vocab too large": {"vocab_size": 2**31},
            "eps 0": {"rms_norm_eps": 0},
            "no max positions": {"max_position_embeddings": None},
            "float int field": {"hidden_size": 64.0},
            "string int field": {"num_hidden_layers": "2"},
            "bool int field": {"vocab_size": True},
            "string tie": {"tie_word_embeddings": "yes"},
            "bad dtype": {"torch_dtype": "int8"},
            "layers 0": {"num_hidden_layers": 0},
            "hidden_act type": {"hidden_act": 1},
        }
        for what, over in cases.items():
            with self.assertRaises(config.ConfigError, msg=what) as cm:
                config.parse_config(helpers.tiny_json(**over))
            self.assertFalse(cm.exception.unsupported, what)
        with self.assertRaises(config.ConfigError):
            config.parse_config([1, 2])

    def test_to_json(self):
        js = helpers.tiny_json(bos_token_id=1, custom_field={"a": 1}, dtype="float32",
                               rope_parameters={"rope_theta": 1e6, "rope_type": "default"})
        out = config.parse_config(js).to_json("bfloat16")
        self.assertEqual(out["torch_dtype"], "bfloat16")
        self.assertEqual(out["dtype"], "bfloat16")
        self.assertEqual(out["custom_field"], {"a": 1})
        self.assertEqual(out["bos_token_id"], 1)
        self.assertEqual(out["eos_token_id"], 151645)
        self.assertEqual(out["architectures"], ["Qwen3ForCausalLM"])
        self.assertEqual(out["rope_parameters"], {"rope_theta": 1e6, "rope_type": "default"})
        self.assertEqual(config.parse_config(out).hidden_size, 64)

    def test_num_params(self):
        m = helpers.tiny_model(1, sharp=False)
        from t2t_worker.model import count_params
        self.assertEqual(count_params(m), m.cfg.num_params())
        m2 = helpers.tiny_model(1, sharp=False, tie_word_embeddings=False)
        self.assertEqual(count_params(m2), m2.cfg.num_params())


if __name__ == "__main__":
    unittest.main()
