package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// maxStops is the most stop strings a request may give (OpenAI's limit).
const maxStops = 4

// sampling validates the shared generation fields for prompts of the given lengths (rows =
// len(promptLens) × n) and returns the sample config and n.
func (s *Server) sampling(p *samplingParams, c *served, promptLens []int, defaultMax int) (engine.SampleConfig, int, *reqError) {
	if p.Model == "" {
		return engine.SampleConfig{}, 0, badRequest("model", "model is required")
	}
	sc, rerr := samplingKnobs(p)
	if rerr != nil {
		return sc, 0, rerr
	}
	n, rerr := s.completionCount(p, len(promptLens))
	if rerr != nil {
		return sc, 0, rerr
	}
	if sc.MaxNewTokens, rerr = s.maxNewTokens(p, c.lm.MaxContext(), slices.Max(promptLens), defaultMax); rerr != nil {
		return sc, 0, rerr
	}
	if p.Stream && p.StreamOptions == nil {
		p.StreamOptions = &struct {
			IncludeUsage bool `json:"include_usage"`
		}{}
	}
	return sc, n, nil
}

// samplingKnobs reads temperature (default 1), top_p and top_k.
func samplingKnobs(p *samplingParams) (engine.SampleConfig, *reqError) {
	sc := engine.SampleConfig{Temperature: 1}
	if t := p.Temperature; t != nil {
		if math.IsNaN(*t) || *t < 0 || *t > 2 {
			return sc, badRequest("temperature", "temperature %v: must be in [0, 2]", *t)
		}
		sc.Temperature = *t
	}
	if tp := p.TopP; tp != nil {
		if math.IsNaN(*tp) || *tp <= 0 || *tp > 1 {
			return sc, badRequest("top_p", "top_p %v: must be in (0, 1]", *tp)
		}
		sc.TopP = *tp
	}
	if tk := p.TopK; tk != nil {
		if *tk < -1 {
			return sc, badRequest("top_k", "top_k %d: must be ≥ 1, or 0 or −1 for off", *tk)
		}
		sc.TopK = max(*tk, 0)
	}
	return sc, nil
}

// completionCount reads n (default 1), checks the request's completions
// (prompts × n) against the server's limit and the stop strings.
func (s *Server) completionCount(p *samplingParams, prompts int) (int, *reqError) {
	n := 1
	if p.N != nil {
		n = *p.N
		if n < 1 || n > s.opt.MaxN {
			return 0, badRequest("n", "n %d: must be in [1, %d]", n, s.opt.MaxN)
		}
	}
	if rows := n * prompts; rows > s.opt.MaxRows {
		return 0, badRequest("n", "%d prompts × n %d = %d completions: at most %d per request", prompts, n, rows, s.opt.MaxRows)
	}
	if len(p.Stop) > maxStops {
		return 0, badRequest("stop", "%d stop strings: at most %d", len(p.Stop), maxStops)
	}
	if slices.Contains(p.Stop, "") {
		return 0, badRequest("stop", "stop strings must not be empty")
	}
	return n, nil
}

// maxNewTokens is the completion length: max_completion_tokens or
// max_tokens when given (checked against the context left after the
// longest prompt and the server's cap), else the least of defaultMax, the
// context left and the cap.
func (s *Server) maxNewTokens(p *samplingParams, ctxLen, maxPrompt, defaultMax int) (int, *reqError) {
	left := ctxLen - maxPrompt
	want, field := p.MaxTokens, "max_tokens"
	if p.MaxCompletionTokens != nil {
		want, field = p.MaxCompletionTokens, "max_completion_tokens"
	}
	switch {
	case want != nil && *want < 1:
		return 0, badRequest(field, "%s %d: must be ≥ 1", field, *want)
	case left < 1:
		return 0, unprocessable("messages", "context_length_exceeded", "the prompt has %d tokens; the model's context is %d", maxPrompt, ctxLen)
	case want != nil && *want > left:
		return 0, unprocessable(field, "context_length_exceeded",
			"the prompt (%d tokens) plus %s (%d) exceeds the model's context of %d tokens", maxPrompt, field, *want, ctxLen)
	case want != nil && *want > s.opt.MaxTokens:
		return 0, unprocessable(field, "max_tokens_exceeded", "%s %d: this server allows at most %d", field, *want, s.opt.MaxTokens)
	case want != nil:
		return *want, nil
	}
	return min(defaultMax, left, s.opt.MaxTokens), nil
}

