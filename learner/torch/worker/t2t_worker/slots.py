"""A KV pool of slots for Go's engine.Scheduler (continuous batching).

The pool holds ``slots`` sequences of ``slot_len`` positions: keys and values [slots, kvh, S,
D] per layer. ``prefill`` runs one prompt alone (no padding) and copies its keys and values
into its slot; ``step`` appends one token to each of several slots and returns their next
logits. Each slot has its own cache column, so rows join and leave at any step.

A step runs over the prefix of the pool that holds the active slots (the scheduler fills the
lowest free slots first), rounded up to a bucket (a power of two): free slots in that prefix
compute and are ignored. Rows never read each other's keys, so a row's logits do not depend on
which other slots run (up to the float rounding of a different batch shape on BLAS/cuBLAS;
the Go tests check greedy ids and log-probs alone and in batches).

On CUDA each bucket's step is captured once in a ``torch.cuda.CUDAGraph`` over static input
buffers (tokens, columns) and attention over all S columns, and replayed: one launch per step
instead of hundreds of kernel launches from Python. On CPU the step runs eagerly, attending
over the used columns only.
"""

import math

import torch
import torch.nn.functional as F

from .errors import BadRequest
from .model import MASK_BIAS, add_lora, rms_norm


def bucket(n, cap):
    """n rounded up to a power of two, at most cap."""
    b = 1
    while b < n:
        b *= 2
    return min(b, cap)


