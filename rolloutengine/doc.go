// Package rolloutengine pushes a learner's policy versions to an inference engine that samples
// the rollouts, as verl, AReaL and slime do with vLLM and SGLang: each new version is written to
// a directory the engine can read and the engine is told to load it; rollouts then sample that
// version by name.
//
// Engines and the APIs followed (the version after which each call has this shape):
//
//   - vLLM ≥ 0.6.1 (tested shapes: 0.10), started with --enable-lora (and --max-lora-rank ≥ the
//     learner's rank) and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True: version N is the PEFT adapter
//     directory Dir/vN, loaded with POST /v1/load_lora_adapter {"lora_name": "t2t-vN",
//     "lora_path": "Dir/vN"} and unloaded with POST /v1/unload_lora_adapter {"lora_name"};
//     rollouts send "model": "t2t-vN".
//   - t2t serve: the same endpoints (package serve), so one t2t process stands in for vLLM; and
//     SGLang's /update_weights_from_disk, for full checkpoints.
//   - SGLang ≥ 0.4.0 (the endpoint was /update_weights before sgl-project/sglang#2265): version
//     N is a full Hugging Face checkpoint Dir/vN (a LoRA learner's merged weights), loaded with
//     POST /update_weights_from_disk {"model_path": "Dir/vN"}, which answers {"success",
//     "message"} (200, or 400 when it kept its weights); rollouts send the base model's name,
//     and the version is whatever the engine holds now.
//
// Use: New checks a Config; the learner calls Write after each update that made a version
// (the write is synchronous, so the directory holds exactly that version), and one goroutine
// runs Run, which loads the newest written version and reports it (onLoaded: t2t publishes the
// version in Redis there, so rollout nodes learn of a version only once the engine serves it).
// Rollouts of the same process call Acquire for the version to sample and release it after.
// Load and WaitLoaded make a version loaded before going on (the first version, a
// deterministic run).
//
// Errors: a bad Config is a *fielderr.Error (ErrConfig); a failed engine call is a *EngineError
// naming the operation, the URL, the HTTP status and the engine's message. Calls are retried
// (Config.MaxRetries, exponential backoff) when the failure is transient: no answer, 408, 429
// or 5xx. A failed load changes nothing: rollouts keep the loaded version.
//
// Concurrency: every method is safe for concurrent use; engine operations (a load and the
// unloads after it) run one at a time.
package rolloutengine
