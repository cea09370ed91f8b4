// Package engine is the seam between t2t's LLM code and the tensor math: one Model interface
// (load a Hugging Face Qwen3 directory, sample with a KV cache, log-probs, GRPO and SFT steps,
// LoRA, save as Hugging Face or PEFT, a memory estimate), spoken in the seam's own types
// (SampleConfig, Generation, TokenEvent, Sample and NewSeqBatch here; the architecture, LoRA
// and memory types of learner/hfmodel), with two implementations, neither of which imports
// the other:
//
//   - gomlx (qwen3.EngineModel, the default): learner/qwen3 on a GoMLX backend, pure Go, no Python.
//   - torch (learner/torch.Model): a supervised PyTorch worker process, fast on CPU with a real
//     BLAS and the path for GPUs.
//
// Both give the same logits, log-probs, losses, gradients and updated weights within 1e-4 in
// float32, and each loads the other's checkpoints (learner/torch's parity tests). The text
// policy, SFT, `t2t serve`, `t2t bench` and `t2t model logits` use only this interface;
// engine.Open is the one place that picks an engine from a Spec.
//
// Concurrency: a Model serialises its own calls; textpolicy.LM adds the read/write lock that
// keeps steps out of running generations.
package engine
