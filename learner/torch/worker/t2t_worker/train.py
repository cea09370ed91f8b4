"""GRPO and behaviour-cloning steps, as learner/grpo.go and learner/trainer.go.

``parse_batch`` checks a protocol batch map as Go's checkBatch does and returns a ``Batch`` of
CPU tensors. ``Trainer.step`` splits it into micro-batches of at most ``micro_batch`` rows,
accumulates each one's gradient of (its masked loss sum) / (the whole batch's Σ mask), clips the
summed gradient by global norm (factor min(1, max_grad_norm / (norm + 1e-6))) and applies AdamW
(β1 0.9, β2 0.999, ε 1e-7, bias-corrected, decoupled weight decay lr·wd·w: torch.optim.AdamW
with eps=1e-7 is GoMLX's Adam with weight decay). A step that fails before the update leaves the
weights and optimizer state as they were. With ``tail`` > 0 the output layer, softmax and loss
run on the last ``tail`` positions only. With ``logprob_chunk`` > 0 (the default) they run on
the trained positions only, at most ``logprob_chunk`` of them at a time, each chunk's backward
pass at once: the [B, T, V] logits of a micro-batch never exist whole.
"""

import math

import torch

from . import arrays, dist
from .errors import BadCheckpoint, BadRequest, WorkerError

GRPO, BC = "grpo", "bc"

# Go's DefaultGRPOConfig, used until the first train_config.
DEFAULTS = {"clip_eps": 0.2, "is_cap": 3.0, "kl_coef": 0.0, "lr": 1e-3, "weight_decay": 0.0,
            "max_grad_norm": 1.0, "micro_batch": 256}

# Trained positions whose output layer, softmax and loss one chunk computes (the worker's
# logprob_chunk; 0: every position of a micro-batch at once). 1,024 positions of Qwen3's
# 151,936-token vocabulary are 0.6 GB of float32 logits, against 5 GB for a micro-batch of
# 2 × 4,096 positions at once: small next to a 4B model's weights and optimizer state, and
# large enough that each chunk's matmul still runs at full speed.
DEFAULT_LOGPROB_CHUNK = 1024  # Go: engine.TorchLogProbChunk (the memory estimate)

# Metric slots (Go's mLoss ... mEntropy).
M_LOSS, M_MASK, M_CLIP, M_KL, M_RATIO, M_REFKL, M_ADVABS, M_CORRECT, M_ENTROPY = range(9)
NUM_METRICS = 9


class TrainConfig:
    """GRPO/BC hyper-parameters, validated as Go's GRPOConfig.Validate."""

    FIELDS = ("clip_eps", "is_cap", "kl_coef", "lr", "weight_decay", "max_grad_norm", "micro_batch")

    def __init__(self, **kw):
        for f in self.FIELDS:
            setattr(self, f, kw.get(f, DEFAULTS[f]))
        self.micro_batch = int(self.micro_batch)
        self.validate()

    @classmethod
    def from_request(cls, d):
        kw = {f: arrays.get_float(d, f) for f in cls.FIELDS if f != "micro_batch"}
        kw["micro_batch"] = arrays.get_int(d, "micro_batch")
        return cls(**kw)

    def validate(self):
        def bad(field, v, reason):
            return BadRequest("train_config %s=%r: %s" % (field, v, reason))

        def finite(x):
            return isinstance(x, (int, float)) and math.isfinite(x)

        if not finite(self.clip_eps) or not 0 < self.clip_eps < 1:
            raise bad("clip_eps", self.clip_eps, "must be in (0, 1)")
        if not finite(self.is_cap) or (self.is_cap != 0 and self.is_cap <= 1 + self.clip_eps):
            raise bad("is_cap", self.is_cap, "must be 0 (off) or > 1+clip_eps")
        if not finite(self.kl_coef) or self.kl_coef < 0:
            raise bad("kl_coef", self.kl_coef, "must be >= 0")
        if not finite(self.lr) or not 0 < self.lr <= 1:
            raise bad("lr", self.lr, "must be in (0, 1]")
        if not finite(self.weight_decay) or not 0 <= self.weight_decay < 1:
            raise bad("weight_decay", self.weight_decay, "must be in [0, 1)")
        if not finite(self.max_grad_norm) or self.max_grad_norm < 0:
            raise bad("max_grad_norm", self.max_grad_norm, "must be >= 0 (0 = off)")
        if self.micro_batch < 1:
            raise bad("micro_batch", self.micro_batch, "must be >= 1")

    def as_dict(self):
        return {f: getattr(self, f) for f in self.FIELDS}

    def same_but_lr(self, other):
        """Reports whether other differs from self in nothing but lr."""
        return all(getattr(self, f) == getattr(other, f) for f in self.FIELDS if f != "lr")


