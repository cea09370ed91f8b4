# Issue 24's H200 figures (continuous batching, CUDA-graph decode), sourced by run.sh. Each
# figure is appended to $scratch/figures.jsonl as {"figure", "value", "target", "cmp", "unit",
# "note"}; summary.py turns that file into $out/summary.json with pass/fail, in the order the
# figures were measured (most important first). Needs $T2T, $out, $BUDGET_S and SECONDS.
# Files in $out: summary.json and at most four sched_*.json (bench and train stdout); stderr,
# the checkpoint and figures.jsonl stay in $scratch (stderr tails go to the log on failure).
scratch=${SCHED_SCRATCH:-$(mktemp -d)}

# figure NAME VALUE TARGET CMP UNIT NOTE: CMP is ge or le; VALUE "" means not measured.
figure() {
	python3 - "$scratch/figures.jsonl" "$@" <<'PY'
import json, sys
path, name, value, target, cmp, unit, note = sys.argv[1:8]
row = {"figure": name, "value": float(value) if value else None, "target": float(target),
       "cmp": cmp, "unit": unit, "note": note}
with open(path, "a") as f:
    f.write(json.dumps(row) + "\n")
PY
}

# jget FILE EXPR: a value of a bench JSON (python expression over d), or "".
jget() {
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null || true
}

# sched_run NAME LIMIT CMD...: runs CMD under timeout (LIMIT, cut to the budget left) with
# stdout to $out/sched_NAME.json and stderr to $scratch; returns 1 when skipped or failed.
sched_run() {
	local name=$1 limit=$2 left=$((BUDGET_S - SECONDS))
	shift 2
	if [ "$left" -lt 30 ]; then
		echo "sched $name: skipped, ${left}s left of the ${BUDGET_S}s budget"
		return 1
	fi
	[ "$limit" -gt "$left" ] && limit=$left
	echo "-- sched $name (timeout ${limit}s): $*"
	local t0=$SECONDS rc=0
	timeout "$limit" "$@" > "$out/sched_$name.json" 2> "$scratch/sched_$name.err" || rc=$?
	echo "sched $name: exit $rc after $((SECONDS - t0))s"
	[ "$rc" = 0 ] || { tail -5 "$scratch/sched_$name.err"; return 1; }
}

# sched_decode: 4b-shape decode through the scheduler (CUDA graphs), B=32 and B=256.
sched_decode() {
	local torch=(--engine torch --device cuda --autocast bf16) v32="" v256=""
	if sched_run decode_b32 120 "$T2T" bench decode --preset 4b-shape "${torch[@]}" --batch 32 --concurrency 1 \
		--prompt-len 512 --new-tokens 256 --json; then
		v32=$(jget "$out/sched_decode_b32.json" 'd["scheduler"]["total_tokens_per_s"]')
	fi
	figure decode_4b_b32_tok_s "$v32" 8000 ge tokens/s "t2t bench decode --preset 4b-shape --engine torch --device cuda --autocast bf16 --batch 32 --concurrency 1 --prompt-len 512 --new-tokens 256 (prefill included)"
	if sched_run decode_b256 150 "$T2T" bench decode --preset 4b-shape "${torch[@]}" --batch 32 --concurrency 8 \
		--prompt-len 512 --new-tokens 256 --json; then
		v256=$(jget "$out/sched_decode_b256.json" 'd["scheduler"]["total_tokens_per_s"]')
	fi
	figure decode_4b_b256_tok_s "$v256" 30000 ge tokens/s "8 requests of 32 rows at once: --batch 32 --concurrency 8 (prefill included)"
}

# sched_stage: the issue's one-stage run on a 0.6b-shape checkpoint, its wall time, and the
# sampling tokens/s of its "sampling:" progress lines against a bench at the same batch.
sched_stage() {
	local wall="" ratio="" t0
	if ! "$T2T" model init --preset 0.6b-shape --out "$scratch/m06" > /dev/null 2>&1; then
		echo "sched stage: model init failed"
		figure one_stage_0.6b_s "" 40 le s "model init failed"
		return 0
	fi
	t0=$SECONDS
	if sched_run stage 150 "$T2T" train --policy qwen3 --model "$scratch/m06" --engine torch --device cuda --autocast bf16 \
		--prompt full --max-new-tokens 256 --stages 1 --instances 64 --instances-per-unit 16 --group 8 --learner-batch 16 \
		--rollouts 2 --val-per-size 1 --eval-per-size 1 --strategy fixed --gen-slots 128; then
		wall=$((SECONDS - t0))
	fi
	figure one_stage_0.6b_s "$wall" 40 le s "t2t train --policy qwen3 --engine torch --device cuda --autocast bf16 --prompt full --max-new-tokens 256 --stages 1 --instances 64 --instances-per-unit 16 --group 8 --learner-batch 16 --rollouts 2 --val-per-size 1 --eval-per-size 1 --strategy fixed --gen-slots 128 (wall, model load included; the issue's command plus --gen-slots)"
	local inrun
	inrun=$(grep -ho 'sampling:.* \([0-9.]*\) tokens/s' "$scratch/sched_stage.err" "$out/sched_stage.json" 2>/dev/null | tail -1 | grep -o '[0-9.]* tokens/s' | cut -d' ' -f1)
	if [ -n "$inrun" ] && sched_run bench_06 90 "$T2T" bench decode --model "$scratch/m06" --engine torch --device cuda --autocast bf16 \
		--batch 16 --concurrency 2 --prompt-len 512 --new-tokens 256 --json; then
		local b
		b=$(jget "$out/sched_bench_06.json" 'd["scheduler"]["total_tokens_per_s"]')
		[ -n "$b" ] && ratio=$(python3 -c "print($inrun / $b)")
	fi
	figure inrun_over_bench "$ratio" 0.7 ge ratio "sampling tokens/s of the run's last 'sampling:' line ÷ bench decode --batch 16 --concurrency 2 (empty: the run printed no sampling line)"
}
