package env

import "fmt"

// Prompt styles of PromptStyle.
const (
	// PromptFull is the paper's prompt: rules, objective, example.
	PromptFull = "full"
	// PromptCompact is PromptOptions.Compact: the map, the coordinates and
	// the answer format, for small models trained from scratch.
	PromptCompact = "compact"
)

// PromptStyleHelp describes the prompt styles for a command line.
const PromptStyleHelp = "prompt style: full (the paper's prompt: rules, objective, example) or compact (map, coordinates and the answer format: for small models trained from scratch; use the same style the checkpoint was fine-tuned with)"

// PromptStyle returns the prompt options of a style, PromptFull or
// PromptCompact; another is a *FieldError.
func PromptStyle(style string) (PromptOptions, error) {
	o := DefaultPromptOptions()
	switch style {
	case PromptFull:
	case PromptCompact:
		o.Compact = true
	default:
		return o, &FieldError{Field: "prompt", Value: fmt.Sprintf("%q", style), Reason: "want full or compact"}
	}
	return o, nil
}
