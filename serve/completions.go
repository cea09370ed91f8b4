package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// completionPrompts reads "prompt": a string, an array of strings, an array of token ids or
// an array of such arrays.
func (s *Server) completionPrompts(raw json.RawMessage, c *served) ([][]int32, []string, *reqError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil, badRequest("prompt", "prompt is required")
	}
	var texts []string
	var ids [][]int32
	if raw[0] == '"' {
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, nil, badRequest("prompt", "prompt: %v", err)
		}
		texts = []string{one}
	} else {
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

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if rerr := s.decodeBody(w, r, &req); rerr != nil {
		writeReqError(w, rerr)
		return
	}
	c := s.cur.Load()
	ad, model, rerr := s.resolveModel(c, req.Model)
	if rerr != nil {
		writeReqError(w, rerr)
		return
	}
	prompts, texts, rerr := s.completionPrompts(req.Prompt, c)
	if rerr != nil {
		writeReqError(w, rerr)
		return
	}
	lens := make([]int, len(prompts))
	for i, p := range prompts {
		lens[i] = len(p)
	}
	sc, n, rerr := s.sampling(&req.samplingParams, c, lens, 16)
	if rerr != nil {
		writeReqError(w, rerr)
		return
	}
	top := -1
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > s.opt.MaxTopLogprobs {
			return400(w, "logprobs", fmt.Sprintf("logprobs %d: must be in [0, %d]", *req.Logprobs, s.opt.MaxTopLogprobs))
			return
		}
		top = *req.Logprobs
	}
	rows := make([][]int32, 0, len(prompts)*n)
	for _, p := range prompts {
		for range n {
			rows = append(rows, p)
		}
	}
	job := &genJob{lm: c.lm, use: s.adapterUse(c.lm, ad), rows: rows, sc: sc, top: max(top, 0), stops: newStopMatcher(req.Stop), seed: s.requestSeed(req.Seed)}
	job.sc.StopTokens = c.lm.Stop
	id, created := s.newID("cmpl"), s.opt.Now().Unix()
	fp := fmt.Sprintf("t2t-r%d", c.revision)
	lps := func(toks []genToken, offset int) *completionLogprobs {
		if top < 0 {
			return nil
		}
		out := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
		for _, t := range toks {
			str, _ := tokenString(c.lm, t.id, req.ReturnTokensAsTokenIDs)
			out.Tokens = append(out.Tokens, str)
			out.TokenLogprobs = append(out.TokenLogprobs, float64(t.lp))
			alts := map[string]float64{}
			for _, a := range t.top {
				as, _ := tokenString(c.lm, a.Token, req.ReturnTokensAsTokenIDs)
				if _, dup := alts[as]; !dup {
					alts[as] = float64(a.LogProb)
				}
			}
			out.TopLogprobs = append(out.TopLogprobs, alts)
			out.TextOffset = append(out.TextOffset, offset+t.text)
		}
		return out
	}
	echo := func(row int) string {
		if req.Echo {
			return texts[row/n]
		}
		return ""
	}
	promptTokens := 0
	for _, p := range rows {
		promptTokens += len(p)
	}
	log := s.opt.Logger.With("id", id, "model", model, "rows", len(rows), "max_tokens", sc.MaxNewTokens, "stream", req.Stream)
	release, ok := s.admit(w, r, job, log)
	if !ok {
		return
	}
	defer release()
	if !req.Stream {
		res, err := job.run(r.Context())
		release() // the model is free: the answer's writing does not hold it
		if err != nil {
			s.genFailed(w, log, err)
			return
		}
		u := usage{PromptTokens: promptTokens}
		resp := completionResponse{ID: id, Object: "text_completion", Created: created, Model: model, SystemFingerprint: fp, Usage: &u}
		for i := range res {
			g := &res[i]
			reason := g.finish
			e := echo(i)
			resp.Choices = append(resp.Choices, completionChoice{Index: i, Text: e + string(g.text), Logprobs: lps(g.toks, len(e)), FinishReason: &reason})
			u.CompletionTokens += len(g.toks)
		}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		log.Info("completion", "completion_tokens", u.CompletionTokens)
		writeJSON(w, http.StatusOK, resp)
		return
	}
	sse, err := newSSE(w)
	if err != nil {
		s.genFailed(w, log, err)
		return
	}
	defer sse.finish()
	chunk := func(ch []completionChoice, u *usage) error {
		return sse.send(completionResponse{ID: id, Object: "text_completion", Created: created, Model: model, SystemFingerprint: fp, Choices: ch, Usage: u})
	}
	if req.Echo {
		for i := range rows {
			if err := chunk([]completionChoice{{Index: i, Text: echo(i)}}, nil); err != nil {
				return
			}
		}
	}
	job.stream = func(row int, g *genRow, final bool) error {
		text, toks := g.pending(job.stops, final)
		var reason *string
		if final && g.finish != "" {
			f := g.finish
			reason = &f
		}
		if text == "" && reason == nil && (len(toks) == 0 || top < 0) {
			return nil
		}
		return chunk([]completionChoice{{Index: row, Text: text, Logprobs: lps(toks, len(echo(row))), FinishReason: reason}}, nil)
	}
	res, err := job.run(r.Context())
	release()
	if err != nil {
		sse.fail(log, err)
		return
	}
	if req.StreamOptions.IncludeUsage {
		u := usage{PromptTokens: promptTokens}
		for i := range res {
			u.CompletionTokens += len(res[i].toks)
		}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		if err := chunk([]completionChoice{}, &u); err != nil {
			return
		}
	}
	sse.done()
}
