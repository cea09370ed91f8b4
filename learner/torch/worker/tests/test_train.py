"""GRPO/BC steps: loss and gradients against a direct autograd computation, AdamW, micro-batches,
the tail window and failed steps."""

import copy
import unittest

import torch

import helpers
from t2t_worker import arrays, lora, train
from t2t_worker.errors import BadCheckpoint, BadRequest, WorkerError

SEED = 31337


def make_samples(g, n=5, vocab=512):
    out = []
    for i in range(n):
        p = helpers.rand_tokens(g, 1 + (3 * i) % 6, vocab)
        c = helpers.rand_tokens(g, 2 + (2 * i) % 4, vocab)
        adv = float(torch.randn(1, generator=g)) * (1 if i % 2 else -1)
        ref = (torch.randn(len(c), generator=g) - 6).tolist()
        out.append([p, c, None, adv, ref])
    return out


def set_behaviour(m, samples, g, spread=0.8):
    """Behaviour log-probs = the model's own plus noise (ratios spread around 1, some clipped,
    some above the IS cap)."""
    b = train.parse_batch(helpers.seq_batch(samples, tail=False), train.BC, 512)
    lp = train.logprobs(m, b, 256, helpers.NULL_CTX)
    for i, s in enumerate(samples):
        row = lp[i]
        k = len(s[1])
        noise = (torch.rand(k, generator=g) - 0.5) * 2 * spread
        noise[0] = -1.5  # r = e^1.5 > 3: the cap acts on negative advantages
        s[2] = (row[-k:] + noise).tolist()


def direct_loss(m, req, cfg, kind):
    """The GRPO (or BC) loss written straight from PROTOCOL.md over the whole batch."""
    r, t = req["rows"], req["t"]
    f = lambda k: arrays.f32(req[k], k).view(r, t)  # noqa: E731
    tok = arrays.i32(req["tokens"], "tokens").view(r, t)
    valid = arrays.i32(req["valid"], "valid").view(r, t).bool()
    act = arrays.i32(req["actions"], "actions").view(r, t)
    mask = f("mask")
    logp = torch.log_softmax(m(tok, valid), -1)
    new = logp.gather(-1, act.unsqueeze(-1)).squeeze(-1)
    if kind == train.BC:
        return -(mask * new).sum() / mask.sum()
    beh = f("behaviour")
    adv = arrays.f32(req["advantages"], "adv")
    adv = adv.view(r, 1).expand(r, t) if adv.numel() == r else adv.view(r, t)
    ratio = torch.exp(new - beh)
    ell = -torch.minimum(torch.minimum(ratio, torch.tensor(cfg.is_cap)) * adv,
                         torch.clamp(ratio, 1 - cfg.clip_eps, 1 + cfg.clip_eps) * adv)
    if req.get("ref") is not None:
        ref = f("ref")
        ell = ell + cfg.kl_coef * (torch.exp(ref - new) - (ref - new) - 1)
    return (mask * ell).sum() / mask.sum()


def params_of(m):
    return {n: p.detach().clone() for n, p in m.named_parameters()}


