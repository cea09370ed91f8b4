# Issue 25's H200 figures (the learner at GPU scale), sourced by run.sh after part torch: full
# fine-tuning of 4b-shape at B=8 × (512+512) with chunked log-probs (the torch worker's default)
# and --activation-checkpointing, its peak torch.cuda.max_memory_allocated and MFU, and LoRA
# r16's MFU. Figures go to $scratch/figures.jsonl (sched.sh's figure), summary.py puts them in
# $out/summary.json with their targets. Needs $T2T, $out, $BUDGET_S, SECONDS and run.sh's bench.
# The "before" figures of the issue (t2t a7dbe3e, one H200): 85.4 GiB and 22.6 % MFU for full
# fine-tuning, 22.1 % for LoRA r16.

# learner_bench_figures NAME GIB_FIGURE MFU_FIGURE NOTE: the figures of $out/bench_NAME.json
# (absent or failed: not measured). A GiB figure name of "-" records MFU only.
learner_bench_figures() {
	local f="$out/bench_$1.json" gib="" mfu=""
	if [ -s "$f" ]; then
		gib=$(jget "$f" 'd["memory"]["cuda_max_allocated_bytes"] / 2**30 if d["memory"].get("cuda_max_allocated_bytes") else ""')
		mfu=$(jget "$f" '100 * d["mfu"] if d.get("mfu") else ""')
	fi
	[ "$2" = - ] || figure "$2" "$gib" 70 le GiB "torch.cuda.max_memory_allocated of $4"
	figure "$3" "$mfu" 40 ge "%" "MFU against 989 TFLOPS (H200 dense BF16), FLOPs as t2t bench counts them, of $4"
}

# learner_figures: runs the benches part learner needs (part torch's LoRA run is reused when it
# ran) and records the figures. Part torch's full fine-tuning run (bench_torch_grpo_4b.json) is
# the same step without --activation-checkpointing: chunked log-probs alone.
learner_figures() {
	local tpeak=(--peak-tflops 989 --peak-label "H200 SXM dense BF16 tensor-core peak")
	local torch=(--engine torch --device cuda --autocast bf16)
	local shape=(--preset 4b-shape --batch 8 --prompt-len 512 --completion-len 512 --steps 2)
	bench learner_full_4b_ckpt 180 grpo "${shape[@]}" "${torch[@]}" --micro-batch 2 --activation-checkpointing "${tpeak[@]}"
	learner_bench_figures learner_full_4b_ckpt full_ft_4b_peak_gib full_ft_4b_mfu_pct \
		"t2t bench grpo --preset 4b-shape --engine torch --device cuda --autocast bf16 --batch 8 --prompt-len 512 --completion-len 512 --micro-batch 2 --steps 2 --activation-checkpointing (chunked log-probs: the worker's default)"
	if [ ! -s "$out/bench_torch_grpo_4b_lora16.json" ]; then
		bench torch_grpo_4b_lora16 90 grpo "${shape[@]}" "${torch[@]}" --micro-batch 4 --lora-rank 16 "${tpeak[@]}"
	fi
	learner_bench_figures torch_grpo_4b_lora16 - lora16_4b_mfu_pct \
		"t2t bench grpo --preset 4b-shape --engine torch --device cuda --autocast bf16 --batch 8 --prompt-len 512 --completion-len 512 --micro-batch 4 --lora-rank 16 --steps 2"
}

# learner_devices_figures: --devices (torch ranks, issue 25 item 3). A one-GPU `--devices cuda:0`
# step against today's `--device cuda:0` step on 0.6b-shape (target: not slower, 5 % for noise),
# and where the machine has two GPUs, two NCCL ranks (`--devices cuda:0,cuda:1`, float32) against
# one on the same tiny batch: the loss after the steps must agree to 1e-4 relative.
learner_devices_figures() {
	local torch=(--engine torch --autocast bf16)
	local shape=(--preset 0.6b-shape --batch 8 --prompt-len 512 --completion-len 512 --micro-batch 4 --steps 3)
	bench learner_device_06b 120 grpo "${shape[@]}" "${torch[@]}" --device cuda:0
	bench learner_devices_06b 120 grpo "${shape[@]}" "${torch[@]}" --devices cuda:0
	local ratio=""
	if [ -s "$out/bench_learner_device_06b.json" ] && [ -s "$out/bench_learner_devices_06b.json" ]; then
		ratio=$(python3 -c 'import json, sys; a, b = (json.load(open(p))["step_s"] for p in sys.argv[1:3]); print(b / a)' \
			"$out/bench_learner_device_06b.json" "$out/bench_learner_devices_06b.json" 2>/dev/null || true)
	fi
	figure devices_cuda0_step_ratio "$ratio" 1.05 le "x" \
		"step_s of t2t bench grpo ${shape[*]} ${torch[*]} --devices cuda:0, over the same with --device cuda:0 (one rank: not slower)"
	local ngpu
	ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
	[ "${ngpu:-0}" -ge 2 ] || return 0
	local tiny=(--preset tiny --layers 4 --hidden 256 --heads 4 --kv-heads 2 --intermediate 768 --batch 8 --prompt-len 64 --completion-len 64 --micro-batch 4 --steps 3 --engine torch)
	bench learner_devices_1gpu 90 grpo "${tiny[@]}" --devices cuda:0
	bench learner_devices_2gpu 90 grpo "${tiny[@]}" --devices cuda:0,cuda:1
	local rel=""
	if [ -s "$out/bench_learner_devices_1gpu.json" ] && [ -s "$out/bench_learner_devices_2gpu.json" ]; then
		rel=$(python3 -c 'import json, sys; a, b = (json.load(open(p))["loss"] for p in sys.argv[1:3]); print(abs(a - b) / max(abs(a), 1e-12))' \
			"$out/bench_learner_devices_1gpu.json" "$out/bench_learner_devices_2gpu.json" 2>/dev/null || true)
	fi
	figure devices_2gpu_loss_rel "$rel" 1e-4 le "" \
		"|loss(--devices cuda:0,cuda:1) - loss(--devices cuda:0)| / |loss| of t2t bench grpo ${tiny[*]} (two NCCL ranks, float32)"
}
