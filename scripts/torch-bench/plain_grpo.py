#!/usr/bin/env python3
"""Plain-PyTorch reference timings for t2t's torch engine (no worker protocol, no Go).

GRPO mode (default) times optimizer steps — forward, backward, global-norm clipping, AdamW —
of the worker's own Trainer on a random Qwen3 of the given shape, on a batch laid out as the
Go side sends it (rows of prompt+completion−1 tokens, loss on the last completion-len
positions), with the worker's chunked log-probs (--logprob-chunk 0: the plain path) and,
with --activation-checkpointing, per-layer recomputation; it reports peak memory too. Decode
mode (--decode) times batched generation with the KV cache. Both print one JSON object; the
worker's overhead (msgpack, pipes, Go) is measured against these numbers.

  python3 plain_grpo.py --layers 4 --hidden 256 --intermediate 768 --heads 4 --kv-heads 2 \\
      --head-dim 64 --vocab 512 --batch 8 --prompt-len 128 --completion-len 32 --steps 5
  python3 plain_grpo.py --decode --batch 8 --prompt-len 128 --new-tokens 64 [shape flags]

Use /usr/bin/python3 on Debian (python3-torch) or any python with torch; --device cuda and
--autocast bf16 on a GPU.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "..", "..", "learner", "torch", "worker")
sys.path.insert(0, os.path.normpath(WORKER))

from t2t_worker import blas  # noqa: E402 - no torch import yet

blas.apply_coretype()  # as the worker does, before torch loads OpenBLAS

import contextlib  # noqa: E402

import torch  # noqa: E402

from t2t_worker import config, generate, lora, train  # noqa: E402
from t2t_worker.model import count_params, init_random  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--intermediate", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--head-dim", type=int, default=16)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--tied", type=int, default=1, help="1: tied embedding/head (Qwen3 small models), 0: untied")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--prompt-len", type=int, default=32)
    p.add_argument("--completion-len", type=int, default=32)
    p.add_argument("--micro-batch", type=int, default=0, help="rows per forward/backward (default: the whole batch)")
    p.add_argument("--lora-rank", type=int, default=0, help="train LoRA adapters of this rank on all projections")
    p.add_argument("--logprob-chunk", type=int, default=train.DEFAULT_LOGPROB_CHUNK,
                   help="trained positions per chunk of the output layer and loss (0: all at once, the plain path)")
    p.add_argument("--activation-checkpointing", action="store_true", help="run each decoder layer again in the backward pass")
    p.add_argument("--steps", type=int, default=5, help="timed steps (decode: timed generations)")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--decode", action="store_true", help="time batched KV-cache generation instead")
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--autocast", default="", choices=["", "bf16"])
    p.add_argument("--threads", type=int, default=0, help="torch and OpenBLAS CPU threads (default: every core)")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def build(args, dev):
    cfg = config.parse_config({
        "hidden_size": args.hidden, "num_hidden_layers": args.layers, "num_attention_heads": args.heads,
        "num_key_value_heads": args.kv_heads, "head_dim": args.head_dim, "intermediate_size": args.intermediate,
        "vocab_size": args.vocab, "rope_theta": 1e6, "rms_norm_eps": 1e-6, "tie_word_embeddings": bool(args.tied),
        "max_position_embeddings": max(40960, args.prompt_len + args.completion_len + args.new_tokens),
    })
    m = init_random(cfg, args.seed, dev)
    bf16 = args.autocast == "bf16"
    m.set_attention(dev.type == "cuda", torch.bfloat16 if bf16 else torch.float32)
    if args.lora_rank:
        lora.add_lora(m, args.lora_rank, 2.0 * args.lora_rank, list(lora.TARGETS), args.seed)
    m.activation_checkpointing = args.activation_checkpointing

    def ctx():
        return torch.autocast(device_type=dev.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    return m, ctx


def grpo_batch(args, m, ctx, g):
    r, c = args.batch, args.completion_len
    t = args.prompt_len + c - 1
    seq = torch.randint(0, args.vocab, (r, t + 1), generator=g)
    mask = torch.zeros(r, t)
    mask[:, t - c:] = 1
    b = train.Batch(r, t, seq[:, :-1].contiguous(), torch.ones(r, t, dtype=torch.bool), seq[:, 1:].contiguous(),
                    mask, None, None, None, c)
    # Behaviour log-probs from the model itself (ratios near 1, as right after sampling).
    beh = train.logprobs(m, b, args.micro_batch or r, ctx, args.logprob_chunk)
    b.behaviour = beh + 0.05 * torch.randn(r, t, generator=g) * mask
    b.advantages = torch.randn(r, 1, generator=g).expand(r, t).contiguous()
    return b


def run_grpo(args, m, ctx, dev, g):
    b = grpo_batch(args, m, ctx, g)
    cfg = train.TrainConfig(lr=1e-6, micro_batch=args.micro_batch or args.batch)
    tr = train.Trainer(m, cfg, ctx, args.logprob_chunk)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    times = []
    for i in range(args.warmup + args.steps):
        sync(dev)
        t0 = time.perf_counter()
        out = tr.step(train.GRPO, b)
        sync(dev)
        if i >= args.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median(times)
    return {"mode": "grpo", "step_ms_median": round(med, 3), "step_ms_all": [round(x, 3) for x in times],
            "tokens_per_s": round(b.rows * b.t / (med / 1e3), 1), "rows": b.rows, "t": b.t, "tail": b.tail,
            "micro_batches": out["micro_batches"], "loss": out["loss"], "logprob_chunk": args.logprob_chunk,
            "activation_checkpointing": args.activation_checkpointing,
            # The process's peak resident set (model building included); on CUDA the steps' peak.
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "cuda_max_allocated_bytes": int(torch.cuda.max_memory_allocated(dev)) if dev.type == "cuda" else 0}


def run_decode(args, m, ctx, dev, g):
    prompts = torch.randint(0, args.vocab, (args.batch, args.prompt_len), generator=g).tolist()
    sc = generate.SampleConfig(max_new_tokens=args.new_tokens, temperature=args.temperature, seed=args.seed)
    prefill, dec, total = [], [], []
    for i in range(args.warmup + args.steps):
        marks = []

        def on_step(step, *_):
            if step == 0:
                sync(dev)
                marks.append(time.perf_counter())
        sync(dev)
        t0 = time.perf_counter()
        res = generate.generate(m, prompts, sc, ctx, torch.bfloat16 if args.autocast == "bf16" else torch.float32,
                                on_step=on_step)
        sync(dev)
        t1 = time.perf_counter()
        if i >= args.warmup:
            prefill.append((marks[0] - t0) * 1e3)
            dec.append((t1 - marks[0]) * 1e3)
            total.append((t1 - t0) * 1e3)
    n_new = sum(len(t) for t in res.tokens)
    steps = max(1, args.new_tokens - 1)
    dmed = statistics.median(dec)
    return {"mode": "decode", "prefill_ms_median": round(statistics.median(prefill), 3),
            "decode_ms_median": round(dmed, 3), "decode_ms_per_step": round(dmed / steps, 3),
            "decode_tokens_per_s": round(args.batch * steps / (dmed / 1e3), 1),
            "tokens_per_s": round(n_new / (statistics.median(total) / 1e3), 1),
            "total_ms_all": [round(x, 3) for x in total], "batch": args.batch, "prompt_len": args.prompt_len,
            "new_tokens": args.new_tokens}


def main():
    args = parse_args()
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    blas.set_threads(torch.get_num_threads())  # as the worker does: torch does not reach OpenBLAS's pool
    dev = torch.device(args.device)
    g = torch.Generator().manual_seed(args.seed)
    m, ctx = build(args, dev)
    out = run_decode(args, m, ctx, dev, g) if args.decode else run_grpo(args, m, ctx, dev, g)
    out.update({"device": str(dev), "autocast": args.autocast, "torch": torch.__version__,
                "threads": torch.get_num_threads(), "params": count_params(m), "lora_rank": args.lora_rank,
                "shape": {"layers": args.layers, "hidden": args.hidden, "intermediate": args.intermediate,
                          "heads": args.heads, "kv_heads": args.kv_heads, "head_dim": args.head_dim,
                          "vocab": args.vocab, "tied": bool(args.tied)}})
    if dev.type == "cuda":
        out["cuda_max_allocated"] = torch.cuda.max_memory_allocated(dev)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
