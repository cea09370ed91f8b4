"""Batched sampling with a KV cache, as learner/qwen3/generate.go and stream.go.

Prompts are left-padded into one batch; one prefill fills the cache, then each decode step
feeds one token per row. Sampling runs on the device, vectorised over rows, in float64:
z = logits / T (the raw logits when greedy, T = 0). A token's log-prob is z[token] − lse(z)
over the whole vocabulary, before top-k/top-p. Greedy picks the lowest id among the maxima.
Otherwise top-k keeps the K largest (ties: lower id first), top-p then keeps the smallest
most-likely prefix whose mass, renormalised within the top-k set, reaches P, and a uniform
draw from a ``torch.Generator`` seeded by ``seed`` picks from the kept set renormalised
(walking candidates most likely first, or in id order when neither top-k nor top-p is on).

``generate`` reports each step through ``on_step`` (streaming) and asks ``poll`` between
decode steps for cancellations (all rows, or some). Finished rows are dropped from the batch
(the cache is compacted) once they make up half of it, so long tails of short answers do not
pay for the rows that ended.
"""

import math

import torch


class SampleConfig:
    """Sampling settings (Go's SampleConfig plus the seed and top_logprobs)."""

    def __init__(self, max_new_tokens, temperature=0.0, top_k=0, top_p=0.0, stop=(), seed=0, top_logprobs=0):
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.top_k = int(top_k)
        self.top_p = float(top_p)
        self.stop = set(int(s) for s in stop)
        self.seed = int(seed)
        self.top_logprobs = int(top_logprobs)

    def validate(self):
        """Returns the first problem as a string, or None."""
        if self.max_new_tokens < 1:
            return "max_new_tokens=%d: must be >= 1" % self.max_new_tokens
        if not math.isfinite(self.temperature) or self.temperature < 0:
            return "temperature=%g: must be finite and >= 0" % self.temperature
        if self.top_k < 0:
            return "top_k=%d: must be >= 0" % self.top_k
        if not (0 <= self.top_p <= 1):
            return "top_p=%g: must be in [0, 1]" % self.top_p
        if self.top_logprobs < 0:
            return "top_logprobs=%d: must be >= 0" % self.top_logprobs
        if not (-(2 ** 63) <= self.seed < 2 ** 64):
            return "seed=%d: must fit in 64 bits" % self.seed
        return None


class Sampler:
    """Picks one token per row from logits [B, V]."""

    def __init__(self, sc, vocab, device):
        self.sc, self.vocab = sc, vocab
        self.greedy = sc.temperature == 0
        self.top_k = sc.top_k if 0 < sc.top_k < vocab else vocab
        self.nucleus = 0 < sc.top_p < 1
        self.truncate = self.top_k < vocab or self.nucleus
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(sc.seed & 0xFFFFFFFFFFFFFFFF)
        self.device = device

    def sample(self, logits):
        """Returns (ids [B] long, logprobs [B] float64, top) where top is None or (ids [B, n],
        logprobs [B, n]) of the top_logprobs most likely tokens, most likely first."""
        z = logits.double()
        if not self.greedy:
            z = z / self.sc.temperature
        zmax = z.max(-1, keepdim=True).values
        lse = zmax + torch.log(torch.exp(z - zmax).sum(-1, keepdim=True))
        n_top = min(self.sc.top_logprobs, self.vocab)
        order = zs = None
        if (self.truncate and not self.greedy) or n_top > 0:
            zs, order = torch.sort(z, dim=-1, descending=True, stable=True)
        if self.greedy:
            ar = torch.arange(self.vocab, device=z.device).expand_as(z)
            ids = torch.where(z == zmax, ar, torch.full_like(ar, self.vocab)).min(-1).values
        else:
            ids = self._draw(z, zmax, lse, zs, order)
        lp = z.gather(-1, ids.unsqueeze(-1)).squeeze(-1) - lse.squeeze(-1)
        top = None
        if n_top > 0:
            top = (order[:, :n_top], zs[:, :n_top] - lse)
        return ids, lp, top

    def _draw(self, z, zmax, lse, zs, order):
        b = z.shape[0]
        u = torch.rand(b, 1, generator=self.gen, dtype=torch.float64, device=z.device)
        if not self.truncate:
            cw = torch.exp(z - zmax).cumsum(-1)
            j = (cw <= u * cw[:, -1:]).sum(-1).clamp(max=self.vocab - 1)
            return j
        w = torch.exp(zs - zmax)
        pos = torch.arange(self.vocab, device=z.device).unsqueeze(0)
        keep = pos < self.top_k
        if self.nucleus:
            p = torch.exp(zs - lse)
            total = (p * keep).sum(-1, keepdim=True) if self.top_k < self.vocab else torch.ones_like(lse)
            cum = (p / total).cumsum(-1)
            prev = torch.cat((torch.zeros_like(cum[:, :1]), cum[:, :-1]), dim=-1)
            keep = keep & (prev < self.sc.top_p)
        w = w * keep
        cw = w.cumsum(-1)
        n_kept = keep.sum(-1)
        j = torch.minimum((cw <= u * cw[:, -1:]).sum(-1), n_kept - 1)
        return order.gather(-1, j.unsqueeze(-1)).squeeze(-1)


