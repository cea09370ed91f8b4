"""Built-in LoRA adapters and the PEFT adapter layout, as learner/qwen3/lora.go.

Each target projection W [out, in] gains (α/r)·B·A with A [r, in] and B [out, r]; A is drawn
Kaiming-uniform (bound 1/√in) from a seed and B is zero, so outputs are unchanged until a step
trains them. Attaching adapters freezes every base weight (requires_grad False): only A and B
train. ``save_adapter``/``load_adapter`` read and write PEFT's directory layout
(adapter_config.json and adapter_model.safetensors with names like
``base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight``); ``merged`` gives the
weight W + (α/r)·B·A that a full-model save writes.
"""

import json
import math
import os

import torch
import torch.nn as nn

from . import safetensors_io as st
from .model import module_shape

TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TARGET_MODULE = {
    "q_proj": "self_attn.q_proj", "k_proj": "self_attn.k_proj", "v_proj": "self_attn.v_proj",
    "o_proj": "self_attn.o_proj", "gate_proj": "mlp.gate_proj", "up_proj": "mlp.up_proj",
    "down_proj": "mlp.down_proj",
}
CONFIG_FILE = "adapter_config.json"
WEIGHTS_FILE = "adapter_model.safetensors"


class LoRAError(ValueError):
    """A bad adapter configuration or directory. kind is the reply kind it maps to."""

    def __init__(self, message, kind="bad_request"):
        super().__init__(message)
        self.kind = kind


class LoRAState:
    """The attached adapters' configuration."""

    def __init__(self, rank, alpha, targets):
        self.rank, self.alpha, self.targets = rank, float(alpha), list(targets)
        self.scale = self.alpha / rank


def validate(rank, alpha, targets):
    """Go's LoRAConfig.Validate: rank >= 1, alpha finite > 0, known non-empty targets."""
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise LoRAError("lora rank=%r: must be an integer >= 1" % (rank,))
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha) or alpha <= 0:
        raise LoRAError("lora alpha=%r: must be finite and > 0" % (alpha,))
    if not isinstance(targets, (list, tuple)) or not targets:
        raise LoRAError("lora targets=%r: must name at least one module" % (targets,))
    for t in targets:
        if t not in TARGET_MODULE:
            raise LoRAError("lora targets: unknown module %r (want some of %s)" % (t, ", ".join(TARGETS)))


def _module(model, layer, target):
    attn_or_mlp, proj = TARGET_MODULE[target].split(".")
    return getattr(getattr(model.model.layers[layer], attn_or_mlp), proj)


def _ordered_keys(model, targets):
    """(layer, target) pairs in checkpoint order (layer, then module order), duplicates dropped."""
    wanted = set(targets)
    return [(l, t) for l in range(model.cfg.num_hidden_layers) for t in TARGETS if t in wanted]


def peft_name(layer, target, which):
    return "base_model.model.model.layers.%d.%s.lora_%s.weight" % (layer, TARGET_MODULE[target], which)


def attach(model, state, values):
    """Attaches adapters: values maps (layer, target) -> (A, B) tensors; freezes base weights."""
    for p in model.parameters():
        p.requires_grad_(False)
    dev = model.device
    for (l, t), (a, b) in values.items():
        mod = _module(model, l, t)
        mod.lora_A = nn.Parameter(a.to(device=dev, dtype=torch.float32).contiguous())
        mod.lora_B = nn.Parameter(b.to(device=dev, dtype=torch.float32).contiguous())
        mod.lora_scale = state.scale
    model.lora = state