// chatPrompt renders the messages with Qwen3's chat template.
func chatPrompt(req *chatRequest, thinking bool) (string, *reqError) {
	if len(req.Messages) == 0 {
		return "", badRequest("messages", "messages must not be empty")
	}
	if len(req.Tools) > 0 && !bytes.Equal(bytes.TrimSpace(req.Tools), []byte("null")) && !bytes.Equal(bytes.TrimSpace(req.Tools), []byte("[]")) {
		return "", unprocessable("tools", "unsupported", "tools (function calling) are not supported by this server")
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		return "", unprocessable("response_format", "unsupported", "response_format %q is not supported (only \"text\")", rf.Type)
	}
	if raw, ok := req.ChatTemplateKwargs["enable_thinking"]; ok {
		if err := json.Unmarshal(raw, &thinking); err != nil {
			return "", badRequest("chat_template_kwargs.enable_thinking", "enable_thinking must be a boolean")
		}
	}
	msgs := make([]tokenizer.Message, len(req.Messages))
	for i, m := range req.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		role := m.Role
		switch role {
		case "developer":
			role = tokenizer.RoleSystem
		case tokenizer.RoleSystem, tokenizer.RoleUser, tokenizer.RoleAssistant, tokenizer.RoleTool:
		case "":
			return "", badRequest(param+".role", "%s.role is required", param)
		default:
			return "", badRequest(param+".role", "%s.role %q: want system, developer, user, assistant or tool", param, m.Role)
		}
		text, rerr := messageText(m.Content, param)
		if rerr != nil {
			return "", rerr
		}
		msgs[i] = tokenizer.Message{Role: role, Content: text, Reasoning: m.ReasoningContent}
	}
	return tokenizer.ChatPrompt(msgs, true, thinking), nil
}

