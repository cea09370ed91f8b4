"""Qwen3 configuration: Hugging Face config.json parsing and writing, as learner/qwen3/config.go.

``parse_config`` follows Go's ParseConfig/Validate rule for rule and in the same order:
JSON type errors first, then the defaults (head_dim = hidden/heads, num_key_value_heads =
heads, rope_theta from rope_parameters, torch_dtype from dtype), then the unsupported
features (rope scaling, non-default rope type, non-SiLU activation, attention biases,
sliding windows, another model_type, non-full-attention layer types), then the value checks.
Unsupported features raise ``ConfigError`` with ``unsupported=True``. ``Config.to_json``
renders config.json as Go's configJSON does: the loaded fields kept, the architecture fields
set, and transformers' defaults added where absent.

Go's encoding/json also matches keys case-insensitively; this parser matches exact names only.
"""

import math

# Fields the model reads: (config.json name, kind).
_INT_FIELDS = (
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "head_dim", "intermediate_size", "vocab_size", "max_position_embeddings",
)
_FLOAT_FIELDS = ("rope_theta", "rms_norm_eps")
_INT32_MAX = 2 ** 31 - 1
_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1
DTYPES = ("float32", "bfloat16", "float16")


class ConfigError(ValueError):
    """An invalid or unsupported config field, named by its config.json name."""

    def __init__(self, field, value, reason, unsupported=False):
        super().__init__("config %s=%r: %s" % (field, value, reason))
        self.field = field
        self.unsupported = unsupported


class Config:
    """The architecture fields of a Qwen3 config.json, plus every raw field (``raw``)."""

    def __init__(self, **kw):
        self.hidden_size = kw.get("hidden_size", 0)
        self.num_hidden_layers = kw.get("num_hidden_layers", 0)
        self.num_attention_heads = kw.get("num_attention_heads", 0)
        self.num_key_value_heads = kw.get("num_key_value_heads", 0)
        self.head_dim = kw.get("head_dim", 0)
        self.intermediate_size = kw.get("intermediate_size", 0)
        self.vocab_size = kw.get("vocab_size", 0)
        self.rope_theta = float(kw.get("rope_theta", 0.0))
        self.rms_norm_eps = float(kw.get("rms_norm_eps", 0.0))
        self.tie_word_embeddings = bool(kw.get("tie_word_embeddings", False))
        self.max_position_embeddings = kw.get("max_position_embeddings", 0)
        self.torch_dtype = kw.get("torch_dtype", "")
        self.raw = dict(kw.get("raw", {}))

    def __repr__(self):
        return "Config(%s)" % ", ".join("%s=%r" % (k, v) for k, v in sorted(vars(self).items()) if k != "raw")

    # ---- Validation (Go's Config.Validate).

    def validate(self):
        def bad(field, value, reason):
            return ConfigError(field, value, reason)

        def finite(x):
            return not (math.isnan(x) or math.isinf(x))

        c = self
        if c.hidden_size < 1:
            raise bad("hidden_size", c.hidden_size, "must be >= 1")
        if c.num_hidden_layers < 1:
            raise bad("num_hidden_layers", c.num_hidden_layers, "must be >= 1")
        if c.num_attention_heads < 1:
            raise bad("num_attention_heads", c.num_attention_heads, "must be >= 1")
        if c.num_key_value_heads < 1 or c.num_attention_heads % c.num_key_value_heads != 0:
            raise bad("num_key_value_heads", c.num_key_value_heads,
                      "must be >= 1 and divide num_attention_heads=%d" % c.num_attention_heads)
        if c.head_dim < 2 or c.head_dim % 2 != 0:
            raise bad("head_dim", c.head_dim, "must be even and >= 2 (RoPE rotates pairs)")
        if c.intermediate_size < 1:
            raise bad("intermediate_size", c.intermediate_size, "must be >= 1")
        if c.vocab_size < 1 or c.vocab_size > _INT32_MAX:
            raise bad("vocab_size", c.vocab_size, "must be in [1, 2^31)")
        if not finite(c.rope_theta) or c.rope_theta <= 1:
            raise bad("rope_theta", c.rope_theta, "must be finite and > 1")
        if not finite(c.rms_norm_eps) or c.rms_norm_eps <= 0 or c.rms_norm_eps >= 1:
            raise bad("rms_norm_eps", c.rms_norm_eps, "must be in (0, 1)")
        if c.max_position_embeddings < 1:
            raise bad("max_position_embeddings", c.max_position_embeddings, "must be >= 1")
        if c.torch_dtype not in ("",) + DTYPES:
            raise bad("torch_dtype", c.torch_dtype, 'must be "float32", "bfloat16" or "float16"')
        return self

    def num_params(self):
        """Parameters of the model (the embedding counted once when tied), as Go's NumParams."""
        h, d = self.hidden_size, self.head_dim
        q, kv = self.num_attention_heads * d, self.num_key_value_heads * d
        per_layer = 2 * h + h * q + 2 * h * kv + q * h + 2 * d + 3 * h * self.intermediate_size
        n = self.num_hidden_layers * per_layer + h + self.vocab_size * h
        if not self.tie_word_embeddings:
            n += self.vocab_size * h
        return n

    # ---- Writing (Go's configJSON).

    def to_json(self, dtype):
        """Returns config.json's fields (a dict) with torch_dtype = dtype."""
        out = dict(self.raw)
        out.update({
            "architectures": ["Qwen3ForCausalLM"],
            "model_type": "qwen3",
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "intermediate_size": self.intermediate_size,
            "vocab_size": self.vocab_size,
            "rope_theta": self.rope_theta,
            "rms_norm_eps": self.rms_norm_eps,
            "tie_word_embeddings": self.tie_word_embeddings,
            "max_position_embeddings": self.max_position_embeddings,
            "torch_dtype": dtype,
            "hidden_act": "silu",
            "attention_bias": False,
            "attention_dropout": 0.0,
            "rope_scaling": None,
            "use_sliding_window": False,
        })
        if "rope_parameters" in self.raw:
            out["rope_parameters"] = {"rope_theta": self.rope_theta, "rope_type": "default"}
        if "dtype" in self.raw:
            out["dtype"] = dtype
        defaults = {
            "bos_token_id": 151643, "eos_token_id": 151645, "initializer_range": 0.02, "use_cache": True,
            "sliding_window": None, "max_window_layers": self.num_hidden_layers,
        }
        for k, v in defaults.items():
            out.setdefault(k, v)
        return out