class Batch:
    """A checked batch: [R, T] CPU tensors (tokens, actions long; valid bool; the rest float32)."""

    def __init__(self, rows, t, tokens, valid, actions, mask, behaviour, advantages, ref, tail):
        self.rows, self.t, self.tail = rows, t, tail
        self.tokens, self.valid, self.actions, self.mask = tokens, valid, actions, mask
        self.behaviour, self.advantages, self.ref = behaviour, advantages, ref


def parse_batch(d, kind, vocab):
    """Checks a protocol batch map (Go's checkBatch) and returns a Batch."""
    if not isinstance(d, dict):
        raise BadRequest("batch: want a map, got %s" % type(d).__name__)
    r = arrays.get_int(d, "rows", lo=1)
    t = arrays.get_int(d, "t", lo=1)
    n = r * t
    tokens = arrays.i32(arrays.req(d, "tokens"), "batch.tokens", n).view(r, t)
    valid_i = arrays.i32(arrays.req(d, "valid"), "batch.valid", n).view(r, t)
    if bool(((valid_i != 0) & (valid_i != 1)).any()):
        raise BadRequest("batch.valid: values must be 0 or 1")
    valid = valid_i.bool()
    bad_tok = valid & ((tokens < 0) | (tokens >= vocab))
    if bool(bad_tok.any()):
        i = int(bad_tok.view(-1).nonzero()[0])
        raise BadRequest("batch.tokens: token %d at %d outside [0, %d)" % (int(tokens.view(-1)[i]), i, vocab))
    tokens = tokens.masked_fill(~valid, 0)
    actions = arrays.i32(arrays.req(d, "actions"), "batch.actions", n).view(r, t)
    bad_act = (actions < 0) | (actions >= vocab)
    if bool(bad_act.any()):
        i = int(bad_act.view(-1).nonzero()[0])
        raise BadRequest("batch.actions: action %d at %d outside [0, %d)" % (int(actions.view(-1)[i]), i, vocab))
    mask = d.get("mask")
    mask = torch.ones(r, t) if mask is None else arrays.f32(mask, "batch.mask", n).view(r, t)
    tail = arrays.get_int(d, "tail", default=0)
    if tail != 0:
        if tail < 0 or tail > t or d.get("mask") is None:
            raise BadRequest("batch.tail=%d: want 0, or 1..t=%d with a mask" % (tail, t))
        head = mask[:, : t - tail]
        if bool((head != 0).any()):
            row = int((head != 0).any(1).nonzero()[0])
            pos = int((head[row] != 0).nonzero()[0])
            raise BadRequest("batch.tail=%d: row %d trains position %d, before its last %d" % (tail, row, pos, tail))
    behaviour = advantages = ref = None
    if kind == GRPO:
        behaviour = arrays.f32(arrays.req(d, "behaviour"), "batch.behaviour", n).view(r, t)
        adv = arrays.f32(arrays.req(d, "advantages"), "batch.advantages", allowed=(r, n))
        if not bool(torch.isfinite(adv).all()):
            raise BadRequest("batch.advantages: non-finite advantage")
        advantages = adv.view(r, 1).expand(r, t).contiguous() if adv.numel() == r and n != r else adv.view(r, t)
        if d.get("ref") is not None:
            ref = arrays.f32(d["ref"], "batch.ref", n).view(r, t)
    return Batch(r, t, tokens, valid, actions, mask, behaviour, advantages, ref, tail)


