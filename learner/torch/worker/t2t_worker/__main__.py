"""Process entry point: ``python3 -u -m t2t_worker [--device cpu|cuda|cuda:N] [--threads N] [--dist-timeout S]``.

Order matters here. OPENBLAS_CORETYPE is decided from /proc/cpuinfo before torch is imported
(OpenBLAS reads it when it loads). The real stdout descriptor is kept for frames and fd 1 and
``sys.stdout`` are pointed at stderr, so nothing a library prints can corrupt a frame. Then
torch is imported, its thread count set (torch's and OpenBLAS's own pool), the BLAS checked
(status 4 when a float32 matmul is off by more than 1e-6 relative to float64), the hello frame
sent, and requests served one at a time until ``shutdown`` or the end of stdin (status 0). A
malformed frame exits with status 3.
SIGINT is ignored: the parent decides when the worker ends (it closes stdin).

With WORLD_SIZE > 1 in the environment the worker joins its ranks' process group (dist.py)
after the BLAS check and before the hello, so the hello says the group is formed.

Exit statuses: 0 shutdown or end of input; 2 bad command line or unusable device; 3 protocol
error; 4 BLAS check failed; 5 the ranks' process group could not be formed.
"""

import argparse
import os
import platform
import signal
import sys

from . import PROTOCOL_VERSION, WORKER_NAME, blas


def parse_args(argv):
    p = argparse.ArgumentParser(prog="t2t_worker", description="t2t PyTorch compute worker (PROTOCOL.md)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: every core)")
    p.add_argument("--dist-timeout", type=float, default=60.0,
                   help="seconds a collective may wait for the other ranks (with WORLD_SIZE > 1; default 60)")
    args = p.parse_args(argv)
    if args.threads < 0:
        p.error("--threads must be >= 0")
    if not args.dist_timeout > 0:
        p.error("--dist-timeout must be > 0")
    return args


def log(msg):
    sys.stderr.write("t2t-worker: %s\n" % msg)
    sys.stderr.flush()


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    coretype, set_by_worker = blas.apply_coretype()

    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    import torch

    from . import dist
    from .ops import Channel, Worker, resolve_device
    from .errors import WorkerError
    from .wire import FrameReader, FrameWriter

    threads = args.threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    blas_threads = blas.set_threads(threads)
    kernel = blas.corename()
    rel_err = blas.matmul_check()
    if not rel_err <= blas.CHECK_MAX_REL_ERR:
        log("BLAS check failed: float32 %dx%dx%d matmul relative error %.3g > %g (OpenBLAS kernel %r, "
            "OPENBLAS_CORETYPE=%r); set OPENBLAS_CORETYPE to your CPU's core type"
            % (blas.CHECK_N, blas.CHECK_N, blas.CHECK_N, rel_err, blas.CHECK_MAX_REL_ERR, kernel, coretype))
        return 4
    try:
        device = resolve_device(args.device)
    except WorkerError as e:
        log("--device: %s" % e)
        return 2
    try:
        ranks = dist.from_env(device, args.dist_timeout)
    except dist.DistError as e:
        log("ranks: %s" % e)
        return 5
    if ranks.world_size > 1:
        log("rank %d of %d on %s: %s, parameters replicated, gradients summed over the ranks "
            "(FSDP2 fully_shard %s)" % (ranks.rank, ranks.world_size, device, ranks.backend,
                                         "available, not used" if dist.fsdp2_available()
                                         else "not in torch %s" % torch.__version__))

    channel = Channel(FrameReader(0), FrameWriter(out_fd))
    worker = Worker(channel, device, torch.get_num_threads(), ranks)
    try:
        channel.send({
            "type": "hello", "protocol": PROTOCOL_VERSION, "worker": WORKER_NAME, "pid": os.getpid(),
            "python": platform.python_version(), "torch": torch.__version__, "device": str(device),
            "threads": torch.get_num_threads(), "rank": ranks.rank, "world_size": ranks.world_size,
            "backend": ranks.backend, "sharding": ranks.sharding,
            "blas": {"kernel": kernel, "coretype_env": coretype, "set_by_worker": set_by_worker,
                     "check_rel_err": rel_err, "threads": blas_threads},
        })
        while True:
            req = channel.next_request()
            reply = worker.handle(req)
            if reply is not None:
                channel.send(reply)
            if worker.exit_requested:
                return 0
    except BrokenPipeError:
        return 0  # the parent is gone


if __name__ == "__main__":
    sys.exit(main())