# ---- Parsing (Go's ParseConfig).

def _type_error(field, value, want):
    return ConfigError(field, value, "cannot be read as %s" % want)


def _get_int(js, field):
    v = js.get(field)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int):
        raise _type_error(field, v, "an integer")
    if not _INT64_MIN <= v <= _INT64_MAX:
        raise _type_error(field, v, "a 64-bit integer")
    return v


def _get_float(js, field, where=None):
    v = js.get(field)
    if v is None:
        return 0.0
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _type_error(where or field, v, "a number")
    return float(v)


def _get_opt(js, field, types, want):
    """The field's value if present and not null (else None), checked against types."""
    v = js.get(field)
    if v is None:
        return None
    if isinstance(v, bool) and bool not in types:
        raise _type_error(field, v, want)
    if not isinstance(v, types):
        raise _type_error(field, v, want)
    return v


def parse_config(js):
    """Parses a config.json object (a dict) into a validated Config; raises ConfigError."""
    if not isinstance(js, dict):
        raise ConfigError("config.json", type(js).__name__, "must be a JSON object")
    kw = {f: _get_int(js, f) for f in _INT_FIELDS}
    for f in _FLOAT_FIELDS:
        kw[f] = _get_float(js, f)
    tie = _get_opt(js, "tie_word_embeddings", (bool,), "a boolean")
    kw["tie_word_embeddings"] = bool(tie)
    kw["torch_dtype"] = _get_opt(js, "torch_dtype", (str,), "a string") or ""
    rope_params = _get_opt(js, "rope_parameters", (dict,), "an object")
    rope_type, rope_theta_p = None, 0.0
    if rope_params is not None:
        rope_type = _get_opt(rope_params, "rope_type", (str,), "a string")
        rope_theta_p = _get_float(rope_params, "rope_theta", "rope_parameters.rope_theta")
    rope_scaling = js.get("rope_scaling")
    dtype_alias = _get_opt(js, "dtype", (str,), "a string") or ""
    hidden_act = _get_opt(js, "hidden_act", (str,), "a string")
    attention_bias = _get_opt(js, "attention_bias", (bool,), "a boolean")
    sliding = _get_opt(js, "use_sliding_window", (bool,), "a boolean")
    model_type = _get_opt(js, "model_type", (str,), "a string")
    layer_types = _get_opt(js, "layer_types", (list,), "a list of strings") or []
    for i, lt in enumerate(layer_types):
        if not isinstance(lt, str):
            raise _type_error("layer_types[%d]" % i, lt, "a string")
    kw["raw"] = js
    c = Config(**kw)

    if c.head_dim == 0 and c.num_attention_heads > 0:
        c.head_dim = c.hidden_size // c.num_attention_heads
    if c.num_key_value_heads == 0:
        c.num_key_value_heads = c.num_attention_heads
    if rope_params is not None:
        if rope_type and rope_type != "default":
            raise ConfigError("rope_parameters.rope_type", rope_type, 'only "default" RoPE is implemented', True)
        if c.rope_theta == 0:
            c.rope_theta = rope_theta_p
    if c.torch_dtype == "":
        c.torch_dtype = dtype_alias

    if rope_scaling is not None:
        raise ConfigError("rope_scaling", rope_scaling, "RoPE scaling is not implemented", True)
    if hidden_act is not None and hidden_act != "silu":
        raise ConfigError("hidden_act", hidden_act, 'only "silu" is implemented', True)
    if attention_bias:
        raise ConfigError("attention_bias", True, "attention biases are not implemented", True)
    if sliding:
        raise ConfigError("use_sliding_window", True, "sliding-window attention is not implemented", True)
    if model_type is not None and model_type != "qwen3":
        raise ConfigError("model_type", model_type, 'want "qwen3"', True)
    for i, lt in enumerate(layer_types):
        if lt != "full_attention":
            raise ConfigError("layer_types[%d]" % i, lt, 'only "full_attention" is implemented', True)
    return c.validate()
