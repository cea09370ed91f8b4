"""The Qwen3 causal language model in PyTorch, numerically as learner/qwen3/model.go.

Parameters are float32 master weights whose ``named_parameters`` names are the Hugging Face
tensor names (``model.layers.0.self_attn.q_proj.weight``, ...; LoRA adds ``...q_proj.lora_A``
and ``...lora_B``, see lora.py). The forward pass over tokens [B, T] with a validity mask
(padding on either side) follows Go's seqMask: a token's RoPE position is the number of real
tokens before it, a query sees the real keys at or before it, masked keys get the finite bias
-1e9. RMSNorm and RoPE run in float32; under autocast the projections run in bfloat16.
``forward(tail=n)`` computes the output layer on the last n positions only. Generation uses
``prefill`` (left-padded prompts, fills a KV cache) and ``decode`` (one token per row, reading
the cache up to the current column, never copying it).

On CUDA with torch >= 2 attention uses ``scaled_dot_product_attention`` with the same additive
bias (GQA by repeating key/value heads); elsewhere it is written out with batched matmuls.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

MASK_BIAS = -1e9

# Per-layer module names, in checkpoint order (Go's layerModules).
LAYER_MODULES = (
    "input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
    "self_attn.q_norm", "self_attn.k_norm", "post_attention_layernorm",
    "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj",
)
NAME_EMBED = "model.embed_tokens.weight"
NAME_NORM = "model.norm.weight"
NAME_LM_HEAD = "lm_head.weight"

_HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def module_shape(cfg, module):
    """The weight shape of a per-layer module ([out, in] for projections)."""
    h, d = cfg.hidden_size, cfg.head_dim
    q, kv = cfg.num_attention_heads * d, cfg.num_key_value_heads * d
    return {
        "input_layernorm": [h], "post_attention_layernorm": [h],
        "self_attn.q_norm": [d], "self_attn.k_norm": [d],
        "self_attn.q_proj": [q, h], "self_attn.k_proj": [kv, h], "self_attn.v_proj": [kv, h],
        "self_attn.o_proj": [h, q],
        "mlp.gate_proj": [cfg.intermediate_size, h], "mlp.up_proj": [cfg.intermediate_size, h],
        "mlp.down_proj": [h, cfg.intermediate_size],
    }[module]


def layer_name(layer, module):
    return "model.layers.%d.%s.weight" % (layer, module)


def weight_specs(cfg):
    """Every checkpoint tensor of cfg as (name, shape), in the order Save writes them."""
    specs = [(NAME_EMBED, [cfg.vocab_size, cfg.hidden_size])]
    for l in range(cfg.num_hidden_layers):
        for m in LAYER_MODULES:
            specs.append((layer_name(l, m), module_shape(cfg, m)))
    specs.append((NAME_NORM, [cfg.hidden_size]))
    if not cfg.tie_word_embeddings:
        specs.append((NAME_LM_HEAD, [cfg.vocab_size, cfg.hidden_size]))
    return specs


def is_norm_weight(name):
    return name.endswith("layernorm.weight") or name.endswith("_norm.weight") or name == NAME_NORM


# ---- Modules.

class Linear(nn.Module):
    """y = x·Wᵀ (+ scale·(x·Aᵀ)·Bᵀ when a LoRA adapter is attached; see lora.py)."""

    def __init__(self, out_features, in_features, device=None):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features, device=device))
        self.register_parameter("lora_A", None)
        self.register_parameter("lora_B", None)
        self.lora_scale = 0.0

    def forward(self, x):
        y = F.linear(x, self.weight)
        if self.lora_A is not None:
            y = y + F.linear(F.linear(x, self.lora_A), self.lora_B) * self.lora_scale
        return y


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · w over the last axis, in float32."""

    def __init__(self, dim, eps, device=None):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim, device=device))
        self.eps = eps

    def forward(self, x):
        x = x.float()
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Embedding(nn.Module):
    def __init__(self, vocab, hidden, device=None):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab, hidden, device=device))

    def forward(self, tokens):
        return F.embedding(tokens, self.weight)


