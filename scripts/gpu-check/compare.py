"""Parity of t2t's Qwen3 against Hugging Face transformers and tokenizers.

Reads the JSON lines of `t2t model logits --model DIR --texts FILE` (ids and
logits per position), runs the same ids through transformers'
Qwen3ForCausalLM loaded from DIR in float32, encodes the same texts with the
`tokenizers` library from DIR/tokenizer.json, and prints one JSON summary:
the largest absolute logit difference and whether every text encodes to the
same ids. Exit status 1 when a check fails. Written for the device machine
(torch, transformers, tokenizers installed); not run in CI.
"""
import json
import sys

import torch
from tokenizers import Tokenizer
from transformers import Qwen3ForCausalLM


def main(model_dir, go_jsonl, tol):
    model = Qwen3ForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    model.eval()
    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    worst, ids_equal, n = 0.0, True, 0
    with open(go_jsonl) as f:
        for line in f:
            r = json.loads(line)
            ids = r["ids"]
            hf_ids = tok.encode(r["text"], add_special_tokens=False).ids
            if hf_ids != ids:
                ids_equal = False
                print(json.dumps({"text": r["text"], "ours": ids, "hf": hf_ids}), file=sys.stderr)
            with torch.no_grad():
                out = model(torch.tensor([ids])).logits[0]
            ours = torch.tensor(r["logits"])
            k = ours.shape[1]
            diff = (out[:, :k] - ours).abs().max().item()
            worst = max(worst, diff)
            n += 1
    ok = ids_equal and worst <= tol
    print(json.dumps({"texts": n, "max_abs_logit_diff": worst, "tolerance": tol, "tokenizer_ids_equal": ids_equal, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 1e-3))
