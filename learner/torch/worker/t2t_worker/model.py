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

Decoding one token per row is a few small matmuls per layer, so a decode step is written with
few operations: the q, k and v weights of a layer are row blocks of one tensor (``qkv_weight``,
the parameters are views of it) and so are gate and up (``gate_up_weight``), so each pair or
triple is one matmul that always sees the current weights (training updates and loads write
through the views); q and k are normed and rotated together; the attention bias of the padding
is built once per cache, by the prefill.

On CUDA with torch >= 2 attention uses ``scaled_dot_product_attention`` with the same additive
bias (GQA by repeating key/value heads); elsewhere it is written out with batched matmuls.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

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
    """y = x·Wᵀ (+ scale·(x·Aᵀ)·Bᵀ when a LoRA adapter is attached; see lora.py). weight, if
    given, is the [out, in] tensor the parameter wraps (a view of a fused weight)."""

    def __init__(self, out_features, in_features, device=None, weight=None):
        super().__init__()
        if weight is None:
            weight = torch.empty(out_features, in_features, device=device)
        self.weight = nn.Parameter(weight)
        self.register_parameter("lora_A", None)
        self.register_parameter("lora_B", None)
        self.lora_scale = 0.0

    def forward(self, x):
        y = F.linear(x, self.weight)
        if self.lora_A is not None:
            y = y + self.lora_delta(x)
        return y

    def lora_delta(self, x):
        """The adapter's term scale·(x·Aᵀ)·Bᵀ (an adapter must be attached)."""
        return F.linear(F.linear(x, self.lora_A), self.lora_B) * self.lora_scale


def fused_linears(n_in, sizes, device):
    """Linears of out sizes (each × n_in) whose weights are consecutive row blocks of one new
    tensor, returned with them: (fused [Σ sizes, n_in], [Linear, ...])."""
    fused = torch.empty(sum(sizes), n_in, device=device)
    out, row = [], 0
    for n in sizes:
        out.append(Linear(n, n_in, weight=fused[row:row + n]))
        row += n
    return fused, out


def fused_weight(fused, linears):
    """fused when the linears' weights are still its consecutive row blocks (as fused_linears
    made them), else their concatenation (a weight was replaced, e.g. by Module.to)."""
    row_bytes = fused.stride(0) * fused.element_size()
    ptr = fused.data_ptr()
    for lin in linears:
        w = lin.weight
        if w.data_ptr() != ptr or w.dtype != fused.dtype or w.device != fused.device:
            return torch.cat([l.weight for l in linears])
        ptr += w.shape[0] * row_bytes
    return fused


def add_lora(y, x, linears):
    """Adds to y [..., Σ out] the adapter terms of linears (a fused projection of x) in place."""
    row = 0
    for lin in linears:
        n = lin.weight.shape[0]
        if lin.lora_A is not None:
            y[..., row:row + n] += lin.lora_delta(x)
        row += n
    return y


def rms_norm(x, w, eps):
    """x / sqrt(mean(x²) + eps) · w over the last axis, in float32."""
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · w over the last axis, in float32."""

    def __init__(self, dim, eps, device=None):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim, device=device))
        self.eps = eps

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


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
        # A plain attribute (not a parameter or buffer): the parameters are views of it.
        self.qkv_weight, (self.q_proj, self.k_proj, self.v_proj) = fused_linears(
            h, (self.num_heads * d, self.num_kv_heads * d, self.num_kv_heads * d), device)
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
        self.gate_up_weight, (self.gate_proj, self.up_proj) = fused_linears(
            cfg.hidden_size, (cfg.intermediate_size, cfg.intermediate_size), device)
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
    at position c − pad[r]. bias [B, 1, S] is the attention bias of the columns (MASK_BIAS on
    the prompts' padding), or None when no row is padded."""

    def __init__(self, keys, values, bias):
        self.keys, self.values, self.bias = keys, values, bias
        self.plan = None  # Qwen3.decode_plan, built by the first decode step

    def select(self, rows):
        """Keeps the batch rows given by index tensor rows (compaction of finished rows)."""
        self.keys = [k.index_select(0, rows) for k in self.keys]
        self.values = [v.index_select(0, rows) for v in self.values]
        if self.bias is not None:
            self.bias = self.bias.index_select(0, rows)


class LayerPlan:
    """One layer's tensors for decode steps: norm weights (q_norm and k_norm repeated over the
    heads as [nh + kvh, D]), the fused qkv and gate/up weights, and the modules whose LoRA
    adapters apply (None without adapters)."""

    def __init__(self, layer, cfg):
        attn, mlp = layer.self_attn, layer.mlp
        nh, kvh, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.w_in = layer.input_layernorm.weight
        self.w_qkv = fused_weight(attn.qkv_weight, (attn.q_proj, attn.k_proj, attn.v_proj))
        self.w_qk_norm = torch.cat((attn.q_norm.weight.expand(nh, d), attn.k_norm.weight.expand(kvh, d)))
        self.w_o = attn.o_proj.weight
        self.w_post = layer.post_attention_layernorm.weight
        self.w_gate_up = fused_weight(mlp.gate_up_weight, (mlp.gate_proj, mlp.up_proj))
        self.w_down = mlp.down_proj.weight
        self.lora_qkv = self.lora_o = self.lora_gate_up = self.lora_down = None
        if any(lin.lora_A is not None for lin in (attn.q_proj, attn.k_proj, attn.v_proj)):
            self.lora_qkv = (attn.q_proj, attn.k_proj, attn.v_proj)
        if attn.o_proj.lora_A is not None:
            self.lora_o = attn.o_proj
        if mlp.gate_proj.lora_A is not None or mlp.up_proj.lora_A is not None:
            self.lora_gate_up = (mlp.gate_proj, mlp.up_proj)
        if mlp.down_proj.lora_A is not None:
            self.lora_down = mlp.down_proj


