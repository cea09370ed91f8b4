"""t2t's PyTorch compute engine: a worker process serving learner/torch over stdin/stdout.

Run as ``python3 -u -m t2t_worker [--device cpu|cuda|cuda:N] [--threads N]`` with PYTHONPATH
pointing at the folder holding this package; PROTOCOL.md beside it is the contract. This file
must not import torch: ``__main__`` sets OPENBLAS_CORETYPE before torch is first imported.

Modules: wire (msgpack codec and frames), blas (OpenBLAS core type and matmul check), config
(config.json), safetensors_io (checkpoint files), model (Qwen3), lora (adapters), train
(GRPO/BC steps), generate (sampling with a KV cache), arrays (request fields <-> tensors),
errors (reply kinds), dist (ranks under torch.distributed), ops (the worker's state and request handlers), __main__ (process setup
and the request loop).
"""

PROTOCOL_VERSION = 3
WORKER_NAME = "t2t-torch-worker"