class Result:
    def __init__(self, n):
        self.tokens = [[] for _ in range(n)]
        self.logprobs = [[] for _ in range(n)]
        self.stopped = [False] * n
        self.cancelled = False


def generate(model, prompts, sc, compute_ctx, cache_dtype=torch.float32, on_step=None, poll=None):
    """Continues each prompt (a list of token ids). on_step(step, tokens, logprobs, top), if
    given, sees each step: per original row the token (−1 for a row that had already ended),
    its log-prob and its top list ([[id, logprob], ...], or None without top_logprobs).
    poll(), if given, is called after each step and returns None or (rows, cancel_all): row
    indices to end (reported stopped) and whether to stop now (cancelled). Returns a Result."""
    n = len(prompts)
    dev = model.device
    p = max(len(x) for x in prompts)
    s = p + sc.max_new_tokens
    tok = torch.zeros(n, p, dtype=torch.long)
    valid = torch.zeros(n, p, dtype=torch.bool)
    pad = torch.zeros(n, dtype=torch.long)
    for i, x in enumerate(prompts):
        pad[i] = p - len(x)
        tok[i, p - len(x):] = torch.as_tensor(x, dtype=torch.long)
        valid[i, p - len(x):] = True
    res = Result(n)
    done = [False] * n
    smp = Sampler(sc, model.cfg.vocab_size, dev)
    model.eval()
    with torch.inference_mode():
        with compute_ctx():
            logits, cache = model.prefill(tok.to(dev), valid.to(dev), s, cache_dtype)
        rows = list(range(n))  # original row of each batch position
        pad_d = pad.to(dev)
        for step in range(sc.max_new_tokens):
            ids, lps, top = smp.sample(logits)
            ids_l, lps_l = ids.tolist(), lps.tolist()
            ev_tok, ev_lp = [-1] * n, [0.0] * n
            ev_top = None
            if top is not None:
                ev_top = [[] for _ in range(n)]
                top_ids, top_lps = top[0].tolist(), top[1].tolist()
            for j, r in enumerate(rows):
                if done[r]:
                    continue
                t = ids_l[j]
                res.tokens[r].append(t)
                res.logprobs[r].append(lps_l[j])
                ev_tok[r], ev_lp[r] = t, lps_l[j]
                if ev_top is not None:
                    ev_top[r] = [[i, lp] for i, lp in zip(top_ids[j], top_lps[j])]
                if t in sc.stop:
                    done[r] = res.stopped[r] = True
            if on_step is not None:
                on_step(step, ev_tok, ev_lp, ev_top)
            ctl = poll() if poll is not None else None
            if ctl is not None:
                end_rows, cancel_all = ctl
                for r in end_rows:
                    if 0 <= r < n and not done[r]:
                        done[r] = res.stopped[r] = True
                if cancel_all:
                    res.cancelled = True
                    break
            if all(done) or step == sc.max_new_tokens - 1:
                break
            finished = sum(1 for r in rows if done[r])
            if finished and 2 * finished >= len(rows):
                keep = [j for j, r in enumerate(rows) if not done[r]]
                idx = torch.tensor(keep, dtype=torch.long, device=dev)
                cache.select(idx)
                pad_d = pad_d.index_select(0, idx)
                ids = ids.index_select(0, idx)
                rows = [rows[j] for j in keep]
            with compute_ctx():
                logits = model.decode(ids, pad_d, p + step, cache)
    return res
