"""The worker's state and its request handlers (PROTOCOL.md, "Requests and replies").

``Worker`` holds the model, its device and autocast mode, the LoRA adapters (on the model),
the training configuration and the optimizer. ``Worker.handle`` serves one request map and
returns the reply map (None for ``cancel``): it checks ``id`` and ``op``, runs the handler and
turns any exception into an error reply of the right kind (errors.classify). Handlers build
everything new before touching the state, so a failed request changes nothing.
``Channel`` carries frames: the request loop reads blocking, generation polls between decode
steps without blocking for ``cancel`` (other requests read then are kept for the loop).
"""

import collections
import contextlib
import json
import os
import resource
import sys
import time

import torch

from . import arrays, config, dist, lora, safetensors_io as st, train
from .errors import BadCheckpoint, BadRequest, NoModel, Unsupported, WorkerError, classify, is_oom
from .generate import SampleConfig, generate
from .model import NAME_LM_HEAD, count_params, init_random, new_model, weight_specs
from .slots import SlotPool
from .wire import WireError

SAVE_DTYPES = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}
AUTOCAST = ("", "bf16")
OPT_FORMAT = "t2t-adamw-1"  # metadata "format" of an optimizer-state file
LOGITS_CHUNK = 1 << 27  # most logits (floats) one forward of the logits op produces


def protocol_exit(message):
    """Writes the protocol-error line and exits with status 3 (the stream is out of sync)."""
    sys.stderr.write("t2t-worker: protocol error: %s\n" % message)
    sys.stderr.flush()
    raise SystemExit(3)