class Attention(nn.Module):
    def __init__(self, cfg, device=None):
        super().__init__()
        h, d = cfg.hidden_size, cfg.head_dim
        self.num_heads, self.num_kv_heads, self.head_dim = cfg.num_attention_heads, cfg.num_key_value_heads, d
        self.q_proj = Linear(self.num_heads * d, h, device)
        self.k_proj = Linear(self.num_kv_heads * d, h, device)
        self.v_proj = Linear(self.num_kv_heads * d, h, device)
        self.o_proj = Linear(h, self.num_heads * d, device)
        self.q_norm = RMSNorm(d, cfg.rms_norm_eps, device)
        self.k_norm = RMSNorm(d, cfg.rms_norm_eps, device)

    def qkv(self, h, cos, sin):
        """Queries [B, nh, T, D] and keys, values [B, kvh, T, D] of normed inputs h [B, T, H]."""
        b, t, _ = h.shape
        d = self.head_dim
        q = rope(self.q_norm(self.q_proj(h).view(b, t, self.num_heads, d)), cos, sin)
        k = rope(self.k_norm(self.k_proj(h).view(b, t, self.num_kv_heads, d)), cos, sin)
        v = self.v_proj(h).view(b, t, self.num_kv_heads, d)
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)


class MLP(nn.Module):
    def __init__(self, cfg, device=None):
        super().__init__()
        self.gate_proj = Linear(cfg.intermediate_size, cfg.hidden_size, device)
        self.up_proj = Linear(cfg.intermediate_size, cfg.hidden_size, device)
        self.down_proj = Linear(cfg.hidden_size, cfg.intermediate_size, device)

    def forward(self, h):
        return self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class DecoderLayer(nn.Module):
    def __init__(self, cfg, device=None):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, device)
        self.self_attn = Attention(cfg, device)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, device)
        self.mlp = MLP(cfg, device)

    def run(self, x, cos, sin, attend):
        """One block on the residual stream x [B, T, H] (float32). attend(q, k, v) returns the
        attention output [B, T, nh·D] (and may store k and v in a cache)."""
        q, k, v = self.self_attn.qkv(self.input_layernorm(x), cos, sin)
        x = x + self.self_attn.o_proj(attend(q, k, v))
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    def __init__(self, cfg, device=None):
        super().__init__()
        self.embed_tokens = Embedding(cfg.vocab_size, cfg.hidden_size, device)
        self.layers = nn.ModuleList([DecoderLayer(cfg, device) for _ in range(cfg.num_hidden_layers)])
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, device)


# ---- Functional pieces.

def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(x, cos, sin):
    """x [B, T, heads, D] rotated by cos, sin [B, T, 1, D] (float32)."""
    return x * cos + rotate_half(x) * sin