def chosen_logprobs(logits, actions):
    """log softmax(logits)[actions] [B, T] and the full log-probs [B, T, V] (float32)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, actions.unsqueeze(-1)).squeeze(-1), logp


def grpo_terms(cfg, new, behaviour, adv, mask, ref):
    """The per-position GRPO loss [B, T] and the metric sums (no gradient) of GRPOLoss."""
    log_ratio = new - behaviour
    ratio = torch.exp(log_ratio)
    unclipped = torch.clamp(ratio, max=cfg.is_cap) if cfg.is_cap > 0 else ratio
    clipped = torch.clamp(ratio, 1 - cfg.clip_eps, 1 + cfg.clip_eps)
    u_a, c_a = unclipped * adv, clipped * adv
    per_pos = -torch.minimum(u_a, c_a)
    ref_kl = None
    if ref is not None:
        dlt = ref - new
        ref_kl = torch.exp(dlt) - dlt - 1
        if cfg.kl_coef > 0:
            per_pos = per_pos + cfg.kl_coef * ref_kl
    with torch.no_grad():
        cut = (u_a > c_a).float()
        if cfg.is_cap > 0:
            cut = torch.maximum(cut, ((adv < 0) & (ratio > cfg.is_cap)).float())
        sums = {
            M_CLIP: (cut * mask).sum(),
            M_KL: (((ratio - 1) - log_ratio) * mask).sum(),
            M_RATIO: (ratio * mask).sum(),
            M_REFKL: (ref_kl * mask).sum() if ref_kl is not None else None,
            M_ADVABS: (adv.abs() * mask).sum(),
        }
    return per_pos, sums


def entropy_sum(logp, mask):
    with torch.no_grad():
        return ((-(logp.exp() * logp).sum(-1)) * mask).sum()


class Trainer:
    """Optimizer steps over a model's trainable parameters (all weights, or the LoRA adapters)."""

    def __init__(self, model, cfg, compute_ctx, logprob_chunk=DEFAULT_LOGPROB_CHUNK, ranks=None):
        self.model, self.cfg, self.compute_ctx = model, cfg, compute_ctx
        self.logprob_chunk = logprob_chunk
        self.ranks = ranks if ranks is not None else dist.Single()
        self.params = [p for p in model.parameters() if p.requires_grad]
        if not self.params:
            raise WorkerError("the model has no trainable parameters")
        self.opt = torch.optim.AdamW(self.params, lr=cfg.lr, betas=(0.9, 0.999), eps=1e-7,
                                     weight_decay=cfg.weight_decay)

    def named_params(self):
        return [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]

    def state_tensors(self):
        """AdamW's moments as {"NAME.exp_avg", "NAME.exp_avg_sq": float32 tensor} and the step
        count (0 before the first step: no moments yet)."""
        out, step = {}, 0
        for n, p in self.named_params():
            st = self.opt.state.get(p)
            if not st:
                continue
            out[n + ".exp_avg"] = st["exp_avg"].detach().float().cpu()
            out[n + ".exp_avg_sq"] = st["exp_avg_sq"].detach().float().cpu()
            step = int(float(st["step"]))
        return out, step

    def load_state(self, tensors, step):
        """Installs moments saved by state_tensors. Every check runs before anything changes: a
        missing, unexpected or mis-shaped tensor raises BadCheckpoint naming it."""
        want = {}
        for n, p in self.named_params():
            want[n + ".exp_avg"] = p
            want[n + ".exp_avg_sq"] = p
        if step < 0 or (step == 0) != (not tensors):
            raise BadCheckpoint("optimizer state: step %d with %d moment tensors" % (step, len(tensors)))
        if tensors:
            for k in sorted(set(want) | set(tensors)):
                if k not in tensors:
                    raise BadCheckpoint("optimizer state: missing tensor %s" % k)
                if k not in want:
                    raise BadCheckpoint("optimizer state: unexpected tensor %s (not a trainable parameter)" % k)
                if tuple(tensors[k].shape) != tuple(want[k].shape):
                    raise BadCheckpoint("optimizer state: %s has shape %s, want %s"
                                        % (k, list(tensors[k].shape), list(want[k].shape)))
        self.opt.state.clear()
        for n, p in self.named_params():
            if not tensors:
                break
            self.opt.state[p] = {
                "step": torch.tensor(float(step)),
                "exp_avg": tensors[n + ".exp_avg"].to(p.device, p.dtype).clone(),
                "exp_avg_sq": tensors[n + ".exp_avg_sq"].to(p.device, p.dtype).clone(),
            }

    def set_lr(self, lr):
        self.cfg.lr = lr
        for g in self.opt.param_groups:
            g["lr"] = lr

    def _micro(self, kind, b, r0, r1, scale):
        """Forward and backward passes of rows [r0, r1): adds the gradient of their loss (each
        trained position's term times scale) to each parameter's .grad and returns the metric
        sums [NUM_METRICS] (no gradient)."""
        dev = self.model.device
        sl = slice(r0, r1)
        w = b.tail if b.tail > 0 else b.t
        tw = slice(b.t - w, b.t)
        tokens, valid = b.tokens[sl].to(dev), b.valid[sl].to(dev)
        cols = {"actions": b.actions[sl, tw].to(dev), "mask": b.mask[sl, tw].to(dev)}
        if kind == GRPO:
            cols["behaviour"], cols["advantages"] = b.behaviour[sl, tw].to(dev), b.advantages[sl, tw].to(dev)
            if b.ref is not None:
                cols["ref"] = b.ref[sl, tw].to(dev)
        if self.logprob_chunk <= 0:
            with self.compute_ctx():
                logits = self.model(tokens, valid, tail=b.tail)
            loss, sums = self._terms(kind, logits, cols, scale)
            loss.backward()
            return sums
        # Chunked: the output layer, softmax and loss of at most logprob_chunk trained positions
        # at a time. Each chunk's backward pass runs at once, into the gradient of a detached copy
        # of the hidden states, so no more than one chunk's logits [n, V] is ever alive; the
        # body's backward pass then runs once from that gradient. Positions with mask 0 add
        # nothing to the loss or the metrics and are skipped.
        with self.compute_ctx():
            h = self.model.hidden(tokens, valid, tail=b.tail)
        sel = cols["mask"].reshape(-1).nonzero().squeeze(1)
        hs = h.reshape(-1, h.shape[-1]).index_select(0, sel)
        hd = hs.detach().requires_grad_(hs.requires_grad)
        flat = {k: v.reshape(-1).index_select(0, sel) for k, v in cols.items()}
        sums = torch.zeros(NUM_METRICS, dtype=torch.float32, device=dev)
        n, c = sel.numel(), self.logprob_chunk
        for c0 in range(0, n, c):
            with self.compute_ctx():
                logits = self.model.head(hd[c0:c0 + c])
            loss, s = self._terms(kind, logits, {k: v[c0:c0 + c] for k, v in flat.items()}, scale)
            if loss.requires_grad:
                loss.backward()
            sums += s
            del logits, loss
        if hd.grad is not None:
            hs.backward(hd.grad)
        return sums

    def _terms(self, kind, logits, cols, scale):
        """The loss (to differentiate) and metric sums of positions with logits [..., V] and
        cols (actions, mask, behaviour, advantages, ref) of the positions' shape."""
        mask = cols["mask"]
        new, logp = chosen_logprobs(logits, cols["actions"])
        dev = logits.device
        zero = torch.zeros((), device=dev)
        sums = [zero] * NUM_METRICS
        if kind == GRPO:
            per_pos, extra = grpo_terms(self.cfg, new, cols["behaviour"], cols["advantages"], mask, cols.get("ref"))
            loss = (per_pos * mask).sum() * scale
            for k, v in extra.items():
                if v is not None:
                    sums[k] = v
        else:
            loss = -(new * mask).sum() * scale
            with torch.no_grad():
                best = logp.max(-1).values
                sums[M_CORRECT] = ((new >= best - 1e-6).float() * mask).sum()
        sums[M_LOSS] = loss.detach()
        sums[M_MASK] = mask.sum()
        sums[M_ENTROPY] = entropy_sum(logp, mask)
        return loss, torch.stack([s.float() for s in sums])

    def accumulate(self, kind, b, refused=None):
        """Forward and backward passes over b's micro-batches, leaving the gradient of the whole
        batch's loss in each parameter's .grad. Returns (metric sums float64 [NUM_METRICS],
        micro-batches). On several ranks b is this rank's share of the rows (None: no rows) and
        the loss is divided by the trained positions of every rank's share together: the ranks'
        gradients and metric sums, summed, are then those of one rank over the whole batch.
        refused (a WorkerError raised while parsing this rank's share) fails the step on every
        rank, as does a failure of any rank's passes, so that no rank waits alone in a
        collective and no rank updates."""
        local = float(b.mask.double().sum()) if b is not None else 0.0
        total, others = self._agree([local, 1.0 if refused is not None else 0.0])
        if refused is not None:
            raise refused
        if others > 0:
            raise BadRequest("another rank refused its share of the batch")
        if not total > 0:
            raise BadRequest("no trained positions (mask is all zero)")
        scale = torch.tensor(1.0 / total, dtype=torch.float32, device=self.model.device)
        sums, n_micro, failure = torch.zeros(NUM_METRICS, dtype=torch.float64), 0, None
        self.model.train()
        for p in self.params:
            p.grad = None
        try:
            sums, n_micro = self._passes(kind, b, scale)
        except Exception as e:  # noqa: BLE001 - re-raised below, after the ranks agree
            if self.ranks.world_size == 1:
                raise
            failure = e
        if self.ranks.world_size > 1:
            agreed = self._agree(sums.tolist() + [float(n_micro), 1.0 if failure is not None else 0.0])
            if failure is not None:
                raise failure
            if agreed[-1] > 0:
                raise WorkerError("another rank failed its share of the step: update not applied")
            sums, n_micro = torch.tensor(agreed[:NUM_METRICS], dtype=torch.float64), int(round(agreed[NUM_METRICS]))
            dist.sum_grads_(self.ranks, self.params)
        return sums, n_micro

    def _passes(self, kind, b, scale):
        """The micro-batches of b (None: none): metric sums and their count."""
        sums = torch.zeros(NUM_METRICS, dtype=torch.float64)
        if b is None:
            return sums, 0
        mb = self.cfg.micro_batch
        n_micro = (b.rows + mb - 1) // mb
        for m in range(n_micro):
            r0, r1 = m * mb, min(b.rows, (m + 1) * mb)
            metrics = self._micro(kind, b, r0, r1, scale)
            sums += metrics.detach().to("cpu", torch.float64)
            del metrics
        return sums, n_micro

    def _agree(self, values):
        """values summed over the ranks (float64, on the model's device for NCCL)."""
        if self.ranks.world_size == 1:
            return values
        t = torch.tensor(values, dtype=torch.float64, device=self.model.device)
        return self.ranks.sum_(t).cpu().tolist()

    def apply(self):
        """Clips the accumulated gradients by global norm and takes the AdamW step. Returns the
        norm before clipping. A non-finite norm raises (nothing is applied)."""
        grads = [p.grad for p in self.params if p.grad is not None]
        norm_t = torch.stack([g.pow(2).sum() for g in grads]).sum().sqrt() if grads else torch.zeros(())
        norm = float(norm_t)
        if not math.isfinite(norm):
            raise WorkerError("non-finite gradient norm (%s): update not applied" % norm)
        if self.cfg.max_grad_norm > 0:
            factor = torch.clamp(self.cfg.max_grad_norm / (norm_t + 1e-6), max=1.0)
            for g in grads:
                g.mul_(factor)
        self.opt.step()
        return norm

    def step(self, kind, b, refused=None):
        """One optimizer step on batch b (this rank's share; see accumulate). Returns the reply
        fields (without "step")."""
        try:
            sums, n_micro = self.accumulate(kind, b, refused)
            norm = self.apply()
        finally:
            for p in self.params:
                p.grad = None
        n = float(sums[M_MASK])
        return {
            "loss": float(sums[M_LOSS]),
            "positions": int(round(n)),
            "clip_frac": float(sums[M_CLIP]) / n,
            "approx_kl": float(sums[M_KL]) / n,
            "mean_ratio": float(sums[M_RATIO]) / n,
            "ref_kl": float(sums[M_REFKL]) / n,
            "mean_abs_adv": float(sums[M_ADVABS]) / n,
            "accuracy": float(sums[M_CORRECT]) / n,
            "entropy": float(sums[M_ENTROPY]) / n,
            "grad_norm": norm,
            "micro_batches": n_micro,
        }


