package engineer

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/env"
)

// Prompt styles of LLMOptions.Prompt, as `--engineer-prompt` takes them.
const (
	// PromptFull is BuildPrompt's prompt: the paper's modules in prose and
	// Markdown tables (about 2k tokens with F,G,H0,T).
	PromptFull = "full"
	// PromptCompact is BuildCompactPrompt's: the same modules in a few
	// short lines, for small models fine-tuned on engineer turns.
	PromptCompact = "compact"
)

// ParsePromptStyle checks s is PromptFull or PromptCompact ("" is full)
// and returns it canonical.
func ParsePromptStyle(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", PromptFull:
		return PromptFull, nil
	case PromptCompact:
		return PromptCompact, nil
	}
	return "", fmt.Errorf("%w: %w", ErrOptions, &env.FieldError{Field: "llm.prompt", Value: s, Reason: "want full or compact"})
}

// promptSystemCompact is the compact prompt's system message.
const promptSystemCompact = "You are the environment engineer of a GRPO run on MAPF-FrozenLake (k agents walk to their goals on an N×N grid with holes). After each stage you write the next stage's generator config as one JSON object."

// promptGuidelinesCompact is the compact G module: the full G in one line.
const promptGuidelinesCompact = "G: put most data where val valid is near 50%; keep some data at every size; raise hole and wait where valid is high, lower them where it is near 0, by 0.1 or less per stage.\n"

// BuildCompactPrompt renders the engineer's prompt for the next stage of h
// in the compact style: the modules m in a few lines (T: the stage and the
// budget; G: the guidelines in one line; H: one line per past stage with
// its validation valid rate; F: per size the validation and training valid
// rates and the most frequent failure; S: the previous rationale on one
// line), the current config as a table, and the answer's schema in one
// line. Failure examples are not shown. Like BuildPrompt it is
// deterministic, and without stages the current config is
// env.DefaultConfig().
func BuildCompactPrompt(h *History, m Modules) Prompt {
	return engCompactPrompt(h, m, env.DefaultConfig())
}

func engCompactPrompt(h *History, m Modules, base env.Config) Prompt {
	if h == nil {
		h = &History{}
	}
	cur := engPrevious(h, base)
	next := h.NextStage()
	var b strings.Builder
	fmt.Fprintf(&b, "stage %d", next)
	if m.T && h.Budget.TotalStages > 0 {
		fmt.Fprintf(&b, " of %d", h.Budget.TotalStages)
	}
	fmt.Fprintf(&b, "; agents %s; instances %d\n", cur.AgentsText(), cur.Instances)
	if m.G {
		b.WriteString(promptGuidelinesCompact)
	}
	if m.H {
		var parts []string
		for i := range h.Stages {
			if i == 0 && m.HistoryNoRound0 {
				continue
			}
			t := engTotal(h.Stages[i].Val)
			parts = append(parts, fmt.Sprintf("s%d %s", i, compactPct(t.Valid, t.Episodes)))
		}
		if len(parts) > 0 {
			b.WriteString("H: val valid% " + strings.Join(parts, ", ") + "\n")
		}
	}
	last := h.Last()
	showF := m.F && last != nil
	if showF {
		t := engTotal(last.Val)
		fmt.Fprintf(&b, "F: stage %d val valid %s%%\n", len(h.Stages)-1, compactPct(t.Valid, t.Episodes))
	}
	b.WriteString("size data hole wait")
	if showF {
		b.WriteString(" val% train% fail")
	}
	b.WriteString("\n")
	for _, s := range cur.Sizes {
		fmt.Fprintf(&b, "%d %s %s %s", s.Size, promptF3(s.DataRatio), promptF3(s.HoleRatio), promptF3(s.WaitRatio))
		if showF {
			v, _ := engStats(last.Val, s.Size)
			tr, _ := engStats(last.Train, s.Size)
			fmt.Fprintf(&b, " %s %s %s", compactPct(v.Valid, v.Episodes), compactPct(tr.Valid, tr.Episodes), compactTopFailure(v, tr))
		}
		b.WriteString("\n")
	}
	if m.S && last != nil && strings.TrimSpace(last.Rationale) != "" {
		b.WriteString("S: " + promptOneLine(engTruncate(last.Rationale, 200)) + "\n")
	}
	b.WriteString(compactAnswerLine(cur))
	p := Prompt{System: promptSystemCompact, User: b.String()}
	p.Tokens = ApproxTokens(p.System) + ApproxTokens(p.User)
	p.Hash = PromptHash(p.System, p.User)
	return p
}

// compactAnswerLine is the compact prompt's answer schema; agents_max is
// in it only when cur has an agent range.
func compactAnswerLine(cur env.Config) string {
	agents := `"agents": k, `
	if cur.HasAgentRange() {
		agents += `"agents_max": m, `
	}
	return `answer: {"rationale": "<one line>", "config": {"sizes": [{"size": N, "data_ratio": x, "hole_ratio": x, "wait_ratio": x} for each size above], ` + agents + `"instances": n}}` + "\n"
}

// compactPct is 100·k/n with one decimal, "-" without episodes.
func compactPct(k, n int64) string {
	if n <= 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(k)/float64(n), 'f', 1, 64)
}

// compactTopFailure names the most frequent failure category of the
// validation stats, else of the training stats; "-" without failures.
func compactTopFailure(stats ...SizeStats) string {
	for _, s := range stats {
		best, n := -1, int64(0)
		for c, k := range s.Categories {
			if k > n {
				best, n = c, k
			}
		}
		if best >= 0 {
			return env.Category(best).String()
		}
	}
	return "-"
}

// engPromptFor renders the prompt of the llm strategy's options o: the
// compact style, or the full one within o.TokenBudget.
func engPromptFor(h *History, o LLMOptions, base env.Config) (Prompt, error) {
	if o.Prompt == PromptCompact {
		return engCompactPrompt(h, o.Modules, base), nil
	}
	return engBuildPrompt(h, o.Modules, o.TokenBudget, base)
}