class Qwen3(nn.Module):
    """A Qwen3 model: ``model`` (embed_tokens, layers, norm) and ``lm_head`` (None when tied)."""

    def __init__(self, cfg, device=None):
        super().__init__()
        self.cfg = cfg
        self.model = Body(cfg, device)
        self.lm_head = None if cfg.tie_word_embeddings else Linear(cfg.vocab_size, cfg.hidden_size, device)
        self.register_buffer("inv_freq", inv_freq(cfg, device), persistent=False)
        half = cfg.head_dim // 2  # rotate_half(x)·sin = roll(x, half)·(sin · rope_sign)
        sign = torch.tensor([-1.0] * half + [1.0] * half, device=device)
        self.register_buffer("rope_sign", sign, persistent=False)
        self.sdpa_dtype = None  # set_attention: the dtype torch's fused attention runs in
        self.lora = None  # lora.LoRAState once adapters are attached
        # Activation checkpointing: a training forward pass keeps only each decoder layer's input
        # and runs the layer again in the backward pass (torch.utils.checkpoint), trading about a
        # third more compute for the layers' activations.
        self.activation_checkpointing = False

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
        ckpt = self.activation_checkpointing and kv_sink is None and torch.is_grad_enabled()
        for l, layer in enumerate(self.model.layers):
            def attend(q, k, v, l=l):
                if kv_sink is not None:
                    kv_sink(l, k, v)
                return attend_bias(q, k, v, bias, self.sdpa_dtype)
            if ckpt:
                x = torch.utils.checkpoint.checkpoint(layer.run, x, cos, sin, attend, use_reentrant=False)
            else:
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
        bias = None
        if not bool(valid.all()):
            bias = torch.zeros(b, 1, cache_len, dtype=torch.float32, device=tokens.device)
            bias[:, 0, :p].masked_fill_(~valid, MASK_BIAS)

        def sink(l, k, v):
            kc = torch.zeros(b, kvh, cache_len, d, dtype=cache_dtype, device=tokens.device)
            vc = torch.zeros(b, kvh, cache_len, d, dtype=cache_dtype, device=tokens.device)
            kc[:, :, :p] = k
            vc[:, :, :p] = v
            keys.append(kc)
            values.append(vc)

        x = self.hidden(tokens, valid, sink, tail=1)
        return self.head(x[:, -1]), KVCache(keys, values, bias)

    def decode_plan(self):
        """The per-layer tensors decode steps use (LayerPlan), valid while the weights and
        adapters stay as they are (one generation)."""
        return [LayerPlan(layer, self.cfg) for layer in self.model.layers]

    def decode(self, tokens, pad, col, cache):
        """Writes tokens [B] (long) into cache column col (rows left-padded by pad [B], long) and
        returns the logits [B, V] of the next token. Keys in columns [pad, col] are visible (the
        cache's bias hides the padding)."""
        cfg = self.cfg
        b = tokens.shape[0]
        nh, kvh, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        g, nqk, eps, c = nh // kvh, (nh + kvh) * d, cfg.rms_norm_eps, col + 1
        if cache.plan is None:
            cache.plan = self.decode_plan()
        bias = None if cache.bias is None else cache.bias[:, :, :c].view(b, 1, 1, c)
        # RoPE of q and k together: x·cos + roll(x, D/2)·sin_signed, roll(x)·sin_signed being
        # rotate_half(x)·sin.
        ang = (col - pad).float().view(b, 1, 1) * self.inv_freq
        cos, sin = ang.cos(), ang.sin() * self.rope_sign
        scale = 1.0 / math.sqrt(d)
        x = F.embedding(tokens, self.model.embed_tokens.weight)
        for l, pl in enumerate(cache.plan):
            h = rms_norm(x, pl.w_in, eps)
            qkv = F.linear(h, pl.w_qkv)
            if pl.lora_qkv is not None:
                add_lora(qkv, h, pl.lora_qkv)
            qk = rms_norm(qkv[:, :nqk].reshape(b, nh + kvh, d), pl.w_qk_norm, eps)
            qk = qk * cos + torch.roll(qk, d // 2, -1) * sin
            kc, vc = cache.keys[l], cache.values[l]
            kc[:, :, col] = qk[:, nh:]
            vc[:, :, col] = qkv[:, nqk:].view(b, kvh, d)
            scores = torch.matmul((qk[:, :nh] * scale).reshape(b, kvh, g, d), kc[:, :, :c].transpose(-1, -2))
            scores = scores.float()
            if bias is not None:
                scores = scores + bias
            o = torch.matmul(torch.softmax(scores, dim=-1), vc[:, :, :c]).reshape(b, nh * d)
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
        return self.head(rms_norm(x, self.model.norm.weight, eps))


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
