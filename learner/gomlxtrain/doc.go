// Package gomlxtrain trains models on GoMLX (github.com/gomlx/gomlx): backends, the GRPO and
// behaviour-cloning loss graphs, and a model-agnostic Trainer with AdamW, global-norm clipping
// and micro-batched gradient accumulation.
//
// NewBackend("cpu") returns the pure-Go backend, NewBackend("xla:/abs/plugin.so") the XLA
// backend (cgo builds only; otherwise learner.ErrNoXLA). NewBackend also calls
// RegisterFastMatMulGradient, which replaces GoMLX's DotGeneral and Dot gradients with one
// DotGeneral + transpose per input (much faster, and the only option for large models); it reads
// unexported GoMLX fields, so a test compares it with the stock gradient.
//
// A model is a LogitsFunc from inputs [B, T, ...] to logits [B, T, V] over variables in a
// context.Context. GRPOLoss and ChosenLogProbs are the one loss implementation the GoMLX
// policies share (learner/gridnet and learner/qwen3). Snapshot and RestoreContext move a
// context's weights and optimizer state to and from a learner.Checkpoint; resuming is bit-exact.
// Catch turns a GoMLX panic into an error wrapping learner.ErrCompute.
//
// Concurrency: a Trainer is not safe for concurrent use. RegisterFastMatMulGradient writes
// GoMLX's global gradient registry once (sync.Once): call it (or NewBackend) before building
// graphs on other goroutines.
package gomlxtrain
