// Package learner trains t2t's policies: GRPO (group advantages, a clipped loss with a
// truncated importance weight and an optional k3 KL penalty), behaviour cloning, AdamW with
// global-norm clipping and micro-batched gradient accumulation, and atomic, verified
// checkpoints in safetensors. It knows nothing of actors or Redis.
//
// # Compute
//
// Models run on GoMLX (github.com/gomlx/gomlx, pinned at v0.26.0). NewBackend("cpu") returns the
// pure-Go backend, NewBackend("xla:/abs/plugin.so") the XLA backend (cgo builds only; otherwise
// ErrNoXLA). NewBackend also calls RegisterFastMatMulGradient, which replaces GoMLX's DotGeneral
// and Dot gradients with one DotGeneral + transpose per input (much faster, and the only option
// for large models); it reads unexported GoMLX fields, so a test compares it with the stock
// gradient.
//
// # Training
//
// Trainer is model-agnostic: a model is a LogitsFunc from inputs [B, T, ...] to logits
// [B, T, V] over variables in a context.Context. GRPOLoss and ChosenLogProbs are the one loss
// implementation both policies share: gridnet here, and a causal LM (qwen3) that can build a
// Trainer over its own LogitsFunc. Callers compute advantages with GroupAdvantages (or
// AgentGroupAdvantages) and check ZeroSignal for groups with no signal.
//
// GridNet is the step-wise CPU policy: an MLP shared by all agents, from one agent's
// observation vector to the 5 moves WAIT/UP/DOWN/LEFT/RIGHT (ids 0..4), with a legal-move
// mask. Act samples a batch of decisions in Go from the logits (executables are cached per
// power-of-two batch size); Update runs a GRPO step where every decision is one position (T=1);
// BCUpdate clones moves of optimal plans.
//
// # Checkpoints
//
// A checkpoint directory holds manifest.json (format, model kind and config, step, policy
// version, config version, data position, RNG state, sha256 of each file),
// model.safetensors (weights) and optimizer.safetensors (Adam moments and step counters).
// WriteCheckpoint writes into a temporary directory and renames it into place; Load verifies
// checksums, architecture and shapes before touching the model and reports
// ErrCorruptCheckpoint or ErrCheckpointMismatch. Resuming from a checkpoint is bit-exact.
// The safetensors reader also reads Hugging Face sharded directories
// (model.safetensors.index.json).
//
// # Concurrency
//
// GridNet's methods serialise on a mutex. Trainer, SafetensorsSet writers and the checkpoint
// functions are not safe for concurrent use on the same value; SafetensorsFile reads are.
// RegisterFastMatMulGradient writes GoMLX's global gradient registry once (sync.Once): call it
// (or NewBackend) before building graphs on other goroutines.
//
// # Errors
//
// Sentinels (match with errors.Is): ErrBadDevice, ErrNoXLA, ErrInvalidConfig (as *ConfigError
// naming the field), ErrBadBatch, ErrSafetensors, ErrCorruptCheckpoint, ErrCheckpointMismatch,
// ErrCompute (a GoMLX panic turned into an error).
package learner