def logprobs(model, b, micro_batch, compute_ctx, chunk=DEFAULT_LOGPROB_CHUNK):
    """log π(actions) [R, T] (float32, CPU) at every position, 0 before the tail window. With
    chunk > 0 the output layer and softmax run on at most chunk positions at a time."""
    out = torch.zeros(b.rows, b.t)
    w = b.tail if b.tail > 0 else b.t
    dev = model.device
    model.eval()
    with torch.inference_mode():
        for r0 in range(0, b.rows, micro_batch):
            r1 = min(b.rows, r0 + micro_batch)
            actions = b.actions[r0:r1, b.t - w:].to(dev)
            if chunk <= 0:
                with compute_ctx():
                    logits = model(b.tokens[r0:r1].to(dev), b.valid[r0:r1].to(dev), tail=b.tail)
                new, _ = chosen_logprobs(logits, actions)
                out[r0:r1, b.t - w:] = new.float().cpu()
                continue
            with compute_ctx():
                h = model.hidden(b.tokens[r0:r1].to(dev), b.valid[r0:r1].to(dev), tail=b.tail)
            h = h.reshape(-1, h.shape[-1])
            act = actions.reshape(-1)
            new = torch.empty(act.shape[0], dtype=torch.float32, device=dev)
            for c0 in range(0, act.shape[0], chunk):
                with compute_ctx():
                    logits = model.head(h[c0:c0 + chunk])
                new[c0:c0 + chunk], _ = chosen_logprobs(logits, act[c0:c0 + chunk])
            out[r0:r1, b.t - w:] = new.view(r1 - r0, w).cpu()
    return out
