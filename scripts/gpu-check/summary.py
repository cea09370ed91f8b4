"""Turns figures.jsonl (sched.sh's figure lines) into summary.json: every figure with its
value, target and pass (null when not measured), in measuring order. A figure's cmp is ge
(value >= target), le (value <= target) or gt (value > target)."""
import json
import sys

src, dst = sys.argv[1], sys.argv[2]
rows = []
try:
    with open(src) as f:
        rows = [json.loads(line) for line in f if line.strip()]
except FileNotFoundError:
    pass
for r in rows:
    v, t = r["value"], r["target"]
    r["pass"] = None if v is None else {"ge": v >= t, "le": v <= t, "gt": v > t}[r["cmp"]]
summary = {"figures": rows, "passed": sum(r["pass"] is True for r in rows),
           "failed": sum(r["pass"] is False for r in rows), "not_measured": sum(r["pass"] is None for r in rows)}
with open(dst, "w") as f:
    json.dump(summary, f, indent=1)
print(json.dumps(summary, indent=1))
