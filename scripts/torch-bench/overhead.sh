#!/usr/bin/env bash
# The torch engine's Go↔worker overhead: the same GRPO step (and the same batched decode) timed
# through `t2t bench --engine torch` and in a plain PyTorch loop (plain_grpo.py, which imports the
# worker's own model and train code), alternately, ROUNDS times each; and the gomlx engine once
# for the speed-up. Prints one JSON line per measurement and a summary with the ratios.
#   scripts/torch-bench/overhead.sh [path/to/t2t]      (default: go run ./cmd/t2t)
# Environment: THREADS (torch threads for both, default 1: on a shared machine one thread per
# process is the fair comparison), ROUNDS (default 3), GOMLX=0 skips the gomlx run, PYTHON.
set -euo pipefail
cd "$(dirname "$0")/../.."
T2T=${1:-}
if [ -z "$T2T" ]; then
	go build -o /tmp/t2t-overhead ./cmd/t2t
	T2T=/tmp/t2t-overhead
fi
PY=${PYTHON:-/usr/bin/python3}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
shape=(--layers 4 --hidden 256 --intermediate 768 --vocab 512)
plain_shape=(--layers 4 --hidden 256 --intermediate 768 --heads 4 --kv-heads 2 --head-dim 64 --vocab 512)
grpo=(--batch 8 --prompt-len 128 --completion-len 32)
dec=(--batch 8 --prompt-len 128 --new-tokens 64)
out=$(mktemp -d)
for r in $(seq "$ROUNDS"); do
	"$T2T" bench grpo --engine torch --threads "$THREADS" --preset tiny "${shape[@]}" "${grpo[@]}" --micro-batch 8 --steps 5 --json 2>/dev/null | tee -a "$out/t2t_grpo.jsonl"
	"$PY" scripts/torch-bench/plain_grpo.py "${plain_shape[@]}" "${grpo[@]}" --steps 5 --threads "$THREADS" | tee -a "$out/plain_grpo.jsonl"
	"$T2T" bench decode --engine torch --threads "$THREADS" --preset tiny "${shape[@]}" "${dec[@]}" --json 2>/dev/null | tee -a "$out/t2t_decode.jsonl"
	"$PY" scripts/torch-bench/plain_grpo.py --decode "${plain_shape[@]}" "${dec[@]}" --steps 1 --threads "$THREADS" | tee -a "$out/plain_decode.jsonl"
done
if [ "${GOMLX:-1}" = 1 ]; then
	"$T2T" bench grpo --engine gomlx --preset tiny "${shape[@]}" "${grpo[@]}" --micro-batch 8 --steps 2 --json 2>/dev/null | tee "$out/gomlx_grpo.jsonl"
	"$T2T" bench decode --engine gomlx --preset tiny "${shape[@]}" "${dec[@]}" --json 2>/dev/null | tee "$out/gomlx_decode.jsonl"
fi
"$PY" - "$out" <<'PY'
import json, os, statistics, sys
d = sys.argv[1]
def col(name, key):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return []
    return [json.loads(l)[key] for l in open(p) if l.startswith("{")]
t2t_step = statistics.median(col("t2t_grpo.jsonl", "step_min_s")) * 1000
plain_step = statistics.median(col("plain_grpo.jsonl", "step_ms_median"))
t2t_dec = statistics.median(col("t2t_decode.jsonl", "decode_tokens_per_s"))
plain_dec = statistics.median([x for x in col("plain_decode.jsonl", "decode_tokens_per_s")])
s = {"grpo_step_ms": {"t2t_torch": round(t2t_step, 1), "plain_pytorch": round(plain_step, 1), "ratio": round(t2t_step / plain_step, 3)},
     "decode_tokens_per_s": {"t2t_torch": round(t2t_dec, 1), "plain_pytorch": round(plain_dec, 1), "ratio": round(plain_dec / t2t_dec, 3)}}
g = col("gomlx_grpo.jsonl", "step_min_s")
if g:
    s["grpo_step_ms"]["gomlx"] = round(g[0] * 1000, 1)
    s["grpo_step_ms"]["torch_speedup_over_gomlx"] = round(g[0] * 1000 / t2t_step, 1)
gd = col("gomlx_decode.jsonl", "decode_tokens_per_s")
if gd:
    s["decode_tokens_per_s"]["gomlx"] = round(gd[0], 1)
print(json.dumps(s))
PY
