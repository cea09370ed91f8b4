package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// OpenAI wire format: the parts of the chat-completions, completions and models APIs this
// server reads and writes. Unknown request fields are ignored, as OpenAI-compatible servers do.

// apiError is the OpenAI error body: {"error": {...}}.
type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// stopField is "stop": null, a string, or an array of strings.
type stopField []string

func (s *stopField) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*s = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = stopField{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("stop: want a string or an array of strings")
	}
	*s = many
	return nil
}

// samplingParams are the generation fields shared by both endpoints.
type samplingParams struct {
	Model               string    `json:"model"`
	Temperature         *float64  `json:"temperature"`
	TopP                *float64  `json:"top_p"`
	TopK                *int      `json:"top_k"` // vLLM extension; 0 or −1: off
	MaxTokens           *int      `json:"max_tokens"`
	MaxCompletionTokens *int      `json:"max_completion_tokens"`
	N                   *int      `json:"n"`
	Stop                stopField `json:"stop"`
	Stream              bool      `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Seed *int64 `json:"seed"`
	// ReturnTokensAsTokenIDs (vLLM extension) writes each log-prob token as "token_id:<id>",
	// so that a client can train on the exact ids.
	ReturnTokensAsTokenIDs bool `json:"return_tokens_as_token_ids"`
}

type chatRequest struct {
	samplingParams
	Messages       []chatMessage   `json:"messages"`
	Logprobs       *bool           `json:"logprobs"`
	TopLogprobs    *int            `json:"top_logprobs"`
	Tools          json.RawMessage `json:"tools"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	// ChatTemplateKwargs (vLLM extension): {"enable_thinking": false} renders Qwen3's
	// template with the empty think block.
	ChatTemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs"`
}

type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
}

// contentPart is one element of an array "content".
type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type completionRequest struct {
	samplingParams
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Echo     bool            `json:"echo"`
}

// ---- responses

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type tokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type chatLogprobs struct {
	Content []tokenLogprob `json:"content"`
}

type chatRespMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      chatRespMessage `json:"message"`
	Logprobs     *chatLogprobs   `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type chatResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []chatChoice `json:"choices"`
	Usage             usage        `json:"usage"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []chatChunkChoice `json:"choices"`
	Usage             *usage            `json:"usage,omitempty"`
}

type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

type completionResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             *usage             `json:"usage,omitempty"`
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// MaxModelLen is the context length (vLLM's field).
	MaxModelLen int `json:"max_model_len"`
	// Revision counts the swaps since the server started (0: the first model).
	Revision int64 `json:"t2t_revision"`
	// Root is a LoRA adapter's directory (vLLM's field; empty for the base model).
	Root string `json:"root,omitempty"`
	// Parent is the base model of a LoRA adapter (vLLM's field; null for the base model).
	Parent *string `json:"parent"`
}

type modelList struct {
	Object string        `json:"object"`
	Data   []modelObject `json:"data"`
}

// health is GET /health's body: the requests waiting for the model and those generating.
type health struct {
	Status  string `json:"status"`
	Queued  int    `json:"queued"`
	Running int    `json:"running"`
}

// minLogprob is the log-probability written for a token whose own is not a finite number (NaN
// or -Inf from a model gone wrong): OpenAI writes -9999.0 for tokens too unlikely to express,
// and JSON has no NaN or infinity, so a stream never fails to encode.
const minLogprob = -9999.0

// jsonLogprob is lp as JSON can carry it: minLogprob when it is NaN or infinite.
func jsonLogprob(lp float32) float64 {
	f := float64(lp)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return minLogprob
	}
	return f
}
