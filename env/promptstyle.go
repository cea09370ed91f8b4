package env

import "fmt"

// Prompt styles of PromptStyle.
const (
	// PromptFull is the paper's prompt: rules, objective, example.
	PromptFull = "full"
	// PromptCompact is PromptOptions.Compact: the map, the coordinates and
	// the answer format, for small models trained from scratch.
	PromptCompact = "compact"
	// PromptCells is PromptCompact asking for each agent's cells (AnswerCells): the holes,
	// starts and goals listed as [row,col] cells and no drawn map, so that a small model writes
	// every cell of its plan as the prompt spells it instead of tracking where its moves lead.
	PromptCells = "cells"
	// PromptSteps is PromptCells answered one line per time step, every agent's cell at t on it
	// (AnswerSteps): what an agent must not collide with at t, the other agents' cells at t and
	// t-1, is on that line and the one before, where in the cells form it is a whole agent line
	// away.
	PromptSteps = "steps"
	// PromptGrid is PromptCompact with the map drawn one token per cell (GridMap): "r2 . H . .",
	// the agents only in the coordinate list.
	PromptGrid = "grid"
)

// PromptStyleWant is the reason an unknown prompt style is refused with, wherever a flag or
// field names one.
const PromptStyleWant = "want full, compact, cells, steps or grid"

// PromptStyleHelp describes the prompt styles for a command line.
const PromptStyleHelp = "prompt style: full (the paper's prompt: rules, objective, example) or compact (map, coordinates and the answer format: for small models trained from scratch) or cells (compact with holes, starts and goals as [row,col] cells, answered by each agent's cells: Agent i: [r,c] [r,c] ...) or steps (the cells prompt answered one line per time step, every agent's cell at t: Tt: [r,c] [r,c] ...) or grid (compact with the map one token per cell: r2 . H . .); use the style the checkpoint was fine-tuned with"

// PromptStyle returns the prompt options of a style, PromptFull, PromptCompact, PromptCells,
// PromptSteps or PromptGrid;
// another is a *FieldError.
func PromptStyle(style string) (PromptOptions, error) {
	o := DefaultPromptOptions()
	switch style {
	case PromptFull:
	case PromptCompact:
		o.Compact = true
	case PromptCells:
		o.Compact, o.Format = true, AnswerCells
	case PromptSteps:
		o.Compact, o.Format = true, AnswerSteps
	case PromptGrid:
		o.Compact, o.GridMap = true, true
	default:
		return o, &FieldError{Field: "prompt", Value: fmt.Sprintf("%q", style), Reason: PromptStyleWant}
	}
	return o, nil
}