// messageText reads a message's content: a string, null, or an array of text parts.
func messageText(raw json.RawMessage, param string) (string, *reqError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", badRequest(param+".content", "%s.content: %v", param, err)
		}
		return s, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(param+".content", "%s.content: want a string or an array of content parts", param)
	}
	var b bytes.Buffer
	for k, p := range parts {
		if p.Type != "text" {
			return "", unprocessable(fmt.Sprintf("%s.content[%d].type", param, k), "unsupported", "content part type %q is not supported (only \"text\")", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	c := s.serving(r.Context())
	spec, rerr := s.parseChat(w, r, c, &req)
	if rerr != nil {
		writeReqError(w, rerr)
		return
	}
	n, prompt := len(spec.rows), spec.rows[0]
	g := s.newGenCall(c, spec, "chatcmpl", req.Stream, "n", n, "prompt_tokens", len(prompt))
	g.promptTokens = len(prompt) // the n choices share one prompt
	cw := &chatWriter{req: &req, g: g}
	if req.Stream {
		s.streamChat(w, r, cw, n)
		return
	}
	res, _, ok := s.run(w, r, g, nil)
	if !ok {
		return
	}
	resp := chatResponse{ID: g.id, Object: "chat.completion", Created: g.created, Model: g.model, SystemFingerprint: g.fp, Usage: g.usageOf(res)}
	for i := range res {
		resp.Choices = append(resp.Choices, chatChoice{Index: i, Message: chatRespMessage{Role: "assistant", Content: string(res[i].text)},
			Logprobs: cw.logprobs(res[i].toks), FinishReason: res[i].finish})
	}
	g.log.Info("chat completion", "completion_tokens", resp.Usage.CompletionTokens)
	writeJSON(w, http.StatusOK, resp)
}

// chatWriter holds what a chat answer needs beyond the generation.
type chatWriter struct {
	req *chatRequest
	g   *genCall
}

func (cw *chatWriter) wantLogprobs() bool { return cw.req.Logprobs != nil && *cw.req.Logprobs }

// logprobs are a choice's log-probs, nil unless asked.
func (cw *chatWriter) logprobs(toks []genToken) *chatLogprobs {
	if !cw.wantLogprobs() {
		return nil
	}
	return chatLogprobsOf(cw.g.c, toks, cw.req.ReturnTokensAsTokenIDs)
}

// chunk sends one server-sent event of choices (and usage, in the last).
func (cw *chatWriter) chunk(sse *sse, choices []chatChunkChoice, u *usage) error {
	g := cw.g
	return sse.send(chatChunk{ID: g.id, Object: "chat.completion.chunk", Created: g.created, Model: g.model, SystemFingerprint: g.fp, Choices: choices, Usage: u})
}

// streamChat answers a streamed chat request: an empty assistant delta per
// choice, then each row's text as it is sampled and its finish reason,
// usage last when asked.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, cw *chatWriter, n int) {
	g := cw.g
	res, sse, ok := s.run(w, r, g, func(sse *sse) error {
		empty := ""
		for i := range n {
			if err := cw.chunk(sse, []chatChunkChoice{{Index: i, Delta: chatDelta{Role: "assistant", Content: &empty}}}, nil); err != nil {
				return err
			}
		}
		g.job.stream = func(row int, gr *genRow, final bool) error {
			text, toks := gr.pending(g.job.stops, final)
			if text != "" || (len(toks) > 0 && cw.wantLogprobs()) {
				if err := cw.chunk(sse, []chatChunkChoice{{Index: row, Delta: chatDelta{Content: &text}, Logprobs: cw.logprobs(toks)}}, nil); err != nil {
					return err
				}
			}
			if !final || gr.finish == "" {
				return nil
			}
			reason := gr.finish
			return cw.chunk(sse, []chatChunkChoice{{Index: row, Delta: chatDelta{}, FinishReason: &reason}}, nil)
		}
		return nil
	})
	if !ok {
		return
	}
	defer sse.finish()
	u := g.usageOf(res)
	if cw.req.StreamOptions.IncludeUsage {
		if err := cw.chunk(sse, []chatChunkChoice{}, &u); err != nil {
			return
		}
	}
	g.log.Info("chat completion streamed", "completion_tokens", u.CompletionTokens)
	sse.done()
}

// parseChat reads a /v1/chat/completions request into its rows (the rendered prompt n times).
func (s *Server) parseChat(w http.ResponseWriter, r *http.Request, c *served, req *chatRequest) (genSpec, *reqError) {
	if rerr := s.decodeBody(w, r, req); rerr != nil {
		return genSpec{}, rerr
	}
	ad, model, rerr := s.resolveModel(c, req.Model)
	if rerr != nil {
		return genSpec{}, rerr
	}
	text, rerr := chatPrompt(req, !s.opt.NoThinking)
	if rerr != nil {
		return genSpec{}, rerr
	}
	prompt, rerr := s.encodePrompt(c, text, "messages")
	if rerr != nil {
		return genSpec{}, rerr
	}
	sc, n, rerr := s.sampling(&req.samplingParams, c, []int{len(prompt)}, s.opt.DefaultMaxTokens)
	if rerr != nil {
		return genSpec{}, rerr
	}
	top := 0
	if req.TopLogprobs != nil {
		if req.Logprobs == nil || !*req.Logprobs {
			return genSpec{}, badRequest("top_logprobs", "top_logprobs needs logprobs: true")
		}
		if *req.TopLogprobs < 0 || *req.TopLogprobs > s.opt.MaxTopLogprobs {
			return genSpec{}, badRequest("top_logprobs", "top_logprobs %d: must be in [0, %d]", *req.TopLogprobs, s.opt.MaxTopLogprobs)
		}
		top = *req.TopLogprobs
	}
	rows := make([][]int32, n)
	for i := range rows {
		rows[i] = prompt
	}
	return genSpec{ad: ad, model: model, rows: rows, sc: sc, top: top, stop: req.Stop, seed: req.Seed}, nil
}

// chatLogprobsOf is the chat log-probs of toks.
func chatLogprobsOf(c *served, toks []genToken, asIDs bool) *chatLogprobs {
	out := &chatLogprobs{Content: make([]tokenLogprob, len(toks))}
	for i, t := range toks {
		str, bs := tokenString(c.lm, t.id, asIDs)
		e := tokenLogprob{Token: str, Logprob: jsonLogprob(t.lp), Bytes: bs, TopLogprobs: []topLogprob{}}
		for _, a := range t.top {
			as, ab := tokenString(c.lm, a.Token, asIDs)
			e.TopLogprobs = append(e.TopLogprobs, topLogprob{Token: as, Logprob: jsonLogprob(a.LogProb), Bytes: ab})
		}
		out.Content[i] = e
	}
	return out
}

// genFailed answers a generation error: bad input the checks above missed is a 422, anything
// else a 500.
func (s *Server) genFailed(w http.ResponseWriter, log *slog.Logger, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		log.Info("request abandoned", "err", err)
		return
	}
	log.Warn("generation failed", "err", err)
	if errors.Is(err, learner.ErrBadBatch) || errors.Is(err, learner.ErrInvalidConfig) {
		writeReqError(w, unprocessable("", "invalid_input", "%v", err))
		return
	}
	writeError(w, http.StatusInternalServerError, "server_error", "", "generation_failed", err.Error())
}

func (s *sse) fail(log *slog.Logger, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		log.Info("stream abandoned", "err", err)
		return
	}
	log.Warn("generation failed", "err", err)
	_ = s.send(apiError{Error: apiErrorBody{Message: err.Error(), Type: "server_error"}})
	s.finish()
}
