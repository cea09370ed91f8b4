// Package learner holds what every t2t policy and engine shares, with no compute library behind
// it: the GRPO configuration (GRPOConfig, with its padding buckets), group advantages
// (GroupAdvantages, AgentGroupAdvantages, ZeroSignal), the data of one optimizer step (SeqBatch,
// ModelInput) and its report (UpdateStats), a played Episode, the Policy interface, and atomic,
// verified checkpoint directories in safetensors (WriteCheckpoint, ReadCheckpoint).
//
// The weight lives in sub-packages: learner/gomlxtrain is the GoMLX trainer (backends, the GRPO
// loss graph, micro-batched AdamW), learner/gridnet the step-wise CPU policy, learner/safetensors
// the file format, learner/qwen3 the GoMLX causal LM, learner/torch the PyTorch worker, and
// learner/engine the seam that puts either engine behind one interface. Importing learner pulls
// in no GoMLX package.
//
// # Checkpoints
//
// A checkpoint directory holds manifest.json (format, model kind and config, step, policy
// version, config version, data position, RNG state, sha256 of each file),
// model.safetensors (weights) and optimizer.safetensors (Adam moments and step counters).
// WriteCheckpoint writes into a temporary directory and renames it into place; ReadCheckpoint
// verifies checksums before returning anything and reports ErrCorruptCheckpoint; a model that
// restores it reports ErrCheckpointMismatch before touching its weights.
//
// # Errors
//
// Sentinels (match with errors.Is): ErrBadDevice, ErrNoXLA, ErrInvalidConfig (as *fielderr.Error
// naming the field), ErrBadBatch, ErrCorruptCheckpoint, ErrCheckpointMismatch, ErrCompute (a
// GoMLX panic turned into an error), ErrEngineLost (a torch worker died).
package learner
