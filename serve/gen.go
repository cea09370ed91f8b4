package serve

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// genToken is one generated token with its log-prob and alternatives.
type genToken struct {
	id   int32
	lp   float32
	top  []engine.TokenLogProb
	text int // length of the row's text before this token
}

// genRow is one completion being generated.
type genRow struct {
	dec      utf8Stream
	text     []byte // decoded text so far (cut before a stop string once one is found)
	searched int    // text already searched for stop strings
	emitted  int    // text already streamed
	toks     []genToken
	sent     int    // toks already streamed
	finish   string // "", "stop" or "length"
}

// genJob is one request's generation: rows = prompts × n, prompt-major.
type genJob struct {
	lm     *textpolicy.LM
	rows   [][]int32 // prompt ids per row
	sc     engine.SampleConfig
	top    int // alternatives per token (0: none)
	stops  stopMatcher
	seed   uint64
	stream func(row int, g *genRow, final bool) error // nil: no streaming
	// use readies the model inside the generation slot (attaches the LoRA adapter the request
	// names); nil: nothing to do.
	use func() error
	// key is the adapter the job runs with (nil: the base model): the gate runs jobs of one
	// key together.
	key *adapter
}

// run generates every row. ctx ends the generation early (client gone).
func (j *genJob) run(ctx context.Context) ([]genRow, error) {
	if j.use != nil {
		if err := j.use(); err != nil {
			return nil, err
		}
	}
	rows := make([]genRow, len(j.rows))
	var streamErr error
	rng := rand.New(rand.NewPCG(j.seed, 0xc0de))
	_, err := j.lm.GenerateStreamContext(ctx, j.rows, j.sc, j.top, rng, func(ev engine.TokenEvent) bool {
		if streamErr != nil || ctx.Err() != nil {
			return true
		}
		g := &rows[ev.Row]
		j.take(g, ev)
		if j.stream != nil {
			if err := j.stream(ev.Row, g, g.finish != ""); err != nil {
				streamErr = err
				return true
			}
		}
		return g.finish != ""
	})
	if err != nil {
		return nil, err
	}
	if streamErr != nil {
		return nil, streamErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := j.finishRows(rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// take appends a sampled token to its row and its text; a stop token or
// stop string finishes the row ("stop").
func (j *genJob) take(g *genRow, ev engine.TokenEvent) {
	t := genToken{id: ev.Token, lp: ev.LogProb, text: len(g.text)}
	if len(ev.Top) > 0 {
		t.top = append([]engine.TokenLogProb(nil), ev.Top...)
	}
	g.toks = append(g.toks, t)
	switch {
	case j.lm.IsStop(ev.Token):
		g.text = g.dec.flush(g.text)
		g.finish = "stop"
	case j.lm.Tok.IsSpecial(ev.Token):
		// control tokens are not part of the text (skip_special_tokens)
	default:
		g.text = g.dec.write(g.text, j.lm.Tok.DecodeBytes([]int32{ev.Token}))
		if k := j.stops.find(string(g.text), g.searched); k >= 0 {
			g.text = g.text[:k]
			g.finish = "stop"
		}
		g.searched = len(g.text)
	}
}

// finishRows ends the rows the generation left unfinished ("length",
// or "stop" when the flushed text holds a stop string) and streams their end.
func (j *genJob) finishRows(rows []genRow) error {
	for i := range rows {
		g := &rows[i]
		if g.finish != "" {
			continue
		}
		g.finish = "length"
		g.text = g.dec.flush(g.text)
		if k := j.stops.find(string(g.text), g.searched); k >= 0 {
			g.text = g.text[:k]
			g.finish = "stop"
		}
		if j.stream != nil {
			if err := j.stream(i, g, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// pending returns the text a stream may send now and the tokens that go with it, and marks
// them sent: all of it when final, else all but what could still become a stop string.
func (g *genRow) pending(stops stopMatcher, final bool) (string, []genToken) {
	end := len(g.text)
	if !final {
		end -= stops.holdBack(string(g.text))
	}
	var text string
	if end > g.emitted {
		text = string(g.text[g.emitted:end])
		g.emitted = end
	}
	var toks []genToken
	if text != "" || final {
		toks = g.toks[g.sent:]
		g.sent = len(g.toks)
	}
	return text, toks
}

// tokenString is a token as log-probs show it: its text (control tokens too), or
// "token_id:<id>" when asked for ids.
func tokenString(lm *textpolicy.LM, id int32, asIDs bool) (string, []int) {
	b := lm.Tok.DecodeBytes([]int32{id})
	bs := make([]int, len(b))
	for i, c := range b {
		bs[i] = int(c)
	}
	if asIDs {
		return fmt.Sprintf("token_id:%d", id), bs
	}
	return string(b), bs
}
