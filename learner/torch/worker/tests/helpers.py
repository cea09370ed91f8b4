"""Shared fixtures for the worker's tests: tiny configurations, models and batches."""

import contextlib
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER_DIR = os.path.dirname(HERE)
if WORKER_DIR not in sys.path:
    sys.path.insert(0, WORKER_DIR)

from t2t_worker import config  # noqa: E402
from t2t_worker.model import init_random, is_norm_weight  # noqa: E402

torch.set_num_threads(min(2, os.cpu_count() or 1))

NULL_CTX = contextlib.nullcontext


def tiny_json(**over):
    """The "tiny" preset's config.json fields (2 layers, hidden 64, 4/2 heads of 16)."""
    js = {
        "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "intermediate_size": 128, "vocab_size": 512, "rope_theta": 1e6,
        "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "max_position_embeddings": 4096,
        "torch_dtype": "float32",
    }
    js.update(over)
    return js


def tiny_config(**over):
    return config.parse_config(tiny_json(**over))


def tiny_model(seed, sharp=True, **over):
    """A tiny model with random weights from seed; sharp weights (matrices ×12.5, norms 1 ± 0.2)
    make attention far from uniform so that masks, RoPE and norms move the logits visibly."""
    m = init_random(tiny_config(**over), seed)
    if sharp:
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for name, p in m.hf_parameters():
                if is_norm_weight(name):
                    p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g))
                else:
                    p.mul_(12.5)
    return m


def perturb_lora_b(m, g):
    """Sets every attached adapter's B to N(0, 0.5²) from generator g (adapters start at B = 0,
    which changes nothing)."""
    with torch.no_grad():
        for mod in m.modules():
            if getattr(mod, "lora_B", None) is not None:
                mod.lora_B.copy_(torch.randn(mod.lora_B.shape, generator=g) * 0.5)


def rand_tokens(g, n, vocab=512):
    return torch.randint(0, vocab, (n,), generator=g).tolist()


def full_logits(m, seq):
    """Logits [T, V] of one sequence alone."""
    t = torch.tensor([seq])
    with torch.no_grad():
        return m(t, torch.ones_like(t, dtype=torch.bool))[0]


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def read_json(path):
    import json

    with open(path, "rb") as f:
        return json.loads(f.read())


def seq_batch(samples, with_ref=False, tail=True):
    """A protocol batch map laid out as Go's qwen3.NewSeqBatch does: row i holds prompt ++
    completion without its last token, left-padded; actions are the next tokens; only positions
    predicting completion tokens are trained. samples: (prompt, completion, behaviour log-probs
    or None, advantage, ref log-probs or None)."""
    from t2t_worker import arrays

    t = max(len(p) + len(c) - 1 for p, c, *_ in samples)
    tl = max(len(c) for _, c, *_ in samples)
    n = len(samples) * t
    tok, valid, act = [0] * n, [0] * n, [0] * n
    mask, beh, ref = [0.0] * n, [0.0] * n, [0.0] * n
    adv = []
    for i, (p, c, lp, a, rf) in enumerate(samples):
        seq = p + c
        row = i * t + t - (len(seq) - 1)
        for j in range(len(seq) - 1):
            tok[row + j], valid[row + j], act[row + j] = seq[j], 1, seq[j + 1]
        for k in range(len(c)):
            j = row + len(p) - 1 + k
            mask[j] = 1.0
            beh[j] = lp[k] if lp is not None else 0.0
            ref[j] = rf[k] if rf is not None else 0.0
        adv.append(a)
    b = {"rows": len(samples), "t": t, "tail": tl if tail else 0, "tokens": arrays.to_i32_bin(tok),
         "valid": arrays.to_i32_bin(valid), "actions": arrays.to_i32_bin(act), "mask": arrays.to_f32_bin(mask),
         "behaviour": arrays.to_f32_bin(beh), "advantages": arrays.to_f32_bin(adv), "ref": None}
    if with_ref:
        b["ref"] = arrays.to_f32_bin(ref)
    return b
