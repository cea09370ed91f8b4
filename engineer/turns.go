package engineer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/env"
)

// Turn is one engineer turn of supervised fine-tuning data: the context the
// llm engineer sees after a stage of a recorded run (its prompt, as the
// llm strategy renders it) and a teacher strategy's proposal for that
// history, as the JSON answer the guardrails take. The engineer skill of a
// small model is distilled from such turns: no model here can write
// proposals before it is taught, so a heuristic teacher (learnability or
// rules) writes the answers it learns from.
type Turn struct {
	// Context is ContextHash of History: the split key (HeldOut), the same
	// whatever the prompt style or modules.
	Context string `json:"context"`
	// HeldOut marks a context in the held-out share (IsHeldOut): never
	// trained on, only scored.
	HeldOut bool `json:"held_out"`
	// RunID and Stage name the context: the run's history before Stage,
	// the stage proposed.
	RunID string `json:"run_id"`
	Stage int    `json:"stage"`
	// Teacher is the strategy that answered; Modules and Prompt the
	// context modules and prompt style the prompt was rendered with.
	Teacher string `json:"teacher"`
	Modules string `json:"modules"`
	Prompt  string `json:"prompt"`
	// System and User are the prompt's messages; PromptHash their
	// PromptHash.
	System     string `json:"system"`
	User       string `json:"user"`
	PromptHash string `json:"prompt_hash"`
	// Answer is the taught answer: {"rationale": "…", "config": {…}} with
	// a one-line rationale and ratios of three decimals (TeacherAnswer).
	Answer string `json:"answer"`
	// Config is the config the Answer holds; Previous the config of the
	// last stage of History (the one a fall-back keeps).
	Config   env.Config `json:"config"`
	Previous env.Config `json:"previous"`
	// History is the context's history, so that a scorer can ask a model
	// through the llm strategy's guardrails exactly as a run would.
	History *History `json:"history"`
}

// TurnOptions configure Turns.
type TurnOptions struct {
	// Teacher names the strategy whose proposals answer the turns:
	// NameLearnability or NameRules.
	Teacher string
	// Modules and Prompt (PromptFull or PromptCompact) render the prompt,
	// as LLMOptions.Modules and LLMOptions.Prompt do for the llm strategy;
	// TokenBudget bounds a full prompt (0: none).
	Modules     Modules
	Prompt      string
	TokenBudget int
	// HeldOutPercent is the share of contexts held out, in percent of the
	// hash space (IsHeldOut). 0 holds none out; at most 100.
	HeldOutPercent int
	// Feasible is the generator's dry-run (env.CheckFeasible in a run);
	// nil accepts every valid config.
	Feasible func(env.Config) error
}

// DefaultHeldOutPercent is the held-out share of `t2t engineer turns`.
const DefaultHeldOutPercent = 20

