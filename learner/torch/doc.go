// Package torch is the torch compute engine: a Qwen3 model held by a Python worker process
// that t2t starts and supervises (worker/ beside this file; the protocol is
// worker/PROTOCOL.md).
//
// The worker speaks a versioned, length-prefixed msgpack protocol over its stdin and stdout;
// its stderr lines go to the caller's log. It checks its BLAS at start (setting
// OPENBLAS_CORETYPE where OpenBLAS misdetects the CPU, and comparing one matmul with float64),
// uses every core, and dies with its parent (Pdeathsig, EOF on stdin). Its Python code is
// embedded in the t2t binary and extracted once per content into the user cache directory,
// so a copied binary carries it. The interpreter is --python / $T2T_PYTHON or the first of
// python3, /usr/bin/python3, python that imports torch (FindPython).
//
// Several devices (engine.Spec's Devices) make a Group: one worker per device, the ranks of one
// torch.distributed process group (gloo on the CPU, NCCL on GPUs) with replicated parameters,
// behind one engine.Model (group.go says which ranks each call runs on). Open and OpenRandom
// choose between a Model and a Group.
//
// Errors: ErrNoTorch (no interpreter imports torch), ErrVersion (another protocol version),
// ErrProtocol (a malformed frame: the worker is stopped), *DiedError wrapping ErrWorkerDied (the
// worker crashed or was killed; the request it was running did not happen, and every later
// call fails the same way), *RemoteError (the worker refused one request and changed nothing;
// it wraps the matching learner sentinel), *RankError (a Group's rank exited; it wraps that
// rank's *DiedError, and the group's other ranks are killed).
//
// Model and Group methods are safe for concurrent use: requests to one worker, and calls on a
// group, are serialised.
package torch
