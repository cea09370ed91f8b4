// Package qwen3 is the Qwen3 causal language model in GoMLX: it loads and saves Hugging Face
// checkpoint directories, computes logits for GRPO through gomlxtrain.Trainer (the same loss as
// every other policy), generates with a KV cache, and trains LoRA adapters.
//
// # Checkpoints
//
// The architecture (Config, presets, the Hugging Face tensor names, random initialisation, LoRA
// and memory arithmetic) lives in learner/hfmodel, which the torch engine shares; this package
// is the GoMLX computation. EngineModel puts a Model behind the learner/engine seam.
//
// Load reads config.json (hfmodel.LoadConfig) and the weights through safetensors.OpenDir (one
// model.safetensors or a sharded index) under their Hugging Face names
// (model.embed_tokens.weight, model.layers.N.{input_layernorm, post_attention_layernorm}.weight,
// model.layers.N.self_attn.{q,k,v,o}_proj.weight, model.layers.N.self_attn.{q,k}_norm.weight,
// model.layers.N.mlp.{gate,up,down}_proj.weight, model.norm.weight, lm_head.weight unless
// tie_word_embeddings). BF16, F16 and F32 weights become float32 master weights. A missing,
// unexpected or mis-shaped tensor is a *WeightError naming it, reported before anything is
// built. Save writes the same layout (config.json, model.safetensors, the source directory's
// tokenizer files), which transformers' Qwen3ForCausalLM and vLLM load. hfmodel.InitRandom, NewRandom
// and hfmodel.WriteRandomCheckpoint make random models of any shape (Preset: "tiny", "0.6b-shape",
// "4b-shape") for tests and benchmarks.
//
// # Architecture
//
// Token embedding; per layer: RMSNorm → attention → residual, RMSNorm → SwiGLU MLP
// (down(silu(gate(x))·up(x))) → residual; final RMSNorm; the head (the embedding when tied).
// Attention is grouped-query (num_attention_heads query heads share num_key_value_heads
// key/value heads) with per-head RMSNorm on queries and keys before RoPE (θ = rope_theta,
// rotate-half pairing (i, i+D/2)), scaled by 1/√head_dim and causally masked. rotate_half is a
// product with a constant ±1 matrix, so no Slice lies on the differentiated path (the pure-Go
// backend cannot differentiate Slice). Everything computes in float32.
//
// Padding: every graph takes a validity mask (1 = real token). A token's RoPE position is the
// number of real tokens before it and a query attends to the real keys at or before it, so
// sequences may be padded on the right (training, Logits) or on the left (generation).
// Masked scores get −1e9, not −∞, so a padding row stays finite.
//
// # Training
//
// NewTrainer returns a learner.Trainer whose LogitsFunc is this model's forward pass, with two
// inputs per batch (token ids, validity); NewSeqBatch turns sampled completions into its
// SeqBatch (prompt positions masked out). GRPO, AdamW, clipping and micro-batching are the
// learner package's.
//
// # Generation
//
// Generate left-pads the prompts, runs one prefill graph that fills a KV cache
// ([batch, positions, kv heads, head_dim] per layer and for keys and values) and returns the
// last logits, then one decode graph per new token that writes the token's keys and values
// into the cache (DynamicUpdateSlice where the backend has it, else a masked select) and
// returns the next logits. GoMLX graphs have no loops, so the loop is Go code and the cache
// travels as tensors between calls. Sampling (temperature, top-k, top-p, stop tokens) runs in
// Go; the log-probs returned are those of softmax(logits/temperature) over the full vocabulary
// (see Generation). Batch, prompt and cache lengths are padded to powers of two so that a
// handful of graphs is compiled.
//
// # LoRA
//
// AddLoRA attaches rank-r adapters (W + α/r·B·A) to chosen projections and freezes the base
// weights: they are no longer trainable variables, so a Trainer keeps no gradients or Adam state
// for them. SaveAdapter writes a PEFT adapter (adapter_config.json, adapter_model.safetensors);
// LoadAdapter reads one; Save writes the merged weights.
//
// # Memory
//
// EstimateMemory gives a byte budget for a training step and a KV cache (print it before a
// run). Full fine-tuning keeps for every parameter a float32 weight, gradient, accumulator and
// two Adam moments (20 bytes), about 80 GB for Qwen3-4B before activations; with LoRA only the
// float32 base weights (16 GB) and the adapters' state remain.
//
// # Concurrency and errors
//
// Model methods serialise on a mutex; a Trainer from NewTrainer must not step while the model
// generates. Errors: *WeightError (ErrWeights, learner.ErrCheckpointMismatch) for checkpoint
// tensors, *fielderr.Error (learner.ErrInvalidConfig) for configurations,
// learner.ErrBadBatch for bad inputs, learner.ErrCompute for GoMLX failures.
package qwen3
