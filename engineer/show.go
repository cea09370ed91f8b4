package engineer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/t2t-lab/t2t/env"
)

// ReadHistory decodes a History as `t2t engineer propose --dump-history`
// writes it. Unknown fields are an error: a history from another tool is
// not silently half-read.
func ReadHistory(b []byte) (*History, error) {
	h := new(History)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(h); err != nil {
		return nil, env.JSONReason(err)
	}
	return h, nil
}

// Before keeps only the stages before stage, as the history was when that
// stage was proposed.
func (h *History) Before(stage int) {
	var keep []StageResult
	for _, s := range h.Stages {
		if s.Stage < stage {
			keep = append(keep, s)
		}
	}
	h.Stages = keep
}

// WritePrompt prints the engineer prompt p (built with mods) for a reader.
func WritePrompt(w io.Writer, p Prompt, mods Modules) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n=== prompt: modules %s, hash %s, ~%d tokens", mods, p.Hash, p.Tokens)
	if p.OmittedExamples+p.OmittedStages > 0 {
		fmt.Fprintf(&b, " (%d examples and %d stages omitted for the budget)", p.OmittedExamples, p.OmittedStages)
	}
	fmt.Fprintf(&b, " ===\n--- system ---\n%s\n--- user ---\n%s\n", p.System, p.User)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteProposal prints a proposal for stage by strategy: the config hash,
// the rationale, whether it fell back, every attempt's verdict and the
// diff from prev, the config it replaces.
func WriteProposal(w io.Writer, strategy string, stage int, prop Proposal, prev env.Config) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n=== proposal (%s) for stage %d: config %s ===\nrationale: %s\n", strategy, stage, prop.Config.Hash(), prop.Rationale)
	if prop.Fallback {
		fmt.Fprintln(&b, "fallback: the previous config is kept")
	}
	accepted := -1
	for i, a := range prop.Attempts {
		verdict := "rejected"
		if a.Accepted {
			verdict, accepted = "accepted", i
		}
		fmt.Fprintf(&b, "attempt %d: %s: %s\n", i, verdict, a.Reason)
	}
	switch {
	case accepted >= 0:
		fmt.Fprintf(&b, "audit: accepted by the guardrails at attempt %d of %d\n", accepted, len(prop.Attempts))
	case len(prop.Attempts) > 0:
		fmt.Fprintf(&b, "audit: rejected, all %d attempt(s)\n", len(prop.Attempts))
	}
	if d := prop.Config.Diff(prev); d != "" {
		fmt.Fprintf(&b, "diff from the stage %d config:\n", stage-1)
		for _, line := range strings.Split(d, "\n") {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	} else {
		fmt.Fprintln(&b, "no change from the previous config")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