def add_lora(model, rank, alpha, targets, seed):
    """Attaches fresh adapters (A Kaiming-uniform from seed, B zero). Returns the trainable count."""
    validate(rank, alpha, targets)
    if model.lora is not None:
        raise LoRAError("adapters are already attached")
    g = torch.Generator(device=model.device)
    g.manual_seed(int(seed))
    values = {}
    for l, t in _ordered_keys(model, targets):
        out_f, in_f = module_shape(model.cfg, TARGET_MODULE[t])
        bound = 1.0 / math.sqrt(in_f)
        a = (torch.rand(rank, in_f, generator=g, device=model.device) * 2 - 1) * bound
        values[(l, t)] = (a, torch.zeros(out_f, rank, device=model.device))
    attach(model, LoRAState(rank, alpha, targets), values)
    return trainable_count(model)


def lora_parameters(model):
    """The adapter parameters (A then B per adapted module, checkpoint order)."""
    out = []
    if model.lora is None:
        return out
    for l, t in _ordered_keys(model, model.lora.targets):
        mod = _module(model, l, t)
        out += [mod.lora_A, mod.lora_B]
    return out


def trainable_count(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def merged(model, name, weight):
    """The weight of HF tensor name with its adapter merged in (W + scale·B·A), float32; weight
    itself when the tensor has no adapter."""
    if model.lora is None or not name.startswith("model.layers."):
        return weight
    rest = name[len("model.layers."):]
    layer_s, _, module = rest.partition(".")
    module = module[: -len(".weight")]
    for t, m in TARGET_MODULE.items():
        if m == module and t in model.lora.targets:
            mod = _module(model, int(layer_s), t)
            with torch.no_grad():
                return weight + torch.matmul(mod.lora_B * mod.lora_scale, mod.lora_A)
    return weight


def save_adapter(model, dir_path, base_model_path=""):
    """Writes the adapters as a PEFT adapter directory (float32 tensors)."""
    if model.lora is None:
        raise LoRAError("no LoRA adapters attached")
    s = model.lora
    alpha = int(s.alpha) if float(s.alpha).is_integer() else s.alpha
    cfg = {
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": s.rank, "lora_alpha": alpha,
        "lora_dropout": 0.0, "target_modules": list(s.targets), "bias": "none",
        "fan_in_fan_out": False, "inference_mode": True, "init_lora_weights": True,
        "use_rslora": False, "use_dora": False, "base_model_name_or_path": base_model_path or "",
        "modules_to_save": None, "rank_pattern": {}, "alpha_pattern": {},
    }
    tensors = []
    for l, t in _ordered_keys(model, s.targets):
        mod = _module(model, l, t)
        tensors.append((peft_name(l, t, "A"), mod.lora_A.detach()))
        tensors.append((peft_name(l, t, "B"), mod.lora_B.detach()))
    os.makedirs(dir_path, exist_ok=True)
    text = (json.dumps(cfg, indent=2) + "\n").encode("utf-8")
    st.atomic_write(os.path.join(dir_path, CONFIG_FILE), lambda f: f.write(text))
    st.write_file(os.path.join(dir_path, WEIGHTS_FILE), tensors, "F32", {"format": "pt"})


def _typed(cfg, field, types, want):
    v = cfg.get(field)
    if v is None:
        return None
    if (isinstance(v, bool) and bool not in types) or not isinstance(v, types):
        raise LoRAError("%s: %s=%r: want %s" % (CONFIG_FILE, field, v, want), "bad_checkpoint")
    return v


def read_adapter(cfg_model, dir_path):
    """Reads and checks a PEFT adapter directory against the model configuration cfg_model.
    Returns (LoRAState, values) for attach."""
    path = os.path.join(dir_path, CONFIG_FILE)
    try:
        with open(path, "rb") as f:
            pc = json.loads(f.read())
    except OSError as e:
        raise LoRAError("%s: %s" % (path, e.strerror or e), "bad_checkpoint") from None
    except ValueError as e:
        raise LoRAError("%s: %s" % (path, e), "bad_checkpoint") from None
    if not isinstance(pc, dict):
        raise LoRAError("%s: not a JSON object" % path, "bad_checkpoint")
    peft_type = _typed(pc, "peft_type", (str,), "a string")
    for f in ("task_type", "bias", "base_model_name_or_path"):
        _typed(pc, f, (str,), "a string")
    for f in ("fan_in_fan_out", "inference_mode", "init_lora_weights", "use_rslora", "use_dora"):
        _typed(pc, f, (bool,), "a boolean")
    _typed(pc, "lora_dropout", (int, float), "a number")
    for f in ("rank_pattern", "alpha_pattern"):
        _typed(pc, f, (dict,), "an object")
    mts = _typed(pc, "modules_to_save", (list,), "a list of strings")
    rank = _typed(pc, "r", (int,), "an integer") or 0
    alpha = _typed(pc, "lora_alpha", (int, float), "a number") or 0
    targets = _typed(pc, "target_modules", (list,), "a list of module names") or []
    if not all(isinstance(t, str) for t in targets + (mts or [])):
        raise LoRAError("%s: target_modules and modules_to_save must list strings" % path, "bad_checkpoint")
    bias = pc.get("bias") or ""
    if peft_type != "LORA" or pc.get("use_dora") or pc.get("use_rslora") or bias not in ("", "none"):
        raise LoRAError("%s: peft_type=%s dora=%s rslora=%s bias=%s: only plain LoRA without biases is supported"
                        % (CONFIG_FILE, peft_type, bool(pc.get("use_dora")), bool(pc.get("use_rslora")), bias),
                        "unsupported")
    try:
        validate(rank, alpha, targets)
    except LoRAError as e:
        raise LoRAError("%s: %s" % (CONFIG_FILE, e), "bad_checkpoint") from None
    try:
        tensors, _, _ = st.read_file(os.path.join(dir_path, WEIGHTS_FILE))
    except st.SafetensorsError as e:
        raise LoRAError(str(e), "bad_checkpoint") from None
    values = {}
    for l in range(cfg_model.num_hidden_layers):
        for t in TARGETS:
            if t not in targets:
                continue
            out_f, in_f = module_shape(cfg_model, TARGET_MODULE[t])
            pair = []
            for which, want in (("A", [rank, in_f]), ("B", [out_f, rank])):
                name = peft_name(l, t, which)
                x = tensors.pop(name, None)
                if x is None:
                    raise LoRAError("adapter tensor %s: missing (want shape %s)" % (name, want), "bad_checkpoint")
                if list(x.shape) != want:
                    raise LoRAError("adapter tensor %s: shape %s, want %s" % (name, list(x.shape), want), "bad_checkpoint")
                pair.append(x)
            values[(l, t)] = tuple(pair)
    if tensors:
        name = sorted(tensors)[0]
        raise LoRAError("adapter tensor %s: unexpected (shape %s)" % (name, list(tensors[name].shape)), "bad_checkpoint")
    return LoRAState(rank, alpha, targets), values


def load_adapter(model, dir_path):
    """Reads a PEFT adapter directory and attaches it (the model is unchanged on error)."""
    if model.lora is not None:
        raise LoRAError("adapters are already attached")
    state, values = read_adapter(model.cfg, dir_path)
    attach(model, state, values)
    return trainable_count(model)


def detach(model):
    """Removes the attached adapters and unfreezes the base weights: the model computes what it
    did before they were attached. With none attached it raises LoRAError and changes nothing."""
    if model.lora is None:
        raise LoRAError("no adapters are attached")
    for l, t in _ordered_keys(model, model.lora.targets):
        mod = _module(model, l, t)
        mod.lora_A = None
        mod.lora_B = None
        mod.lora_scale = 0.0
    for p in model.parameters():
        p.requires_grad_(True)
    model.lora = None


__all__ = [
    "TARGETS", "LoRAError", "LoRAState", "add_lora", "attach", "detach", "load_adapter", "lora_parameters",
    "merged", "peft_name", "read_adapter", "save_adapter", "trainable_count", "validate",
]
