"""Typed request errors: each carries the reply ``kind`` PROTOCOL.md defines.

Code anywhere in the worker raises one of these with a one-line message; the request loop
(``ops.Worker.handle``) turns it into ``{"ok": false, "error": {"kind", "message"}}``. Any
other exception raised while serving a request becomes ``compute`` (or ``oom`` when it is an
out-of-memory error, see ``classify``).
"""

BAD_REQUEST = "bad_request"
BAD_CHECKPOINT = "bad_checkpoint"
UNSUPPORTED = "unsupported"
NO_MODEL = "no_model"
OOM = "oom"
COMPUTE = "compute"

KINDS = (BAD_REQUEST, BAD_CHECKPOINT, UNSUPPORTED, NO_MODEL, OOM, COMPUTE)


class WorkerError(Exception):
    """A request failure with a reply kind and a one-line message."""

    kind = COMPUTE

    def __init__(self, message, kind=None):
        super().__init__(one_line(message))
        if kind is not None:
            if kind not in KINDS:
                raise ValueError("unknown error kind %r" % (kind,))
            self.kind = kind

    @property
    def message(self):
        return str(self)


class BadRequest(WorkerError):
    kind = BAD_REQUEST


class BadCheckpoint(WorkerError):
    kind = BAD_CHECKPOINT


class Unsupported(WorkerError):
    kind = UNSUPPORTED


class NoModel(WorkerError):
    kind = NO_MODEL


MAX_MESSAGE = 2000


def one_line(text):
    """Collapses whitespace so a message fits on one line (at most MAX_MESSAGE characters)."""
    s = " ".join(str(text).split())
    if len(s) > MAX_MESSAGE:
        s = s[: MAX_MESSAGE - 3] + "..."
    return s


def is_oom(exc):
    """Reports whether exc is an out-of-memory error (CUDA or host)."""
    if isinstance(exc, MemoryError):
        return True
    name = type(exc).__name__
    if name == "OutOfMemoryError":  # torch.cuda.OutOfMemoryError (torch >= 1.13 on CUDA builds)
        return True
    if isinstance(exc, RuntimeError):
        text = str(exc).lower()
        return "out of memory" in text or "can't allocate memory" in text or "defaultcpuallocator" in text
    return False


def classify(exc):
    """Returns (kind, message) for any exception raised while serving a request."""
    if isinstance(exc, WorkerError):
        return exc.kind, exc.message
    if is_oom(exc):
        return OOM, one_line("%s: %s" % (type(exc).__name__, exc))
    return COMPUTE, one_line("%s: %s" % (type(exc).__name__, exc))
