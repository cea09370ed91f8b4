#!/usr/bin/env bash
# GPU parity check (issue 5, proof 2a), for the device machine: a linux/amd64
# t2t built here with cgo and carried along (see README "GPU check").
#   ./scripts/gpu-check/run.sh ./t2t
# Writes everything under $OUT (or ./gpu-check-out). Prepared, not yet run:
# no device machine was lent to the session that wrote it.
set -euo pipefail
T2T=${1:-./t2t}
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/gpu-check-out}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
plugin=$(python3 -c 'import jax_plugins.xla_cuda13 as p, os; print(os.path.join(os.path.dirname(p.__file__), "xla_cuda_plugin.so"))' 2>/dev/null || true)
ptxas=$(dirname "$(python3 -c 'import nvidia.cuda_nvcc, os; print(os.path.join(os.path.dirname(nvidia.cuda_nvcc.__file__), "bin", "ptxas"))' 2>/dev/null || echo /nonexistent/bin/ptxas)")
export GOMLX_NO_AUTO_INSTALL=1 GOPJRT_CUDA_CHECKS=0 XLA_FLAGS="--xla_gpu_cuda_data_dir=$(dirname "$ptxas")"
"$T2T" model init --preset tiny --out "$out/tiny" --seed 7
"$T2T" model logits --model "$out/tiny" --texts "$here/texts.txt" > "$out/logits_cpu.jsonl"
python3 "$here/compare.py" "$out/tiny" "$out/logits_cpu.jsonl" 1e-3 | tee "$out/parity_cpu.json"
if [ -n "$plugin" ] && [ -f "$plugin" ]; then
	"$T2T" model logits --model "$out/tiny" --texts "$here/texts.txt" --device "xla:$plugin" > "$out/logits_xla.jsonl" \
		&& python3 "$here/compare.py" "$out/tiny" "$out/logits_xla.jsonl" 1e-3 | tee "$out/parity_xla.json" \
		|| echo "XLA route failed: see the log above for the exact error"
else
	echo "no jax CUDA PJRT plugin found: skipped the XLA run"
fi
