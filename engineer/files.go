package engineer

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/limits"
)

// decodeFile reads the text file path within limits.Text and decodes it.
// A file that cannot be read is a *fielderr.Error whose message is the read
// error's; one that does not decode, a *fielderr.Error naming the file.
func decodeFile[T any](path string, decode func([]byte) (T, error)) (T, error) {
	var zero T
	b, err := limits.ReadFile(path, limits.Text)
	if err != nil {
		return zero, &fielderr.Error{Err: err}
	}
	v, err := decode(b)
	if err != nil {
		return zero, &fielderr.Error{File: path, Err: err}
	}
	return v, nil
}

// ReadHistoryFile reads a history file as `t2t engineer propose
// --dump-history` writes it. A file that cannot be read, or is not a
// history, is a *fielderr.Error (naming the file in the second case).
func ReadHistoryFile(path string) (*History, error) {
	return decodeFile(path, ReadHistory)
}

// ReadHistoriesFile reads a file of histories as ReadHistories decodes
// them. Its errors are ReadHistoryFile's.
func ReadHistoriesFile(path string) ([]*History, error) {
	return decodeFile(path, func(b []byte) ([]*History, error) { return ReadHistories(bytes.NewReader(b)) })
}

// ReadTurnsFile reads a turns file (`t2t engineer turns --out`). Its
// errors are ReadHistoryFile's.
func ReadTurnsFile(path string) ([]Turn, error) {
	return decodeFile(path, func(b []byte) ([]Turn, error) { return ReadTurns(bytes.NewReader(b)) })
}

// ReadScoredTurns reads a turns file and keeps the turns to score, as
// ScoredTurns does (the held-out ones, or all); a file with none is a
// *fielderr.Error naming it.
func ReadScoredTurns(path string, all bool) ([]Turn, error) {
	turns, err := ReadTurnsFile(path)
	if err != nil {
		return nil, err
	}
	pick := ScoredTurns(turns, all)
	if len(pick) == 0 {
		return nil, &fielderr.Error{File: path, Reason: "no held-out turn to score (--all scores every turn)"}
	}
	return pick, nil
}

// ReadTrainingTurns reads a turns file and returns its first n training
// turns (TrainingTurns with heldOutPercent), or all of them when n < 0. A
// file with fewer is a *fielderr.Error about flag --engineer-turns.
func ReadTrainingTurns(path string, heldOutPercent, n int) ([]Turn, error) {
	all, err := ReadTurnsFile(path)
	if err != nil {
		return nil, err
	}
	train, err := TrainingTurns(all, heldOutPercent)
	if err != nil {
		return nil, &fielderr.Error{File: path, Err: err}
	}
	if n < 0 {
		return train, nil
	}
	if len(train) < n {
		return nil, &fielderr.Error{Flag: "engineer-turns", Value: n,
			Reason: fmt.Sprintf("%s has %d training turns (%d held out)", path, len(train), len(all)-len(train))}
	}
	return train[:n], nil
}

// BuildStyledPrompt builds h's prompt in style (PromptFull or
// PromptCompact): BuildPrompt within tokenBudget, or BuildCompactPrompt.
func BuildStyledPrompt(h *History, mods Modules, style string, tokenBudget int) (Prompt, error) {
	if style == PromptFull {
		return BuildPrompt(h, mods, tokenBudget)
	}
	return BuildCompactPrompt(h, mods), nil
}

// WriteVerdicts prints one line per scored turn (`t2t engineer score -v`):
// its run, stage, verdict and reason, on one line of at most 160 runes.
func WriteVerdicts(w io.Writer, per []TurnScore) error {
	var b strings.Builder
	for _, p := range per {
		fmt.Fprintf(&b, "run %s stage %d: %s (%s)\n", p.RunID, p.Stage, p.Verdict(), oneLine(p.Reason, 160))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// oneLine is s with its runs of white space made one space, cut to n runes
// (and an ellipsis) when longer.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}