def inv_freq(cfg, device=None):
    """RoPE inverse frequencies 1/θ^(2i/D), i < D/2, repeated for both halves (float32)."""
    d = cfg.head_dim
    half = [1.0 / math.pow(cfg.rope_theta, 2.0 * i / d) for i in range(d // 2)]
    return torch.tensor(half + half, dtype=torch.float32, device=device)


def seq_mask(valid):
    """RoPE positions [B, T] (float32) and attention bias [B, T, T] for a validity mask valid
    [B, T] (bool): a token's position is the number of real tokens before it; a query sees the
    real keys at or before it."""
    t = valid.shape[1]
    pos = (valid.long().cumsum(1) - 1).clamp(min=0).float()
    causal = torch.ones(t, t, dtype=torch.bool, device=valid.device).tril()
    allowed = causal.unsqueeze(0) & valid.unsqueeze(1)
    bias = torch.zeros(allowed.shape, dtype=torch.float32, device=valid.device).masked_fill_(~allowed, MASK_BIAS)
    return pos, bias


def attend_bias(q, k, v, bias, sdpa_dtype=None):
    """Attention of q [B, nh, T, D] over k, v [B, kvh, S, D] with additive bias [B, T, S];
    query head h reads kv head h // (nh/kvh). Returns [B, T, nh·D]. With sdpa_dtype (a torch
    dtype) torch's scaled_dot_product_attention runs in that dtype; otherwise the scores are
    written out (q·1/√D first, as Go does) and the softmax runs in float32."""
    b, nh, t, d = q.shape
    kvh, s = k.shape[1], k.shape[2]
    g = nh // kvh
    if sdpa_dtype is not None:
        if g > 1:
            k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        dt = sdpa_dtype
        o = F.scaled_dot_product_attention(q.to(dt), k.to(dt), v.to(dt), attn_mask=bias.unsqueeze(1).to(dt))
        return o.transpose(1, 2).reshape(b, t, nh * d)
    qg = (q * (1.0 / math.sqrt(d))).reshape(b, kvh, g * t, d)
    scores = torch.matmul(qg, k.transpose(-1, -2)).view(b, kvh, g, t, s)
    probs = torch.softmax(scores.float() + bias.view(b, 1, 1, t, s), dim=-1)
    o = torch.matmul(probs.view(b, kvh, g * t, s), v)
    return o.view(b, kvh, g, t, d).permute(0, 3, 1, 2, 4).reshape(b, t, nh * d)


class KVCache:
    """Keys and values of every layer, [B, kvh, S, D] each; column c of row r holds the token
    at position c − pad[r]."""

    def __init__(self, keys, values):
        self.keys, self.values = keys, values

    def select(self, rows):
        """Keeps the batch rows given by index tensor rows (compaction of finished rows)."""
        self.keys = [k.index_select(0, rows) for k in self.keys]
        self.values = [v.index_select(0, rows) for v in self.values]


class Qwen3(nn.Module):
    """A Qwen3 model: ``model`` (embed_tokens, layers, norm) and ``lm_head`` (None when tied)."""

    def __init__(self, cfg, device=None):
        super().__init__()
        self.cfg = cfg
        self.model = Body(cfg, device)
        self.lm_head = None if cfg.tie_word_embeddings else Linear(cfg.vocab_size, cfg.hidden_size, device)
        self.register_buffer("inv_freq", inv_freq(cfg, device), persistent=False)
        self.sdpa_dtype = None  # set_attention: the dtype torch's fused attention runs in
        self.lora = None  # lora.LoRAState once adapters are attached

    @property
    def device(self):
        return self.model.norm.weight.device

    def set_attention(self, use_sdpa, dtype=torch.float32):
        """Chooses torch's fused attention in dtype (when torch has it: torch >= 2) or the
        written-out one (use_sdpa False). Prefill and training use it; decode steps read the
        cache with the written-out form (no key/value copies)."""
        self.sdpa_dtype = dtype if (use_sdpa and _HAS_SDPA) else None

    # ---- Weights.

    def hf_parameters(self):
        """The base weights as (Hugging Face name, parameter), in weight_specs order."""
        params = dict(self.named_parameters())
        return [(name, params[name]) for name, _ in weight_specs(self.cfg)]

    def head_weight(self):
        return self.model.embed_tokens.weight if self.lm_head is None else self.lm_head.weight

    # ---- Forward.

    def rope_tables(self, pos):
        """cos, sin [*pos.shape, 1, D] for float32 positions."""
        ang = pos.unsqueeze(-1) * self.inv_freq
        return ang.cos().unsqueeze(-2), ang.sin().unsqueeze(-2)

    def hidden(self, tokens, valid, kv_sink=None, tail=0):
        """Final normed hidden states [B, T, H] of tokens [B, T] (long) with valid [B, T] (bool),
        or of the last tail positions only ([B, tail, H]) when 0 < tail < T. kv_sink(l, k, v), if
        given, sees each layer's keys and values [B, kvh, T, D]."""
        pos, bias = seq_mask(valid)
        cos, sin = self.rope_tables(pos)
        x = self.model.embed_tokens(tokens)
        for l, layer in enumerate(self.model.layers):
            def attend(q, k, v, l=l):
                if kv_sink is not None:
                    kv_sink(l, k, v)
                return attend_bias(q, k, v, bias, self.sdpa_dtype)
            x = layer.run(x, cos, sin, attend)
        if 0 < tail < x.shape[1]:
            x = x[:, x.shape[1] - tail:]
        return self.model.norm(x)

    def head(self, x):
        """Logits [..., V] (float32) of hidden states x [..., H]."""
        return F.linear(x, self.head_weight()).float()

    def forward(self, tokens, valid, tail=0):
        """Logits [B, T, V] of every position, or [B, tail, V] of the last tail positions."""
        return self.head(self.hidden(tokens, valid, tail=tail))

    # ---- Generation with a KV cache.

    def prefill(self, tokens, valid, cache_len, cache_dtype=torch.float32):
        """Runs left-padded prompts tokens [B, P] (valid [B, P]); returns the logits [B, V] of
        the last position and a KVCache of cache_len columns holding the prompts in [0, P)."""
        b, p = tokens.shape
        kvh, d = self.cfg.num_key_value_heads, self.cfg.head_dim
        keys, values = [], []

        def sink(l, k, v):
            kc = torch.zeros(b, kvh, cache_len, d, dtype=cache_dtype, device=tokens.device)
            vc = torch.zeros(b, kvh, cache_len, d, dtype=cache_dtype, device=tokens.device)
            kc[:, :, :p] = k
            vc[:, :, :p] = v
            keys.append(kc)
            values.append(vc)

        x = self.hidden(tokens, valid, sink, tail=1)
        return self.head(x[:, -1]), KVCache(keys, values)

    def decode(self, tokens, pad, col, cache):
        """Writes tokens [B] (long) into cache column col (rows left-padded by pad [B], long) and
        returns the logits [B, V] of the next token. Keys in columns [pad, col] are visible."""
        b = tokens.shape[0]
        pos = (col - pad).float().view(b, 1)
        cos, sin = self.rope_tables(pos)
        cols = torch.arange(col + 1, device=tokens.device)
        bias = torch.zeros(b, 1, col + 1, dtype=torch.float32, device=tokens.device)
        bias.masked_fill_((cols.view(1, -1) < pad.view(-1, 1)).view(b, 1, col + 1), MASK_BIAS)
        x = self.model.embed_tokens(tokens.view(b, 1))
        for l, layer in enumerate(self.model.layers):
            def attend(q, k, v, l=l):
                kc, vc = cache.keys[l], cache.values[l]
                kc[:, :, col:col + 1] = k
                vc[:, :, col:col + 1] = v
                return attend_bias(q, kc[:, :, :col + 1], vc[:, :, :col + 1], bias)
            x = layer.run(x, cos, sin, attend)
        return self.head(self.model.norm(x)[:, 0])


# ---- Construction.

def new_model(cfg, device):
    """An uninitialised model (float32 parameters on device)."""
    return Qwen3(cfg, device=device)


def init_random(cfg, seed, device="cpu"):
    """A model with random weights drawn from seed: matrices N(0, 0.02²), norm weights 1
    (transformers' Qwen3 initialisation with initializer_range 0.02)."""
    m = new_model(cfg, device)
    g = torch.Generator(device=m.device)
    g.manual_seed(int(seed))
    with torch.no_grad():
        for name, p in m.hf_parameters():
            if is_norm_weight(name):
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02, generator=g)
    return m


def count_params(m):
    return sum(p.numel() for _, p in m.hf_parameters())
