// Package serve is an OpenAI-compatible HTTP API over an in-process Qwen3 model
// (textpolicy.LM), so that the engineer's llm strategy, evaluation clients and any OpenAI SDK
// can talk to the policy being trained. `t2t serve --model DIR` runs it.
//
// # Endpoints
//
//	GET  /v1/models, /v1/models/{id}   the one served model (id, context length, revision)
//	POST /v1/chat/completions          messages → Qwen3 chat template → completion
//	POST /v1/completions               raw prompt text (or token ids) → completion
//	GET  /health
//
// Requests take model, temperature (default 1; 0 is greedy), top_p, top_k (vLLM), max_tokens
// or max_completion_tokens (default: Options.DefaultMaxTokens for chat, 16 for completions,
// bounded by the context), stop (up to 4 strings), n, seed, stream with stream_options
// .include_usage, and log-probs: chat's logprobs/top_logprobs, completions' logprobs=N.
// Extensions from vLLM: chat_template_kwargs.enable_thinking (false renders Qwen3's template
// with the empty think block) and return_tokens_as_token_ids (log-prob tokens written
// "token_id:<id>", which textpolicy.Client uses to train on the exact ids). Log-probs cover
// every generated token, the stop token included, under softmax(logits/temperature);
// content leaves out control tokens (skip_special_tokens) and is cut before the first stop
// string. The n completions of a request are sampled as one batch with the KV cache; a
// request without a seed gets the next seed of the server's own stream (Options.Seed), so a
// server is deterministic given the order of its requests.
//
// Streaming sends "data: <chunk>\n\n" server-sent events: a first chunk per choice with the
// assistant role, then text deltas (with their tokens' log-probs) as tokens are sampled, a
// final chunk per choice with its finish_reason ("stop" or "length"), a usage chunk when
// asked, and "data: [DONE]". A multi-byte character cut between tokens, and text that could
// still become a stop string, are held back until they are settled, so the deltas add up to
// exactly the non-streamed content. A client that goes away ends its generation.
//
// # Errors
//
// Errors use OpenAI's shape, {"error": {"message", "type", "param", "code"}}: 400
// (invalid_request_error, code invalid_value) for malformed JSON, wrong types and values out
// of range; 404 for an unknown model (code model_not_found) or route; 405 for a wrong method;
// 401 without the API key (Options.APIKey; code invalid_api_key); 413 for a body over
// Options.MaxBodyBytes; 422 for well-formed requests this server cannot honour — a prompt plus
// max_tokens beyond the context (context_length_exceeded), max_tokens over Options.MaxTokens
// (max_tokens_exceeded), a prompt over Options.MaxPromptTokens (prompt_too_long, counted by
// tokenizer.EncodeLimit without tokenizing the rest), a memory estimate over Options.MaxMemory
// (memory_limit_exceeded), prompt token ids outside the vocabulary (invalid_token), tools,
// non-text content parts or a response_format other than text (unsupported); 429 with
// Retry-After when Options.MaxQueue requests already wait (queue_full); 500 when generation
// fails. A non-canonical path is 404 (never a redirect).
//
// # Hot swap
//
// Swap(lm) serves a new policy version from the next request on; requests already running
// finish on the model they started with. Reload(ctx, spec, dir) loads a checkpoint directory
// and swaps it in (on error the current model stays). POST /update_weights_from_disk
// {"model_path": DIR} does the same over HTTP with SGLang's request and answer
// ({"success", "message"}, 400 keeping the model when DIR does not load or holds another
// architecture), keeping the model id, so a t2t serve stands in for SGLang as a rollout engine
// (weights.go; Options.LoadWeights, which Run sets).
//
// # LoRA adapters
//
// POST /v1/load_lora_adapter and /v1/unload_lora_adapter follow vLLM's runtime adapter API;
// /v1/models lists each adapter with its directory (root) and base model (parent), and a
// completion whose model names an adapter samples through it. The model holds one adapter at
// a time, swapped inside the generation slot (lora.go says what a swap costs); gomlx models
// only (engine.AdapterUnloader). Adapters stay registered across Swap and attach to the new
// model on the next request that names them.
//
// # Running a server
//
// Run is `t2t serve` without its flags: it loads a checkpoint directory on a compute engine
// (learner/engine), serves it over HTTP until its context ends, and reloads the directory on
// every value of a channel (t2t serve sends SIGHUP there), closing the previous model once its
// requests end. A directory that does not load at start is a *LoadError.
//
// # Revisions
//
// /v1/models reports the revision (t2t_revision, +1 per swap) and each response's
// system_fingerprint is "t2t-r<revision>". Serving the LM a textpolicy.Policy trains needs no
// swap at all: the server reads the same weights, and its generations wait while a training
// step runs.
//
// # Concurrency
//
// A Server is safe for concurrent use. Generations of concurrent requests run one after
// another on the model (there is no batching across requests): a request waits for its turn in
// a FIFO queue of at most Options.MaxQueue, and leaves it when its client goes away; it starts
// when the model is free and its memory estimate (qwen3.Config.GenerateMemory plus its results)
// fits Options.MaxMemory. The model is free once the generation ends, before the answer is
// written. GET /health reports the requests queued and running.
//
// # Flags
//
// RegisterFlags binds the limits and the API key ($T2T_API_KEY by default) to a command line's
// flags; t2t serve and t2t node --serve-addr share them.
package serve
