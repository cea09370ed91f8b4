"""BLAS sanity: the OpenBLAS core type, the kernel OpenBLAS picked, and a matmul accuracy check.

OpenBLAS picks its kernels from the CPU at load time and some builds pick a broken one on CPUs
they do not know (wrong float32 results). PROTOCOL.md ("Handshake") asks the worker to set
``OPENBLAS_CORETYPE`` from ``/proc/cpuinfo`` before torch (and so OpenBLAS) is imported, to
report the kernel OpenBLAS uses, and to compare a 256x256x256 float32 matmul with float64.

``choose_coretype`` and ``apply_coretype`` must run before ``import torch`` and do not import
it; ``corename``, ``set_threads`` and ``matmul_check`` look at or import torch's libraries
only after torch is loaded.
"""

import ctypes
import os

CHECK_N = 256
CHECK_MAX_REL_ERR = 1e-6
CORETYPE_ENV = "OPENBLAS_CORETYPE"

# Symbol names of openblas_get_corename in OpenBLAS builds: plain, 64-bit-int suffixed, and
# the scipy-openblas wheels' prefixed forms.
_CORENAME_SYMBOLS = (
    "openblas_get_corename",
    "openblas_get_corename64_",
    "scipy_openblas_get_corename",
    "scipy_openblas_get_corename64_",
)
_SET_THREADS_SYMBOLS = tuple(s.replace("get_corename", "set_num_threads") for s in _CORENAME_SYMBOLS)
_GET_THREADS_SYMBOLS = tuple(s.replace("get_corename", "get_num_threads") for s in _CORENAME_SYMBOLS)


def cpu_flags(cpuinfo_text):
    """Returns the set of CPU feature flags of a /proc/cpuinfo text (x86 "flags", ARM
    "Features"), taken from the first processor that lists them."""
    for line in cpuinfo_text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def choose_coretype(flags, current):
    """Decides OPENBLAS_CORETYPE. current is the environment's value (None or "" when unset).
    Returns (value, set_by_worker): the value in force afterwards ("" for none) and whether the
    worker chose it: SkylakeX with avx512f, else Haswell with avx2, else nothing."""
    if current:
        return current, False
    if "avx512f" in flags:
        return "SkylakeX", True
    if "avx2" in flags:
        return "Haswell", True
    return "", False


def apply_coretype(environ=None, cpuinfo_path="/proc/cpuinfo"):
    """Sets OPENBLAS_CORETYPE in environ (default os.environ) when it is unset, from the CPU
    flags in cpuinfo_path. Call before importing torch. Returns (value, set_by_worker)."""
    if environ is None:
        environ = os.environ
    try:
        with open(cpuinfo_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    value, set_by_worker = choose_coretype(cpu_flags(text), environ.get(CORETYPE_ENV))
    if set_by_worker:
        environ[CORETYPE_ENV] = value
    return value, set_by_worker


def mapped_libraries(maps_path="/proc/self/maps"):
    """Returns the paths of the shared objects mapped into this process, in map order."""
    seen, out = set(), []
    try:
        with open(maps_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                if ".so" in os.path.basename(path) and path not in seen:
                    seen.add(path)
                    out.append(path)
    except OSError:
        pass
    return out


def _openblas_function(symbols, maps_path):
    """The first function named in symbols exported by a mapped library (libraries with "blas"
    in their name first), as a ctypes function, or None when no loaded library exports one."""
    libs = mapped_libraries(maps_path)
    libs.sort(key=lambda p: 0 if "blas" in os.path.basename(p).lower() else 1)
    mode = getattr(os, "RTLD_NOLOAD", 0)  # only look at what is already loaded
    for path in libs:
        try:
            lib = ctypes.CDLL(path, mode=mode)
        except OSError:
            continue
        for sym in symbols:
            fn = getattr(lib, sym, None)
            if fn is not None:
                return fn
    return None


def corename(maps_path="/proc/self/maps"):
    """Returns the kernel name OpenBLAS reports (openblas_get_corename) for the first mapped
    library exporting it, or "" when no OpenBLAS is loaded (e.g. torch uses MKL or the
    reference BLAS). Libraries with "blas" in their name are tried first."""
    fn = _openblas_function(_CORENAME_SYMBOLS, maps_path)
    if fn is None:
        return ""
    fn.restype = ctypes.c_char_p
    fn.argtypes = []
    try:
        name = fn()
    except Exception:  # noqa: BLE001 - a foreign function: report nothing rather than fail
        return ""
    return name.decode("ascii", "replace").strip() if name else ""


def set_threads(n, maps_path="/proc/self/maps"):
    """Sets the threads of the loaded OpenBLAS to n (openblas_set_num_threads) and returns the
    count it reports afterwards, or 0 when no OpenBLAS is loaded. torch.set_num_threads does not
    reach Debian's OpenBLAS, whose own pool starts one thread per core: with --threads 1 every
    small decode matmul was still split over two threads (3-4x slower on a busy machine)."""
    set_fn = _openblas_function(_SET_THREADS_SYMBOLS, maps_path)
    if set_fn is None:
        return 0
    set_fn.restype = None
    set_fn.argtypes = [ctypes.c_int]
    set_fn(int(n))
    get_fn = _openblas_function(_GET_THREADS_SYMBOLS, maps_path)
    if get_fn is None:
        return int(n)
    get_fn.restype = ctypes.c_int
    get_fn.argtypes = []
    return int(get_fn())


def matmul_check(n=CHECK_N, seed=1234):
    """Returns the relative Frobenius error of an n×n×n float32 matmul against float64 (CPU)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    a = torch.randn(n, n, generator=g, dtype=torch.float32)
    b = torch.randn(n, n, generator=g, dtype=torch.float32)
    c32 = torch.matmul(a, b).double()
    c64 = torch.matmul(a.double(), b.double())
    return float(torch.linalg.norm(c32 - c64) / torch.linalg.norm(c64))