class SlotPool:
    """The decoder state of one worker: a pool for model (see the module doc)."""

    def __init__(self, model, slots, slot_len, cache_dtype=torch.float32, use_graphs=None):
        cfg = model.cfg
        if slots < 1 or slot_len < 2 or slot_len > cfg.max_position_embeddings:
            raise BadRequest("decoder_open: %d slots of %d positions: need >= 1 slot of 2..%d"
                             % (slots, slot_len, cfg.max_position_embeddings))
        self.model, self.slots, self.slot_len = model, slots, slot_len
        dev = model.device
        kvh, d = cfg.num_key_value_heads, cfg.head_dim
        shape = (slots, kvh, slot_len, d)
        self.keys = [torch.zeros(shape, dtype=cache_dtype, device=dev) for _ in range(cfg.num_hidden_layers)]
        self.values = [torch.zeros(shape, dtype=cache_dtype, device=dev) for _ in range(cfg.num_hidden_layers)]
        self.col = [0] * slots  # next column to write per slot (0: free)
        self.plan = model.decode_plan()
        if use_graphs is None:
            use_graphs = dev.type == "cuda"
        self.use_graphs = use_graphs
        self.graphs = {}  # bucket -> CapturedStep

    def refresh(self):
        """Rebuilds the decode plan after the weights or adapters changed (the fused weights
        are copies); captured graphs refer to the old plan and are dropped."""
        self.plan = self.model.decode_plan()
        self.graphs = {}

    def prefill(self, slots, prompts):
        """Fills slots[i] with prompts[i] (lists of ids), in one left-padded batch; returns the
        logits [n, V] (float32, CPU) of each prompt's last position. The pool keeps each row
        unpadded: its keys and values move to columns [0, len)."""
        if not slots or len(slots) != len(prompts) or len(set(slots)) != len(slots):
            raise BadRequest("decoder_prefill: %d slots (distinct) for %d prompts" % (len(slots), len(prompts)))
        for k, pr in zip(slots, prompts):
            if not (0 <= k < self.slots):
                raise BadRequest("decoder_prefill: slot %d outside [0, %d)" % (k, self.slots))
            if not (1 <= len(pr) < self.slot_len):
                raise BadRequest("decoder_prefill: %d prompt tokens: want 1..%d" % (len(pr), self.slot_len - 1))
        dev = self.model.device
        n, p = len(prompts), max(len(pr) for pr in prompts)
        tok = torch.zeros(n, p, dtype=torch.long)
        valid = torch.zeros(n, p, dtype=torch.bool)
        for i, pr in enumerate(prompts):
            tok[i, p - len(pr):] = torch.as_tensor(pr, dtype=torch.long)
            valid[i, p - len(pr):] = True
        logits, cache = self.model.prefill(tok.to(dev), valid.to(dev), p, self.keys[0].dtype)
        for i, (k, pr) in enumerate(zip(slots, prompts)):
            for l in range(len(self.keys)):
                self.keys[l][k, :, :len(pr)] = cache.keys[l][i, :, p - len(pr):]
                self.values[l][k, :, :len(pr)] = cache.values[l][i, :, p - len(pr):]
            self.col[k] = len(pr)
        return logits.float().cpu()

    def step(self, slots, tokens):
        """Appends tokens[i] to slots[i]; returns the logits [len(slots), V] (float32, CPU)."""
        if len(slots) != len(tokens) or not slots:
            raise BadRequest("decoder_step: %d slots and %d tokens" % (len(slots), len(tokens)))
        if len(set(slots)) != len(slots):
            raise BadRequest("decoder_step: repeated slots")
        for k in slots:
            if not (0 <= k < self.slots) or not (0 < self.col[k] < self.slot_len):
                raise BadRequest("decoder_step: slot %d is free, full or out of range" % k)
        m = bucket(max(slots) + 1, self.slots)
        tok = [0] * m
        col = [min(c, self.slot_len - 1) for c in self.col[:m]]  # free rows write a column they own
        for k, t in zip(slots, tokens):
            tok[k] = int(t)
        if self.use_graphs:
            logits = self._graph(m).run(tok, col)
        else:
            width = max(col[k] for k in slots) + 1
            with torch.inference_mode():
                logits = self.decode(torch.tensor(tok, device=self.model.device),
                                     torch.tensor(col, device=self.model.device), m, width)
        for k in slots:
            self.col[k] += 1
        idx = torch.tensor(slots, dtype=torch.long, device=logits.device)
        return logits.index_select(0, idx).float().cpu()

    def _graph(self, m):
        g = self.graphs.get(m)
        if g is None:
            g = CapturedStep(self, m)
            self.graphs[m] = g
        return g

    def decode(self, tokens, col, m, width):
        """One decode step over pool rows [0, m): writes tokens [m] (long) at columns col [m]
        (long) and returns logits [m, V]; keys in columns [0, col] of each row are visible
        (prompts are unpadded), attention reads the first width columns."""
        model, cfg = self.model, self.model.cfg
        nh, kvh, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        g, nqk, eps = nh // kvh, (nh + kvh) * d, cfg.rms_norm_eps
        dev = tokens.device
        ar = torch.arange(m, device=dev)
        cols = torch.arange(width, device=dev).view(1, width)
        bias = torch.zeros(m, width, dtype=torch.float32, device=dev).masked_fill_(cols > col.view(m, 1), MASK_BIAS)
        bias = bias.view(m, 1, 1, width)
        ang = col.float().view(m, 1, 1) * model.inv_freq
        cos, sin = ang.cos(), ang.sin() * model.rope_sign
        scale = 1.0 / math.sqrt(d)
        x = F.embedding(tokens, model.model.embed_tokens.weight)
        for l, pl in enumerate(self.plan):
            h = rms_norm(x, pl.w_in, eps)
            qkv = F.linear(h, pl.w_qkv)
            if pl.lora_qkv is not None:
                add_lora(qkv, h, pl.lora_qkv)
            qk = rms_norm(qkv[:, :nqk].reshape(m, nh + kvh, d), pl.w_qk_norm, eps)
            qk = qk * cos + torch.roll(qk, d // 2, -1) * sin
            kc, vc = self.keys[l][:m], self.values[l][:m]
            kc[ar, :, col] = qk[:, nh:].to(kc.dtype)
            vc[ar, :, col] = qkv[:, nqk:].view(m, kvh, d).to(vc.dtype)
            kw, vw = kc[:, :, :width], vc[:, :, :width]
            q = (qk[:, :nh] * scale).reshape(m, kvh, g, d).to(kw.dtype)
            scores = torch.matmul(q, kw.transpose(-1, -2)).float() + bias
            o = torch.matmul(torch.softmax(scores, dim=-1).to(vw.dtype), vw).reshape(m, nh * d).to(x.dtype)
            y = F.linear(o, pl.w_o)
            if pl.lora_o is not None:
                y = y + pl.lora_o.lora_delta(o)
            x = x + y
            h = rms_norm(x, pl.w_post, eps)
            gu = F.linear(h, pl.w_gate_up)
            if pl.lora_gate_up is not None:
                add_lora(gu, h, pl.lora_gate_up)
            i = gu.shape[-1] // 2
            a = F.silu(gu[:, :i]) * gu[:, i:]
            y = F.linear(a, pl.w_down)
            if pl.lora_down is not None:
                y = y + pl.lora_down.lora_delta(a)
            x = x + y
        return model.head(rms_norm(x, model.model.norm.weight, eps))


class CapturedStep:
    """A decode step over pool rows [0, m) and all S columns, captured in a CUDA graph over
    static token and column buffers (CUDA only; built on first use of the bucket)."""

    def __init__(self, pool, m):
        dev = pool.model.device
        self.tokens = torch.zeros(m, dtype=torch.long, device=dev)
        self.col = torch.zeros(m, dtype=torch.long, device=dev)
        width = pool.slot_len
        saved = [(k[:m].clone(), v[:m].clone()) for k, v in zip(pool.keys, pool.values)]
        side = torch.cuda.Stream(device=dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.inference_mode():
            with torch.cuda.stream(side):  # warm-up outside the capture (allocator, kernels)
                for _ in range(2):
                    pool.decode(self.tokens, self.col, m, width)
            torch.cuda.current_stream(dev).wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.logits = pool.decode(self.tokens, self.col, m, width)
            for (k, v), (ks, vs) in zip(zip(pool.keys, pool.values), saved):  # undo the warm-up writes
                k[:m].copy_(ks)
                v[:m].copy_(vs)

    def run(self, tokens, col):
        self.tokens.copy_(torch.tensor(tokens, dtype=torch.long), non_blocking=True)
        self.col.copy_(torch.tensor(col, dtype=torch.long), non_blocking=True)
        self.graph.replay()
        return self.logits
