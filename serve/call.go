package serve

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/t2t-lab/t2t/learner/engine"
)

// genCall is one generation request after its endpoint has parsed it: the job, the ids its
// answer carries, and its log. Both endpoints build one with newGenCall and run it with run.
type genCall struct {
	c            *served
	job          *genJob
	id, model    string
	fp           string
	created      int64
	promptTokens int
	log          *slog.Logger
}

// genSpec is what an endpoint parsed: the rows to sample (each prompt repeated n times), the
// sampling, the top log-probs per token, stop strings, seed and the adapter.
type genSpec struct {
	ad    *adapter
	model string
	rows  [][]int32
	sc    engine.SampleConfig
	top   int
	stop  []string
	seed  *int64
}

// newGenCall builds the job of spec on the served model c; idPrefix names the answer's id
// ("cmpl", "chatcmpl"); logAttrs are added to the request's log.
func (s *Server) newGenCall(c *served, spec genSpec, idPrefix string, stream bool, logAttrs ...any) *genCall {
	job := &genJob{lm: c.lm, use: s.adapterUse(c.lm, spec.ad), key: spec.ad, rows: spec.rows, sc: spec.sc, top: spec.top,
		stops: newStopMatcher(spec.stop), seed: s.requestSeed(spec.seed)}
	job.sc.StopTokens = c.lm.Stop
	g := &genCall{c: c, job: job, id: s.newID(idPrefix), model: spec.model, fp: fmt.Sprintf("t2t-r%d", c.revision),
		created: s.opt.Now().Unix()}
	for _, p := range spec.rows {
		g.promptTokens += len(p)
	}
	g.log = s.opt.Logger.With(append([]any{"id", g.id, "model", spec.model, "rows", len(spec.rows),
		"max_tokens", spec.sc.MaxNewTokens, "stream", stream}, logAttrs...)...)
	return g
}

// run admits the call and runs its job; ok is false when an error answer was written (or the
// client left). Without start it returns the rows for the endpoint to answer with; the model is
// free by then. With start it opens an event stream, lets start send the endpoint's first
// chunks and set the job's stream callback, and returns the stream for the closing chunks:
// the caller ends it with done, then finish.
func (s *Server) run(w http.ResponseWriter, r *http.Request, g *genCall, start func(*sse) error) (res []genRow, stream *sse, ok bool) {
	release, ok := s.admit(w, r, g.job, g.log)
	if !ok {
		return nil, nil, false
	}
	defer release()
	if start != nil {
		var err error
		if stream, err = newSSE(w); err != nil {
			s.genFailed(w, g.log, err)
			return nil, nil, false
		}
		if err := start(stream); err != nil {
			stream.finish()
			return nil, nil, false
		}
	}
	res, err := g.job.run(r.Context())
	release() // the model is free: the answer's writing does not hold it
	switch {
	case err != nil && stream != nil:
		stream.fail(g.log, err)
		stream.finish()
		return nil, nil, false
	case err != nil:
		s.genFailed(w, g.log, err)
		return nil, nil, false
	}
	return res, stream, true
}

// usageOf counts the tokens of a finished call.
func (g *genCall) usageOf(res []genRow) usage {
	u := usage{PromptTokens: g.promptTokens}
	for i := range res {
		u.CompletionTokens += len(res[i].toks)
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}
