// Package textpolicy is the one-shot text policy of t2t: a language model writes the whole
// joint plan of an MAPF-FrozenLake instance as text, the env package parses and verifies it,
// and GRPO trains the model on the sampled token ids. It is where env, the Qwen3 model
// (learner/qwen3) and its tokenizer (learner/tokenizer) meet.
//
// # Policies
//
// Policy trains an in-process Qwen3 (an LM: model, tokenizer, stop tokens). Play renders the
// instance's prompt (env.RenderPrompt), wraps it in Qwen3's chat template as one user turn
// (thinking on or off: Options.Thinking), samples GroupSize completions with the KV cache,
// decodes them, judges them (env.ParseAnswer + env.Verify: Judge) and rewards them with
// env.Reward — R_acc plus R_len with the adaptive weights of an env.LengthSchedule, the token
// count being the completion's length. The rollout's Actions and LogProbs are the completion
// ids and their sampling log-probs, never re-tokenised. Update re-renders each group's prompt
// from its instance (deterministic), joins it with the sampled ids into a qwen3 SeqBatch and
// runs one GRPO step of the shared learner.Trainer loss. Both satisfy train.Policy, so
// train.Run drives the text policy exactly as it drives gridnet.
//
// Client is the same policy behind any OpenAI-compatible /chat/completions endpoint (vLLM,
// SGLang, Ollama, hosted APIs, `t2t serve`): BaseURL, Model, an API key read from an
// environment variable, a concurrency limit, retries with exponential backoff on transport
// errors, 408, 429 and 5xx, and a timeout per call. It is for evaluation and direct solving
// (Update returns ErrNotTrainable); with RequireLogProbs it asks for token ids and log-probs
// (vLLM's return_tokens_as_token_ids) so that its rollouts can feed a learner, and fails with
// a *LogProbsError when the server sends none.
//
// # The tiny tokenizer
//
// Tests and `t2t model init` need a tokenizer for random checkpoints; Qwen3's cannot be
// downloaded everywhere. TinyTokenizerJSON learns a byte-level BPE (256 bytes, merges, Qwen3's
// five chat markers) from the testbed's own prompts and optimal answers (TinyCorpus). Its
// pre-tokenizer (a Split on TinySplitPattern, then ByteLevel) cuts out every move word, every
// digit and every ice or hole cell of the map, and merges may span words only in the text
// between them: the fixed rules text of a prompt becomes a few tokens per line (a 5×5 prompt
// is ~210 tokens for ~2,300 bytes), while a model reads and writes plans, coordinates and maps
// one move, digit or cell at a time. It is deterministic (the same bytes every time) and loads
// with the tokenizer package, and with Hugging Face tokenizers, like any tokenizer.json.
//
// # Concurrency
//
// Policy.Play may run concurrently with Play and Update: the LM lets generations run together
// (the model serialises them) and makes a training step (LM.Exclusive) wait for them, and
// them for it. A server (package serve) over the same LM follows the same rule. Client is safe
// for concurrent use.
//
// # Errors
//
// *fielderr.Error (ErrOptions) for bad options, ErrTokenizer for a tokenizer that is missing or
// does not fit the model, ErrNotTrainable, *LogProbsError (ErrNoLogProbs), *EndpointError
// (ErrEndpoint) after the retries of a call; model errors pass through from learner/qwen3
// (learner.ErrBadBatch, learner.ErrCompute, …).
package textpolicy
