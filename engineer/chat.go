package engineer

import "context"

// ChatMessage is one turn of a chat with the engineer model.
type ChatMessage struct {
	Role    string // "system", "user" or "assistant"
	Content string
}

// ChatAnswer is a chat model's reply.
type ChatAnswer struct {
	Content string
	// Tokens is the prompt and answer tokens the call used (0: unknown; the strategy then
	// counts ApproxTokens).
	Tokens int
	// Engineer names who answered, for the audit: "self@v12" (the policy being trained, at
	// version 12), "base" (the frozen starting checkpoint), or the endpoint's model and URL.
	Engineer string
}

// ChatModel answers the engineer's prompt: an OpenAI-compatible endpoint (the default when
// LLMOptions.Chat is nil) or a model in this process (textpolicy.EngineerChat: the current
// policy checkpoint or a frozen copy of the starting one, as in the paper).
type ChatModel interface {
	Chat(ctx context.Context, msgs []ChatMessage, temperature float64, maxTokens int) (ChatAnswer, error)
}
