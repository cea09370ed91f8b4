"""Ranks of a multi-process run: one worker per device under torch.distributed (PROTOCOL.md,
"Ranks").

Go starts WORLD_SIZE workers with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in their
environment; ``from_env`` joins them into one process group (gloo on the CPU, NCCL on CUDA) with
a bounded timeout, so a collective whose peer died fails instead of hanging forever (Go kills
the group first; the timeout is the backstop). Without WORLD_SIZE (or with 1) the worker is
alone: ``Single``, whose collectives do nothing.

Parameters are replicated: every rank holds the whole model and optimizer, a ``step`` sums the
ranks' gradients (each rank's loss is already divided by the whole batch's trained positions,
so the sum is the one-rank gradient) and every rank applies the same update. FSDP2's
``fully_shard`` would shard them, but the inference ops (generate, logits, the decoder) run on
rank 0 alone and need the whole weights there; it is not used yet (``fsdp2_available`` says
whether the installed torch has it, for the hello's log line).
"""

import datetime
import os

DEFAULT_TIMEOUT_S = 60.0
# Gradients are summed in buckets of at most this many float32 values (128 MiB): one collective
# per bucket, and no copy of every gradient at once.
BUCKET = 1 << 25


class Single:
    """A worker alone: collectives are no-ops."""

    rank, world_size, backend, sharding = 0, 1, "", "none"

    def sum_(self, t):
        return t


class Ranks:
    """This worker's rank in a torch.distributed process group."""

    sharding = "replicated"

    def __init__(self, rank, world_size, backend):
        self.rank, self.world_size, self.backend = rank, world_size, backend

    def sum_(self, t):
        """Sums t over the ranks in place (every rank gets the same values) and returns it."""
        import torch.distributed as dist
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t


class DistError(Exception):
    """The process group could not be formed (bad environment, a peer that never came)."""


def _env_int(env, name, default):
    v = env.get(name, "")
    if v == "":
        return default
    try:
        return int(v)
    except ValueError:
        raise DistError("%s=%r: want an integer" % (name, v)) from None


def from_env(device, timeout_s=DEFAULT_TIMEOUT_S, env=None):
    """Single, or this worker's Ranks after joining the process group of RANK/WORLD_SIZE."""
    env = os.environ if env is None else env
    world = _env_int(env, "WORLD_SIZE", 1)
    rank = _env_int(env, "RANK", 0)
    if world <= 1:
        return Single()
    if not 0 <= rank < world:
        raise DistError("RANK=%d outside [0, WORLD_SIZE=%d)" % (rank, world))
    for k in ("MASTER_ADDR", "MASTER_PORT"):
        if not env.get(k):
            raise DistError("%s is not set (WORLD_SIZE=%d)" % (k, world))
    import torch
    import torch.distributed as dist
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
    try:
        dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout_s))
    except Exception as e:  # noqa: BLE001 - any failure to rendezvous ends the worker
        raise DistError("init_process_group(%s, rank %d of %d): %s" % (backend, rank, world, e)) from None
    return Ranks(rank, world, backend)


def fsdp2_available():
    """Whether the installed torch has FSDP2's fully_shard (torch >= 2.4). Debian's torch 1.13
    fails even to import torch.distributed.fsdp under Python 3.11."""
    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401
        return True
    except Exception:  # noqa: BLE001
        pass
    try:
        from torch.distributed._composable.fsdp import fully_shard  # noqa: F401,F811
        return True
    except Exception:  # noqa: BLE001
        return False


def sum_grads_(ranks, params):
    """Sums each parameter's .grad over the ranks in place, in buckets of at most BUCKET values
    (a parameter without a gradient counts as zeros)."""
    import torch
    bucket, size = [], 0
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        bucket.append(p)
        size += p.numel()
        if size >= BUCKET:
            _sum_bucket(ranks, bucket)
            bucket, size = [], 0
    if bucket:
        _sum_bucket(ranks, bucket)


def _sum_bucket(ranks, params):
    import torch
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    ranks.sum_(flat)
    off = 0
    for p in params:
        n = p.numel()
        p.grad.copy_(flat[off:off + n].view_as(p.grad))
        off += n
