package serve

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// completionPrompts reads "prompt": a string, an array of strings, an array of token ids or
// an array of such arrays.
func (s *Server) completionPrompts(raw json.RawMessage, c *served) ([][]int32, []string, *reqError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil, badRequest("prompt", "prompt is required")
	}
	texts, ids, rerr := parsePrompt(raw)
	if rerr != nil {
		return nil, nil, rerr
	}
	if k := max(len(texts), len(ids)); k > s.opt.MaxRows {
		return nil, nil, badRequest("prompt", "%d prompts: at most %d per request", k, s.opt.MaxRows)
	}
	for _, t := range texts {
		p, rerr := s.encodePrompt(c, t, "prompt")
		if rerr != nil {
			return nil, nil, rerr
		}
		ids = append(ids, p)
	}
	limit := s.promptCap(c)
	vocab := int32(c.lm.Model.Config().VocabSize)
	for i, p := range ids {
		if len(p) == 0 {
			return nil, nil, badRequest("prompt", "prompt %d is empty", i)
		}
		if len(p) > limit {
			return nil, nil, promptTooLong("prompt", limit)
		}
		for _, id := range p {
			if id < 0 || id >= vocab {
				return nil, nil, unprocessable("prompt", "invalid_token", "prompt %d: token id %d outside the vocabulary [0, %d)", i, id, vocab)
			}
		}
	}
	if texts == nil {
		for _, p := range ids {
			texts = append(texts, c.lm.Tok.Decode(p))
		}
	}
	return ids, texts, nil
}

// parsePrompt reads a non-empty "prompt" as texts or as token-id rows.
func parsePrompt(raw json.RawMessage) (texts []string, ids [][]int32, rerr *reqError) {
	if raw[0] == '"' {
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, nil, badRequest("prompt", "prompt: %v", err)
		}
		return []string{one}, nil, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil || len(elems) == 0 {
		return nil, nil, badRequest("prompt", "prompt: want a string, an array of strings, or token ids")
	}
	switch first := bytes.TrimSpace(elems[0]); {
	case len(first) > 0 && first[0] == '"':
		if err := json.Unmarshal(raw, &texts); err != nil {
			return nil, nil, badRequest("prompt", "prompt: an array of prompts must hold only strings")
		}
	case len(first) > 0 && first[0] == '[':
		if err := json.Unmarshal(raw, &ids); err != nil {
			return nil, nil, badRequest("prompt", "prompt: an array of token-id prompts must hold only arrays of integers")
		}
	default:
		var one []int32
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, nil, badRequest("prompt", "prompt: token ids must be integers")
		}
		ids = [][]int32{one}
	}
	return texts, ids, nil
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	c := s.serving(r.Context())
	spec, texts, rerr := s.parseCompletion(w, r, c, &req)
	if rerr != nil {
		writeReqError(w, rerr)
		return
	}
	cw := &completionWriter{req: &req, g: s.newGenCall(c, spec, "cmpl", req.Stream), texts: texts, n: len(spec.rows) / len(texts)}
	if req.Stream {
		s.streamCompletions(w, r, cw, len(spec.rows))
		return
	}
	res, _, ok := s.run(w, r, cw.g, nil)
	if !ok {
		return
	}
	g := cw.g
	u := g.usageOf(res)
	resp := completionResponse{ID: g.id, Object: "text_completion", Created: g.created, Model: g.model, SystemFingerprint: g.fp, Usage: &u}
	for i := range res {
		reason, e := res[i].finish, cw.echo(i)
		resp.Choices = append(resp.Choices, completionChoice{Index: i, Text: e + string(res[i].text), Logprobs: cw.logprobs(res[i].toks, len(e)), FinishReason: &reason})
	}
	g.log.Info("completion", "completion_tokens", u.CompletionTokens)
	writeJSON(w, http.StatusOK, resp)
}

// completionWriter holds what a /v1/completions answer needs beyond the
// generation: the request (echo, log-probs) and the prompts' texts, each
// sampled n times.
type completionWriter struct {
	req   *completionRequest
	g     *genCall
	texts []string
	n     int
}

// echo is the prompt text a row's choice starts with ("" without echo).
func (cw *completionWriter) echo(row int) string {
	if cw.req.Echo {
		return cw.texts[row/cw.n]
	}
	return ""
}