class Channel:
    """Frames in (a FrameReader) and out (a FrameWriter), with requests read early kept aside."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.pending = collections.deque()

    def next_request(self):
        """The next request (blocking). Exits 0 at end of input and 3 on a malformed frame."""
        if self.pending:
            return self.pending.popleft()
        return self._read(True)

    def _read(self, block):
        try:
            return self.reader.read(block)
        except EOFError:
            raise SystemExit(0)
        except WireError as e:
            protocol_exit(e)

    def poll_cancel(self, target):
        """Reads whatever frames are available now and returns (rows, cancel_all) for target: the
        rows to end and whether a cancel for the whole request came. Cancels for other ids are
        dropped; other requests are kept for the request loop."""
        rows, cancel_all = [], False
        while True:
            msg = self._read(False)
            if msg is None:
                return rows, cancel_all
            if msg.get("op") != "cancel":
                self.pending.append(msg)
                continue
            if msg.get("target") != target:
                continue
            r = msg.get("rows")
            if r is None:
                cancel_all = True
            elif isinstance(r, list):
                rows += [x for x in r if isinstance(x, int) and not isinstance(x, bool)]

    def send(self, obj):
        self.writer.write(obj)


def resolve_device(name):
    """A torch.device for "cpu", "cuda" or "cuda:N", checked to exist."""
    if not isinstance(name, str) or not (name == "cpu" or name == "cuda" or name.startswith("cuda:")):
        raise BadRequest("device %r: want cpu, cuda or cuda:N" % (name,))
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError):
        raise BadRequest("device %r: want cpu, cuda or cuda:N" % (name,)) from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise Unsupported("device %s: CUDA is not available to this torch %s" % (name, torch.__version__))
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        if idx >= torch.cuda.device_count():
            raise BadRequest("device %s: only %d CUDA devices" % (name, torch.cuda.device_count()))
        dev = torch.device("cuda", idx)
    return dev


def read_rss():
    """(rss_bytes, peak_rss_bytes) of this process."""
    rss = peak = 0
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) * 1024
    except OSError:
        pass
    if not peak:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return rss, max(peak, rss)


class Worker:
    """One device's model, adapters and optimizer, and the handlers of every op."""

    def __init__(self, channel, device, threads, ranks=None):
        self.channel = channel
        self.ranks = ranks if ranks is not None else dist.Single()
        self.default_device = device
        self.threads = threads
        self.device = device
        self.autocast = ""
        self.logprob_chunk = train.DEFAULT_LOGPROB_CHUNK
        self.model = None
        self.src_dir = ""
        self.train_cfg = train.TrainConfig()
        self.trainer = None
        self.steps = 0
        self.exit_requested = False
        self.ops = {
            "load": self.op_load, "init": self.op_init, "logits": self.op_logits,
            "logprobs": self.op_logprobs, "train_config": self.op_train_config, "step": self.op_step,
            "generate": self.op_generate, "add_lora": self.op_add_lora, "load_adapter": self.op_load_adapter,
            "unload_adapter": self.op_unload_adapter,
            "save_adapter": self.op_save_adapter, "save": self.op_save,
            "save_optimizer": self.op_save_optimizer, "load_optimizer": self.op_load_optimizer, "stats": self.op_stats,
            "reset_peak": self.op_reset_peak, "sleep": self.op_sleep, "shutdown": self.op_shutdown,
            "decoder_open": self.op_decoder_open, "decoder_prefill": self.op_decoder_prefill,
            "decoder_step": self.op_decoder_step, "decoder_close": self.op_decoder_close,
        }
        self.pool = None  # slots.SlotPool of decoder_open

    # ---- Dispatch.

    def handle(self, req):
        """Serves one request; returns the reply map, or None when no reply is due (cancel)."""
        op = req.get("op")
        if op == "cancel":
            # Nothing is running between requests: ignored, and never answered. Go sends a
            # cancel without an id, and one may land here after its generate has replied (a row
            # ended by its stop token on the last step): an answer would be read as the reply to
            # Go's next request.
            return None
        rid = req.get("id")
        if isinstance(rid, bool) or not isinstance(rid, int) or rid < 1:
            return self._error(rid if isinstance(rid, int) and not isinstance(rid, bool) else 0,
                               BadRequest("request id %r: want an integer >= 1" % (rid,)))
        fn = self.ops.get(op) if isinstance(op, str) else None
        if fn is None:
            return self._error(rid, BadRequest("unknown op %r" % (op,)))
        try:
            out = fn(req) or {}
        except Exception as e:  # noqa: BLE001 - every failure becomes a typed reply
            return self._error(rid, e)
        self._after(op)
        reply = {"id": rid, "ok": True}
        reply.update(out)
        return reply

    def _after(self, op):
        """Keeps the slot pool in step with the model: a new model drops it, new weights or
        adapters rebuild its decode plan (and its CUDA graphs)."""
        if self.pool is None:
            return
        if op in ("load", "init"):
            self.pool = None
        elif op in ("step", "add_lora", "load_adapter", "unload_adapter"):
            self.pool.refresh()

    def _error(self, rid, exc):
        kind, msg = classify(exc)
        if is_oom(exc) and torch.cuda.is_available():
            torch.cuda.empty_cache()
        return {"id": rid, "ok": False, "error": {"kind": kind, "message": msg}}

    def need_model(self):
        if self.model is None:
            raise NoModel("no model: send load or init first")
        return self.model

    def compute_ctx(self):
        """The context forward passes run in: bf16 autocast, or nothing."""
        if self.autocast == "bf16":
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _placement(self, req):
        """The device, autocast and memory options of a load or init request (checked before
        anything is loaded)."""
        dev = resolve_device(req["device"]) if req.get("device") not in (None, "") else self.default_device
        ac = arrays.get_str(req, "autocast", default="", choices=AUTOCAST)
        mem = (arrays.get_bool(req, "activation_checkpointing", default=False),
               arrays.get_int(req, "logprob_chunk", default=train.DEFAULT_LOGPROB_CHUNK, lo=0))
        return dev, ac, mem

    def _install(self, model, dev, ac, mem, src_dir):
        """Makes model the worker's model (dropping the old one, its adapters and optimizer)."""
        model.set_attention(dev.type == "cuda", torch.bfloat16 if ac == "bf16" else torch.float32)
        model.activation_checkpointing, self.logprob_chunk = mem
        self.model, self.device, self.autocast, self.src_dir = model, dev, ac, src_dir
        self.trainer, self.steps = None, 0
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        return {"config": model.cfg.to_json(model.cfg.torch_dtype or "float32"), "params": count_params(model)}

    # ---- Model creation.

    def op_load(self, req):
        d = arrays.get_str(req, "dir")
        dev, ac, mem = self._placement(req)
        cfg = load_config(d)
        model = load_weights(d, cfg, dev)
        return self._install(model, dev, ac, mem, d)

    def op_init(self, req):
        js = arrays.req(req, "config")
        if not isinstance(js, dict):
            raise BadRequest("config: want a map of config.json fields")
        seed = arrays.get_int(req, "seed")
        dev, ac, mem = self._placement(req)
        try:
            cfg = config.parse_config(js)
        except config.ConfigError as e:
            raise (Unsupported if e.unsupported else BadRequest)(str(e)) from None
        with torch.no_grad():
            model = init_random(cfg, seed, dev)
        return self._install(model, dev, ac, mem, "")

    # ---- Forward passes.

    def _check_tokens(self, seq, what):
        v = self.model.cfg.vocab_size
        if seq.numel() == 0:
            raise BadRequest("%s is empty" % what)
        bad = (seq < 0) | (seq >= v)
        if bool(bad.any()):
            raise BadRequest("%s: token %d outside [0, %d)" % (what, int(seq[bad.nonzero()[0]]), v))

    def op_logits(self, req):
        m = self.need_model()
        seqs = arrays.i32_rows(arrays.req(req, "seqs"), "seqs")
        for i, s in enumerate(seqs):
            self._check_tokens(s, "seqs[%d]" % i)
        out = [None] * len(seqs)
        by_len = collections.defaultdict(list)
        for i, s in enumerate(seqs):
            by_len[s.numel()].append(i)
        v = m.cfg.vocab_size
        m.eval()
        with torch.inference_mode():
            for t, idx in sorted(by_len.items()):
                step = max(1, LOGITS_CHUNK // (t * v))
                for c in range(0, len(idx), step):
                    part = idx[c:c + step]
                    tokens = torch.stack([seqs[i] for i in part]).to(self.device)
                    valid = torch.ones_like(tokens, dtype=torch.bool)
                    with self.compute_ctx():
                        logits = m(tokens, valid)
                    logits = logits.float().cpu()
                    for j, i in enumerate(part):
                        out[i] = arrays.to_f32_bin(logits[j].reshape(-1))
        return {"logits": out}

    def op_logprobs(self, req):
        m = self.need_model()
        b = train.parse_batch(arrays.req(req, "batch"), train.BC, m.cfg.vocab_size)
        lp = train.logprobs(m, b, self.train_cfg.micro_batch, self.compute_ctx, self.logprob_chunk)
        return {"logprobs": arrays.to_f32_bin(lp.reshape(-1))}

    # ---- Training.

    def op_train_config(self, req):
        new = train.TrainConfig.from_request(req)
        if self.trainer is not None:
            if self.train_cfg.same_but_lr(new):
                self.trainer.set_lr(new.lr)
            else:
                self.trainer = None  # rebuilt (fresh optimizer state) at the next step
        self.train_cfg = new
        return {}

    def op_step(self, req):
        m = self.need_model()
        kind = arrays.get_str(req, "kind", choices=(train.GRPO, train.BC))
        if self.ranks.world_size == 1:
            b, refused = train.parse_batch(arrays.req(req, "batch"), kind, m.cfg.vocab_size), None
        else:
            # This rank's share of the rows (nil: none). A share it refuses still joins the
            # ranks' first collective, which then fails the step on every rank.
            b, refused = None, None
            try:
                if req.get("batch") is not None:
                    b = train.parse_batch(req["batch"], kind, m.cfg.vocab_size)
            except WorkerError as e:
                refused = e
        out = self._trainer().step(kind, b, refused)
        self.steps += 1
        out["step"] = self.steps
        return out

    # ---- Generation.

    def op_generate(self, req):
        m = self.need_model()
        prompts = arrays.i32_rows(arrays.req(req, "prompts"), "prompts")
        if not prompts:
            raise BadRequest("prompts: no prompts")
        for i, p in enumerate(prompts):
            self._check_tokens(p, "prompts[%d]" % i)
        stop = arrays.req(req, "stop") if "stop" in req else []
        if isinstance(stop, (bytes, bytearray)):
            stop = arrays.i32(stop, "stop").tolist()
        if not isinstance(stop, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in stop):
            raise BadRequest("stop: want a list of token ids")
        sc = SampleConfig(
            max_new_tokens=arrays.get_int(req, "max_new_tokens"),
            temperature=arrays.get_float(req, "temperature", default=0.0),
            top_k=arrays.get_int(req, "top_k", default=0),
            top_p=arrays.get_float(req, "top_p", default=0.0),
            stop=stop, seed=arrays.get_int(req, "seed", default=0),
            top_logprobs=arrays.get_int(req, "top_logprobs", default=0),
        )
        problem = sc.validate()
        if problem:
            raise BadRequest(problem)
        maxp = max(p.numel() for p in prompts)
        if maxp + sc.max_new_tokens > m.cfg.max_position_embeddings:
            raise BadRequest("prompt of %d + %d new tokens exceeds max_position_embeddings=%d"
                             % (maxp, sc.max_new_tokens, m.cfg.max_position_embeddings))
        rid = req["id"]
        on_step = None
        if arrays.get_bool(req, "stream"):
            def on_step(step, tokens, lps, top):
                ev = {"id": rid, "event": "token", "step": step, "tokens": tokens, "logprobs": lps}
                if top is not None:
                    ev["top"] = top
                self.channel.send(ev)
        res = generate(m, [p.tolist() for p in prompts], sc, self.compute_ctx,
                       cache_dtype=torch.bfloat16 if self.autocast == "bf16" else torch.float32,
                       on_step=on_step, poll=lambda: self.channel.poll_cancel(rid))
        return {
            "tokens": [arrays.to_i32_bin(t) for t in res.tokens],
            "logprobs": [arrays.to_f32_bin(lp) for lp in res.logprobs],
            "stopped": list(res.stopped),
            "cancelled": res.cancelled,
        }

    # ---- Slot decoder (Go's engine.Scheduler).

    def op_decoder_open(self, req):
        m = self.need_model()
        self.pool = None  # free the old pool first
        self.pool = SlotPool(m, arrays.get_int(req, "slots"), arrays.get_int(req, "slot_len"),
                             cache_dtype=torch.bfloat16 if self.autocast == "bf16" else torch.float32)
        return {"graphs": self.pool.use_graphs}

    def _need_pool(self):
        self.need_model()
        if self.pool is None:
            raise BadRequest("no decoder: send decoder_open first")
        return self.pool

    def op_decoder_prefill(self, req):
        pool = self._need_pool()
        slots = arrays.i32(arrays.req(req, "slots"), "slots").tolist()
        prompts = arrays.i32_rows(arrays.req(req, "prompts"), "prompts")
        for i, p in enumerate(prompts):
            self._check_tokens(p, "prompts[%d]" % i)
        with torch.inference_mode(), self.compute_ctx():
            logits = pool.prefill(slots, [p.tolist() for p in prompts])
        return {"logits": arrays.to_f32_bin(logits.reshape(-1))}

    def op_decoder_step(self, req):
        pool = self._need_pool()
        slots = arrays.i32(arrays.req(req, "slots"), "slots").tolist()
        tokens = arrays.i32(arrays.req(req, "tokens"), "tokens")
        if len(tokens) != len(slots):
            raise BadRequest("decoder_step: %d slots and %d tokens" % (len(slots), len(tokens)))
        self._check_tokens(tokens, "tokens")
        with torch.inference_mode(), self.compute_ctx():
            logits = pool.step(slots, tokens.tolist())
        return {"logits": arrays.to_f32_bin(logits.reshape(-1))}

    def op_decoder_close(self, req):
        self.pool = None
        return {}

    # ---- LoRA.

    def op_add_lora(self, req):
        m = self.need_model()
        rank = arrays.get_int(req, "rank")
        alpha = arrays.get_float(req, "alpha")
        targets = arrays.req(req, "targets")
        seed = arrays.get_int(req, "seed", default=0)
        try:
            n = lora.add_lora(m, rank, alpha, targets, seed)
        except lora.LoRAError as e:
            raise WorkerError(str(e), e.kind) from None
        self.trainer = None
        return {"trainable": n}

    def op_load_adapter(self, req):
        m = self.need_model()
        d = arrays.get_str(req, "dir")
        try:
            lora.load_adapter(m, d)
        except lora.LoRAError as e:
            raise WorkerError(str(e), e.kind) from None
        self.trainer = None
        return {}

    def op_unload_adapter(self, req):
        m = self.need_model()
        try:
            lora.detach(m)
        except lora.LoRAError as e:
            raise WorkerError(str(e), e.kind) from None
        self.trainer = None
        return {}

    def op_save_adapter(self, req):
        m = self.need_model()
        d = arrays.get_str(req, "dir")
        try:
            lora.save_adapter(m, d, self.src_dir)
        except lora.LoRAError as e:
            raise WorkerError(str(e), e.kind) from None
        return {}

    # ---- Checkpoints.

    def op_save(self, req):
        m = self.need_model()
        d = arrays.get_str(req, "dir")
        dtype = arrays.get_str(req, "dtype", default="float32", choices=tuple(SAVE_DTYPES))
        return {"files": save_model(m, d, dtype)}

    def _trainer(self):
        m = self.need_model()
        if self.trainer is None:
            self.trainer = train.Trainer(m, train.TrainConfig(**self.train_cfg.as_dict()), self.compute_ctx,
                                         self.logprob_chunk, self.ranks)
        return self.trainer

    def op_save_optimizer(self, req):
        path = arrays.get_str(req, "path")
        tensors, step = self._trainer().state_tensors()
        meta = {"format": OPT_FORMAT, "step": str(step), "steps": str(self.steps)}
        st.write_file(path, sorted(tensors.items()), "F32", meta)
        return {"step": step}

    def op_load_optimizer(self, req):
        path = arrays.get_str(req, "path")
        tr = self._trainer()
        try:
            tensors, meta, _ = st.read_file(path)
        except st.SafetensorsError as e:
            raise BadCheckpoint("optimizer state: %s" % e) from None
        if meta.get("format") != OPT_FORMAT:
            raise BadCheckpoint("optimizer state %s: format %r, want %r" % (path, meta.get("format"), OPT_FORMAT))
        try:
            step, steps = int(meta.get("step", "")), int(meta.get("steps", ""))
        except ValueError:
            raise BadCheckpoint("optimizer state %s: bad step fields %r" % (path, meta)) from None
        tr.load_state(tensors, step)
        self.steps = steps
        return {"step": step}

    # ---- Housekeeping.

    def op_stats(self, req):
        rss, peak = read_rss()
        cuda = self.device.type == "cuda"
        return {
            "rss_bytes": rss, "peak_rss_bytes": peak,
            "cuda_allocated": int(torch.cuda.memory_allocated(self.device)) if cuda else 0,
            "cuda_max_allocated": int(torch.cuda.max_memory_allocated(self.device)) if cuda else 0,
            "steps": self.steps,
            "activation_checkpointing": bool(self.model is not None and self.model.activation_checkpointing),
            "logprob_chunk": self.logprob_chunk,
        }

    def op_reset_peak(self, req):
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        try:  # resets VmHWM (Linux >= 4.0); best effort
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass
        return {}

    def op_sleep(self, req):
        time.sleep(arrays.get_float(req, "seconds", lo=0.0))
        return {}

    def op_shutdown(self, req):
        self.exit_requested = True
        return {}


# ---- Checkpoint helpers (shared with tests and the benchmark script).

def load_config(d):
    """Reads and parses d/config.json; errors are BadCheckpoint or Unsupported."""
    path = os.path.join(d, "config.json")
    try:
        with open(path, "rb") as f:
            js = json.loads(f.read(), parse_constant=_reject_constant)
    except OSError as e:
        raise BadCheckpoint("%s: %s" % (path, e.strerror or e)) from None
    except ValueError as e:
        raise BadCheckpoint("%s: %s" % (path, e)) from None
    try:
        return config.parse_config(js)
    except config.ConfigError as e:
        raise (Unsupported if e.unsupported else BadCheckpoint)("%s: %s" % (path, e)) from None


def _reject_constant(name):
    raise ValueError("invalid JSON constant %s" % name)


def load_weights(d, cfg, dev):
    """Reads d's safetensors into a new model on dev, checking every tensor first (Go's
    readWeights: missing, unexpected, mis-shaped, non-float or non-finite -> BadCheckpoint)."""
    try:
        tset = st.SafetensorsSet(d)
    except st.SafetensorsError as e:
        raise BadCheckpoint(str(e)) from None
    with tset:
        specs = weight_specs(cfg)
        want = set()
        for name, shape in specs:
            want.add(name)
            info = tset.info(name)
            if info is None:
                raise BadCheckpoint("tensor %s: missing (want shape %s)" % (name, shape))
            if info["shape"] != shape:
                raise BadCheckpoint("tensor %s: shape %s, want %s" % (name, info["shape"], shape))
            if info["dtype"] not in st.FLOAT_DTYPES:
                raise BadCheckpoint("tensor %s: dtype %s is not F32, BF16, F16 or F64" % (name, info["dtype"]))
        for name in tset.names():
            if name in want or (name == NAME_LM_HEAD and cfg.tie_word_embeddings) or name.endswith("rotary_emb.inv_freq"):
                continue
            raise BadCheckpoint("tensor %s: unexpected (shape %s)" % (name, tset.info(name)["shape"]))
        model = new_model(cfg, dev)
        with torch.no_grad():
            for name, p in model.hf_parameters():
                try:
                    t = tset.read_float(name)
                except st.SafetensorsError as e:
                    raise BadCheckpoint(str(e)) from None
                if not bool(torch.isfinite(t).all()):
                    raise BadCheckpoint("tensor %s: non-finite values" % name)
                p.copy_(t)
                del t
    return model


def save_model(m, d, dtype="float32"):
    """Writes config.json and model.safetensors (LoRA merged in) into d; returns their paths."""
    os.makedirs(d, exist_ok=True)
    cfg_path, w_path = os.path.join(d, "config.json"), os.path.join(d, "model.safetensors")
    text = (json.dumps(m.cfg.to_json(dtype), indent=2, sort_keys=True) + "\n").encode("utf-8")
    st.atomic_write(cfg_path, lambda f: f.write(text))
    try:  # a stale index would make readers look for shards instead of model.safetensors
        os.remove(os.path.join(d, st.INDEX_FILE))
    except FileNotFoundError:
        pass
    tensors = []
    for name, p in m.hf_parameters():
        def produce(name=name, p=p):
            return lora.merged(m, name, p.detach()).to("cpu")
        tensors.append((name, st.Lazy(p.shape, produce)))
    st.write_file(w_path, tensors, SAVE_DTYPES[dtype], {"format": "pt"})
    return [cfg_path, w_path]