// ContextHash is the hex SHA-256 of h's canonical JSON: it identifies the
// context (the history the engineer reads) whatever the prompt style and
// modules it is rendered with.
func ContextHash(h *History) string {
	b, err := json.Marshal(h)
	if err != nil { // unreachable: a History holds no channel, func or NaN after a run
		b = []byte(fmt.Sprintf("%#v", h))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// IsHeldOut tells whether a context (its ContextHash) falls in the held-out
// share: the first 8 bytes of the hash, as an unsigned integer, modulo 100
// below percent. A hash that is not hex counts as held out, so that a
// broken key is never trained on.
func IsHeldOut(context string, percent int) bool {
	if percent <= 0 {
		return false
	}
	b, err := hex.DecodeString(context)
	if err != nil || len(b) < 8 {
		return true
	}
	return binary.BigEndian.Uint64(b[:8])%100 < uint64(percent)
}

// Turns makes the engineer turns of the recorded histories: for every
// history and every stage s ≥ 1 it has, the context "the stages before s"
// (as History.Before(s) keeps them), its prompt, and the teacher's
// proposal for it. Identical contexts (the same ContextHash) are made
// once. Options out of range wrap ErrOptions; ctx stops it between turns.
func Turns(ctx context.Context, hists []*History, o TurnOptions) ([]Turn, error) {
	switch o.Teacher {
	case NameLearnability, NameRules:
	default:
		return nil, fmt.Errorf("%w: %w", ErrOptions, &env.FieldError{Field: "teacher", Value: o.Teacher, Reason: "want learnability or rules"})
	}
	style, err := ParsePromptStyle(o.Prompt)
	if err != nil {
		return nil, err
	}
	if o.HeldOutPercent < 0 || o.HeldOutPercent > 100 {
		return nil, fmt.Errorf("%w: %w", ErrOptions, &env.FieldError{Field: "held_out_percent", Value: o.HeldOutPercent, Reason: "must be in [0,100]"})
	}
	var out []Turn
	seen := map[string]bool{}
	for _, full := range hists {
		for s := 1; s <= len(full.Stages); s++ {
			if err := engCtxErr(ctx); err != nil {
				return nil, err
			}
			h := &History{RunID: full.RunID, Budget: full.Budget, Stages: slices.Clone(full.Stages[:s])}
			key := ContextHash(h)
			if seen[key] {
				continue
			}
			seen[key] = true
			t, err := makeTurn(ctx, h, key, style, o)
			if err != nil {
				return nil, fmt.Errorf("engineer: turn of run %q stage %d: %w", h.RunID, s, err)
			}
			out = append(out, t)
		}
	}
	return out, nil
}

func makeTurn(ctx context.Context, h *History, key, style string, o TurnOptions) (Turn, error) {
	base := h.Stages[0].Config
	opts := Options{Base: &base, Feasible: o.Feasible}
	teacher, err := ParseStrategy(o.Teacher, opts)
	if err != nil {
		return Turn{}, err
	}
	prop, err := teacher.Propose(ctx, h)
	if err != nil {
		return Turn{}, err
	}
	p, err := engPromptFor(h, LLMOptions{Modules: o.Modules, Prompt: style, TokenBudget: o.TokenBudget}, base)
	if err != nil {
		return Turn{}, err
	}
	prev := engPrevious(h, base)
	answer, cfg := TeacherAnswer(o.Teacher, prev, prop.Config)
	if o.Feasible != nil && o.Feasible(cfg) != nil {
		// Rounding moved a ratio across a feasibility edge: teach the
		// teacher's config as it stands.
		answer, cfg = teacherAnswer(o.Teacher, prev, prop.Config, false)
		if err := o.Feasible(cfg); err != nil {
			// Only when the history's own last config is infeasible, which
			// no real run leaves behind: the teacher kept it.
			return Turn{}, fmt.Errorf("the teacher's config is infeasible: %w", err)
		}
	}
	return Turn{Context: key, HeldOut: IsHeldOut(key, o.HeldOutPercent), RunID: h.RunID, Stage: h.NextStage(),
		Teacher: o.Teacher, Modules: o.Modules.String(), Prompt: style, System: p.System, User: p.User, PromptHash: p.Hash,
		Answer: answer, Config: cfg, Previous: prev, History: h}, nil
}

// TeacherAnswer writes a teacher's proposal cfg (for a stage whose previous
// config is prev) as the answer taught: {"rationale": "…", "config": {…}}
// on one line, the rationale one short line naming the teacher and what
// changed (TeacherRationale), the ratios rounded to three decimals with the
// data ratios still summing to 1 (largest remainders). It returns the
// answer and the config it holds, which passes env.Config.Validate when cfg
// does.
func TeacherAnswer(teacher string, prev, cfg env.Config) (string, env.Config) {
	return teacherAnswer(teacher, prev, cfg, true)
}

// teacherAnswer is TeacherAnswer, the ratios rounded or, without round3,
// written in the fewest digits that read back the same.
func teacherAnswer(teacher string, prev, cfg env.Config, round3 bool) (string, env.Config) {
	r, num := cfg.Clone(), func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	if round3 {
		r, num = Round3(cfg), promptF3
	}
	var b strings.Builder
	b.WriteString(`{"rationale": `)
	q, _ := json.Marshal(TeacherRationale(teacher, prev, r))
	b.Write(q)
	b.WriteString(`, "config": {"sizes": [`)
	for i, s := range r.Sizes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"size": %d, "data_ratio": %s, "hole_ratio": %s, "wait_ratio": %s}`, s.Size, num(s.DataRatio), num(s.HoleRatio), num(s.WaitRatio))
	}
	fmt.Fprintf(&b, `], "agents": %d, %s"instances": %d}}`, r.Agents, agentsMaxField(prev, r), r.Instances)
	return b.String(), r
}

// Round3 rounds c's ratios to three decimals; the data ratios are
// apportioned in thousandths by largest remainders, so that they still sum
// to 1 (when they summed to 1 before).
func Round3(c env.Config) env.Config {
	r := c.Clone()
	type rem struct {
		i    int
		frac float64
	}
	total := 0.0
	for _, s := range c.Sizes {
		total += s.DataRatio
	}
	milli := make([]int, len(r.Sizes))
	rems := make([]rem, len(r.Sizes))
	sum := 0
	for i, s := range r.Sizes {
		x := s.DataRatio * 1000
		if total > 0 {
			x = s.DataRatio / total * 1000
		}
		milli[i] = int(math.Floor(x))
		rems[i] = rem{i, x - math.Floor(x)}
		sum += milli[i]
	}
	slices.SortStableFunc(rems, func(a, b rem) int {
		switch {
		case a.frac > b.frac:
			return -1
		case a.frac < b.frac:
			return 1
		}
		return 0
	})
	for k := 0; total > 0 && sum < 1000 && k < len(rems); k++ {
		milli[rems[k].i]++
		sum++
	}
	for i := range r.Sizes {
		s := &r.Sizes[i]
		s.DataRatio = float64(milli[i]) / 1000
		s.HoleRatio = math.Round(s.HoleRatio*1000) / 1000
		s.WaitRatio = math.Round(s.WaitRatio*1000) / 1000
	}
	return r
}

// TeacherRationale is the one-line rationale of a taught answer: the
// teacher's name, the size given the most data, and the sizes made harder
// (hole plus wait ratio up) or easier (down) than in prev, e.g.
// "learnability: most data on size 4; harder 3, 4; easier 6".
func TeacherRationale(teacher string, prev, cfg env.Config) string {
	var b strings.Builder
	b.WriteString(teacher + ":")
	top := -1
	for i, s := range cfg.Sizes {
		if top < 0 || s.DataRatio > cfg.Sizes[top].DataRatio {
			top = i
		}
	}
	if top >= 0 {
		fmt.Fprintf(&b, " most data on size %d", cfg.Sizes[top].Size)
	}
	var harder, easier []string
	for _, s := range cfg.Sizes {
		j := slices.IndexFunc(prev.Sizes, func(p env.SizeConfig) bool { return p.Size == s.Size })
		if j < 0 {
			continue
		}
		d := s.HoleRatio + s.WaitRatio - prev.Sizes[j].HoleRatio - prev.Sizes[j].WaitRatio
		switch {
		case d > 0.0005:
			harder = append(harder, strconv.Itoa(s.Size))
		case d < -0.0005:
			easier = append(easier, strconv.Itoa(s.Size))
		}
	}
	if len(harder) > 0 {
		b.WriteString("; harder " + strings.Join(harder, ", "))
	}
	if len(easier) > 0 {
		b.WriteString("; easier " + strings.Join(easier, ", "))
	}
	if len(harder)+len(easier) == 0 {
		b.WriteString("; difficulty kept")
	}
	return b.String()
}

// ReadHistories decodes JSON values of History one after another (JSON
// Lines, as scripts/engineer-histories/record.sh writes them, or indented
// values back to back). Unknown fields are an error, as in ReadHistory.
func ReadHistories(r io.Reader) ([]*History, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var out []*History
	for {
		h := new(History)
		err := dec.Decode(h)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("history %d: %w", len(out)+1, env.JSONReason(err))
		}
		out = append(out, h)
	}
}

// ReadTurns decodes the JSON Lines of turns that WriteTurns writes.
// Unknown fields are an error.
func ReadTurns(r io.Reader) ([]Turn, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var out []Turn
	for {
		var t Turn
		err := dec.Decode(&t)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("turn %d: %w", len(out)+1, env.JSONReason(err))
		}
		if t.History == nil || len(t.History.Stages) == 0 {
			return nil, fmt.Errorf("turn %d: %w: no history", len(out)+1, ErrSchema)
		}
		out = append(out, t)
	}
}

// WriteTurns writes turns as JSON Lines.
func WriteTurns(w io.Writer, turns []Turn) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for i := range turns {
		if err := enc.Encode(&turns[i]); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// TrainingTurns returns the turns that are not held out, checking the
// split again from each turn's History (a file edited by hand cannot slip a
// held-out context in): a turn whose Context is not its history's
// ContextHash is an error wrapping ErrSchema.
func TrainingTurns(turns []Turn, heldOutPercent int) ([]Turn, error) {
	var out []Turn
	for i, t := range turns {
		if got := ContextHash(t.History); got != t.Context {
			return nil, fmt.Errorf("turn %d: %w: context %s is not its history's hash %s", i+1, ErrSchema, t.Context, got)
		}
		if t.HeldOut || IsHeldOut(t.Context, heldOutPercent) {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}