// logprobs are the choice's log-probs (nil unless asked); offset is where
// the tokens' text starts in the choice's text.
func (cw *completionWriter) logprobs(toks []genToken, offset int) *completionLogprobs {
	if cw.req.Logprobs == nil {
		return nil
	}
	return completionLogprobsOf(cw.g.c, toks, offset, cw.req.ReturnTokensAsTokenIDs)
}

// chunk sends one server-sent event of choices (and usage, in the last).
func (cw *completionWriter) chunk(sse *sse, ch []completionChoice, u *usage) error {
	g := cw.g
	return sse.send(completionResponse{ID: g.id, Object: "text_completion", Created: g.created, Model: g.model, SystemFingerprint: g.fp, Choices: ch, Usage: u})
}

// streamCompletions answers a streamed request: the echoed prompts first,
// then each row's text as it is sampled, usage last when asked.
func (s *Server) streamCompletions(w http.ResponseWriter, r *http.Request, cw *completionWriter, rows int) {
	g := cw.g
	res, sse, ok := s.run(w, r, g, func(sse *sse) error {
		if cw.req.Echo {
			for i := range rows {
				if err := cw.chunk(sse, []completionChoice{{Index: i, Text: cw.echo(i)}}, nil); err != nil {
					return err
				}
			}
		}
		g.job.stream = func(row int, gr *genRow, final bool) error {
			text, toks := gr.pending(g.job.stops, final)
			var reason *string
			if final && gr.finish != "" {
				f := gr.finish
				reason = &f
			}
			if text == "" && reason == nil && (len(toks) == 0 || cw.req.Logprobs == nil) {
				return nil
			}
			return cw.chunk(sse, []completionChoice{{Index: row, Text: text, Logprobs: cw.logprobs(toks, len(cw.echo(row))), FinishReason: reason}}, nil)
		}
		return nil
	})
	if !ok {
		return
	}
	defer sse.finish()
	if cw.req.StreamOptions.IncludeUsage {
		u := g.usageOf(res)
		if err := cw.chunk(sse, []completionChoice{}, &u); err != nil {
			return
		}
	}
	sse.done()
}

// parseCompletion reads a /v1/completions request into the rows to sample (each prompt n
// times) and the prompts' texts (for echo).
func (s *Server) parseCompletion(w http.ResponseWriter, r *http.Request, c *served, req *completionRequest) (genSpec, []string, *reqError) {
	if rerr := s.decodeBody(w, r, req); rerr != nil {
		return genSpec{}, nil, rerr
	}
	ad, model, rerr := s.resolveModel(c, req.Model)
	if rerr != nil {
		return genSpec{}, nil, rerr
	}
	prompts, texts, rerr := s.completionPrompts(req.Prompt, c)
	if rerr != nil {
		return genSpec{}, nil, rerr
	}
	lens := make([]int, len(prompts))
	for i, p := range prompts {
		lens[i] = len(p)
	}
	sc, n, rerr := s.sampling(&req.samplingParams, c, lens, 16)
	if rerr != nil {
		return genSpec{}, nil, rerr
	}
	top := 0
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > s.opt.MaxTopLogprobs {
			return genSpec{}, nil, badRequest("logprobs", "logprobs %d: must be in [0, %d]", *req.Logprobs, s.opt.MaxTopLogprobs)
		}
		top = *req.Logprobs
	}
	rows := make([][]int32, 0, len(prompts)*n)
	for _, p := range prompts {
		for range n {
			rows = append(rows, p)
		}
	}
	return genSpec{ad: ad, model: model, rows: rows, sc: sc, top: top, stop: req.Stop, seed: req.Seed}, texts, nil
}

// completionLogprobsOf is the legacy completions log-probs of toks; offset is where their text
// starts in the choice's text.
func completionLogprobsOf(c *served, toks []genToken, offset int, asIDs bool) *completionLogprobs {
	out := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	for _, t := range toks {
		str, _ := tokenString(c.lm, t.id, asIDs)
		out.Tokens = append(out.Tokens, str)
		out.TokenLogprobs = append(out.TokenLogprobs, jsonLogprob(t.lp))
		alts := map[string]float64{}
		for _, a := range t.top {
			as, _ := tokenString(c.lm, a.Token, asIDs)
			if _, dup := alts[as]; !dup {
				alts[as] = jsonLogprob(a.LogProb)
			}
		}
		out.TopLogprobs = append(out.TopLogprobs, alts)
		out.TextOffset = append(out.TextOffset, offset+t.text)
	}
	return out
}