class TrainTest(unittest.TestCase):
    def setUp(self):
        self.g = torch.Generator().manual_seed(SEED)
        self.m = helpers.tiny_model(SEED, sharp=False)
        self.samples = make_samples(self.g)
        set_behaviour(self.m, self.samples, self.g)
        self.cfg = train.TrainConfig(clip_eps=0.2, is_cap=3.0, kl_coef=0.1, lr=1e-2, weight_decay=0.1,
                                     max_grad_norm=0.05, micro_batch=2)

    def trainer(self, m=None, **over):
        cfg = train.TrainConfig(**dict(self.cfg.as_dict(), **over))
        return train.Trainer(m or self.m, cfg, helpers.NULL_CTX)

    def assertClose(self, a, b, tol, what):
        err = (a - b).abs().max().item() if torch.is_tensor(a) else abs(a - b)
        self.assertLessEqual(err, tol, "%s: diff %g (seed %d)" % (what, err, SEED))

    def test_grpo_loss_and_grads_match_direct_autograd(self):
        for with_ref, tail in ((True, True), (False, False)):
            req = helpers.seq_batch(self.samples, with_ref=with_ref, tail=tail)
            tr = self.trainer()
            sums, n_micro = tr.accumulate(train.GRPO, train.parse_batch(req, train.GRPO, 512))
            self.assertEqual(n_micro, 3)
            got = {n: p.grad.clone() for n, p in self.m.named_parameters()}
            want_loss = direct_loss(self.m, req, self.cfg, train.GRPO)
            want = torch.autograd.grad(want_loss, list(self.m.parameters()))
            what = "ref=%s tail=%s" % (with_ref, tail)
            self.assertClose(float(sums[train.M_LOSS]), want_loss.item(), 1e-5, "loss " + what)
            for (n, _), w in zip(self.m.named_parameters(), want):
                self.assertClose(got[n], w, 1e-5 * max(1.0, w.abs().max().item()), "grad %s %s" % (n, what))
            for p in self.m.parameters():
                p.grad = None

    def test_metrics(self):
        req = helpers.seq_batch(self.samples, with_ref=True)
        out = self.trainer().step(train.GRPO, train.parse_batch(req, train.GRPO, 512))
        self.assertEqual(out["positions"], sum(len(s[1]) for s in self.samples))
        self.assertEqual(out["micro_batches"], 3)
        self.assertGreater(out["clip_frac"], 0)
        self.assertGreater(out["approx_kl"], 0)
        self.assertGreater(out["ref_kl"], 0)
        self.assertGreater(out["entropy"], 5.5)  # near log(512) = 6.24 for a fresh model
        want_adv = sum(abs(s[3]) * len(s[1]) for s in self.samples) / out["positions"]
        self.assertClose(out["mean_abs_adv"], want_adv, 1e-5, "mean_abs_adv")
        self.assertEqual(out["accuracy"], 0.0)

    def test_bc_loss_and_accuracy(self):
        req = helpers.seq_batch(self.samples)
        tr = self.trainer()
        b = train.parse_batch(req, train.BC, 512)
        sums, _ = tr.accumulate(train.BC, b)
        with torch.no_grad():
            want = direct_loss(self.m, req, self.cfg, train.BC).item()
        self.assertClose(float(sums[train.M_LOSS]), want, 1e-5, "bc loss")
        for p in self.m.parameters():
            p.grad = None
        # Train on the model's own greedy tokens: accuracy 1.
        seq = helpers.rand_tokens(self.g, 4)
        logits = helpers.full_logits(self.m, seq)
        greedy = [[seq[:k + 1], [int(logits[k].argmax())], None, 0.0, None] for k in range(4)]
        out = tr.step(train.BC, train.parse_batch(helpers.seq_batch(greedy), train.BC, 512))
        self.assertEqual(out["accuracy"], 1.0)

    def test_adamw_matches_gomlx_formula(self):
        req = helpers.seq_batch(self.samples, with_ref=True)
        b = train.parse_batch(req, train.GRPO, 512)
        tr = self.trainer()
        w = params_of(self.m)
        m1 = {n: torch.zeros_like(x) for n, x in w.items()}
        v1 = {n: torch.zeros_like(x) for n, x in w.items()}
        lr, wd, b1, b2, eps = self.cfg.lr, self.cfg.weight_decay, 0.9, 0.999, 1e-7
        for step in (1, 2):
            tr.accumulate(train.GRPO, b)
            grads = {n: p.grad.clone() for n, p in self.m.named_parameters()}
            norm = torch.stack([g.pow(2).sum() for g in grads.values()]).sum().sqrt()
            factor = min(1.0, self.cfg.max_grad_norm / (norm.item() + 1e-6))
            self.assertLess(factor, 1.0)
            got_norm = tr.apply()
            self.assertClose(got_norm, norm.item(), 1e-4 * norm.item(), "grad norm")
            for n in w:
                g = grads[n] * factor
                m1[n] = b1 * m1[n] + (1 - b1) * g
                v1[n] = b2 * v1[n] + (1 - b2) * g * g
                mh, vh = m1[n] / (1 - b1 ** step), v1[n] / (1 - b2 ** step)
                w[n] = w[n] - lr * mh / (vh.sqrt() + eps) - lr * wd * w[n]
            for n, p in self.m.named_parameters():
                p.grad = None
                self.assertClose(p.detach(), w[n], 1e-6, "step %d %s" % (step, n))

    def test_micro_batch_sizes_agree(self):
        req = helpers.seq_batch(self.samples, with_ref=True)
        outs, grads, models = [], [], []
        for mb in (1, 2, 256):
            m = copy.deepcopy(self.m)
            tr = self.trainer(m, micro_batch=mb)
            tr.accumulate(train.GRPO, train.parse_batch(req, train.GRPO, 512))
            grads.append({n: p.grad.clone() for n, p in m.named_parameters()})
            outs.append(tr.step(train.GRPO, train.parse_batch(req, train.GRPO, 512)))
            models.append(params_of(m))
        self.assertEqual([o["micro_batches"] for o in outs], [5, 3, 1])
        for out in outs[1:]:
            for k in ("loss", "clip_frac", "approx_kl", "entropy", "grad_norm"):
                self.assertClose(out[k], outs[0][k], 1e-5 * max(1, abs(outs[0][k])), k)
        # Micro-batching must give the whole batch's gradient, up to float32 summation order.
        for other in grads[1:]:
            for n, g in grads[0].items():
                self.assertClose(other[n], g, 1e-5 * g.abs().max().item(), "grad " + n)
        # Adam's first step moves a weight by lr·g/(|g|+eps) (g clipped; eps 1e-7, as train.py).
        # The step's slope in g is lr·eps/(|g|+eps)², so where g is near eps, summation-order noise
        # in g moves it by a large fraction of lr (a CI machine saw 1.4e-3·lr). Each weight may
        # differ by that slope times its measured gradient difference, plus 1e-4·lr of rounding.
        eps, lr = 1e-7, self.cfg.lr
        clipped = [min(1.0, self.cfg.max_grad_norm / (o["grad_norm"] + 1e-6)) for o in outs]
        for i in (1, 2):
            for n, w in models[0].items():
                g0, gi = grads[0][n] * clipped[0], grads[i][n] * clipped[i]
                dg = (gi - g0).abs()
                slope = eps / ((g0.abs() - dg).clamp(min=0) + eps) ** 2
                bound = lr * (1e-4 + slope * dg)
                excess = ((models[i][n] - w).abs() - bound).max().item()
                self.assertLessEqual(excess, 0, "%s: micro-batch run %d off by %g past its bound (seed %d)"
                                     % (n, i, excess, SEED))

    def test_tail_window_agrees_with_full(self):
        outs = []
        for tail in (True, False):
            m = copy.deepcopy(self.m)
            outs.append(self.trainer(m).step(train.GRPO, train.parse_batch(
                helpers.seq_batch(self.samples, with_ref=True, tail=tail), train.GRPO, 512)))
        for k in ("loss", "grad_norm", "entropy", "mean_ratio"):
            self.assertClose(outs[0][k], outs[1][k], 1e-5, k)

    def test_bad_batches(self):
        req = helpers.seq_batch(self.samples)
        bad = {
            "short tokens": dict(req, tokens=req["tokens"][:-4]),
            "odd bin": dict(req, mask=req["mask"][:-1]),
            "advantages length": dict(req, advantages=arrays.to_f32_bin([1.0, 2.0])),
            "action out of range": dict(req, actions=arrays.to_i32_bin([600] * (req["rows"] * req["t"]))),
            "tail too short": dict(req, tail=1),
            "tail without mask": dict(req, mask=None),
            "missing behaviour": dict(req, behaviour=None),
            "valid not 0/1": dict(req, valid=arrays.to_i32_bin([2] * (req["rows"] * req["t"]))),
            "nan advantage": dict(req, advantages=arrays.to_f32_bin([float("nan")] * req["rows"])),
            "rows 0": dict(req, rows=0),
            "mistyped t": dict(req, t="5"),
            "zero mask": dict(req, mask=arrays.to_f32_bin([0.0] * (req["rows"] * req["t"])), tail=0),
        }
        before = params_of(self.m)
        tr = self.trainer()
        for what, b in bad.items():
            with self.assertRaises(BadRequest, msg=what):
                tr.step(train.GRPO, train.parse_batch(b, train.GRPO, 512))
        for n, p in self.m.named_parameters():
            self.assertTrue(torch.equal(p, before[n]), n)
            self.assertIsNone(p.grad)
        self.assertEqual(tr.opt.state_dict()["state"], {})

    def test_failure_mid_step_changes_nothing(self):
        req = helpers.seq_batch(self.samples, with_ref=True)
        b = train.parse_batch(req, train.GRPO, 512)
        tr = self.trainer()
        tr.step(train.GRPO, b)
        before, opt_before = params_of(self.m), copy.deepcopy(tr.opt.state_dict())
        real, calls = tr._micro, []

        def flaky(*args):
            calls.append(1)
            if len(calls) == 2:
                raise RuntimeError("injected failure")
            return real(*args)
        tr._micro = flaky
        with self.assertRaises(RuntimeError):
            tr.step(train.GRPO, b)
        tr._micro = real
        for n, p in self.m.named_parameters():
            self.assertTrue(torch.equal(p, before[n]), n)
            self.assertIsNone(p.grad)
        st = tr.opt.state_dict()["state"]
        for k, s in opt_before["state"].items():
            self.assertTrue(torch.equal(st[k]["exp_avg"], s["exp_avg"]))
            self.assertEqual(float(st[k]["step"]), float(s["step"]))
        # A non-finite loss is refused without an update.
        bad = dict(req, behaviour=arrays.to_f32_bin([-1e30] * (req["rows"] * req["t"])))
        with self.assertRaises(WorkerError):
            tr.step(train.GRPO, train.parse_batch(bad, train.GRPO, 512))
        for n, p in self.m.named_parameters():
            self.assertTrue(torch.equal(p, before[n]), n)

    def test_resume_from_saved_state_is_bit_exact(self):
        b = train.parse_batch(helpers.seq_batch(self.samples, with_ref=True), train.GRPO, 512)
        start = copy.deepcopy(self.m)
        tr = self.trainer()
        for _ in range(4):
            tr.step(train.GRPO, b)
        want = params_of(self.m)
        m2 = copy.deepcopy(start)
        tr2 = self.trainer(m2)
        for _ in range(2):
            tr2.step(train.GRPO, b)
        tensors, step = tr2.state_tensors()
        self.assertEqual(step, 2)
        m3 = copy.deepcopy(m2)
        tr3 = self.trainer(m3)
        tr3.load_state(tensors, step)
        for _ in range(2):
            tr3.step(train.GRPO, b)
        for n, p in m3.named_parameters():
            self.assertTrue(torch.equal(p.detach(), want[n]), n)

    def test_bad_optimizer_state_changes_nothing(self):
        b = train.parse_batch(helpers.seq_batch(self.samples, with_ref=True), train.GRPO, 512)
        tr = self.trainer()
        tr.step(train.GRPO, b)
        good, step = tr.state_tensors()
        name = sorted(good)[0]
        cases = {
            "missing": ({k: v for k, v in good.items() if k != name}, step),
            "unexpected": (dict(good, **{"nope.exp_avg": good[name]}), step),
            "shape": (dict(good, **{name: torch.zeros(3)}), step),
            "step": (good, 0),
        }
        for what, (tensors, st) in cases.items():
            with self.assertRaises(BadCheckpoint, msg=what):
                tr.load_state(tensors, st)
            now, now_step = tr.state_tensors()
            self.assertEqual(now_step, step, what)
            for k, v in good.items():
                self.assertTrue(torch.equal(now[k], v), (what, k))

    def test_lora_step_trains_adapters_only(self):
        lora.add_lora(self.m, 2, 4.0, ["q_proj", "up_proj"], 3)
        before = params_of(self.m)
        tr = self.trainer()
        self.assertEqual(len(tr.params), 2 * 2 * 2)
        tr.step(train.GRPO, train.parse_batch(helpers.seq_batch(self.samples), train.GRPO, 512))
        for n, p in self.m.named_parameters():
            changed = not torch.equal(p, before[n])
            self.assertEqual(changed, ".lora_" in n, n)

    def test_train_config_validation(self):
        for over in ({"clip_eps": 0}, {"clip_eps": 1}, {"is_cap": 1.1}, {"kl_coef": -1}, {"lr": 0},
                     {"lr": 2}, {"weight_decay": 1}, {"max_grad_norm": -1}, {"micro_batch": 0},
                     {"lr": float("nan")}):
            with self.assertRaises(BadRequest, msg=repr(over)):
                train.TrainConfig(**dict(train.DEFAULTS, **over))
        train.TrainConfig(**dict(train.DEFAULTS, is_cap=0))
        with self.assertRaises(BadRequest):
            train.TrainConfig.from_request({"clip_eps": 0.2})


if __name__ == "__main__":
    unittest.main()
