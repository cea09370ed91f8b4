package engineer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/t2t-lab/t2t/env"
)

// Extraction limits.
const (
	// MaxAnswerBytes is the most bytes of an answer (after think blocks are
	// removed) that ExtractJSON searches.
	MaxAnswerBytes = 256 << 10
	// extractMaxStarts bounds the '{' positions tried, so that prose full
	// of braces cannot make the search quadratic.
	extractMaxStarts = 512
)

// StripThink removes reasoning from a model answer: every
// <think>…</think> block; everything before a </think> that has no
// <think> before it (chat templates often open the block in the prompt);
// and everything after a <think> that is never closed (the answer ended
// while thinking). Tags match case-insensitively. The second result is
// true when an unclosed block was cut.
func StripThink(s string) (string, bool) {
	const open, closeTag = "<think>", "</think>"
	lower := extractASCIILower(s) // same byte offsets as s, unlike strings.ToLower
	var b strings.Builder
	pos := 0
	// An orphan close: thinking ran from the start.
	if c := strings.Index(lower, closeTag); c >= 0 {
		if o := strings.Index(lower, open); o < 0 || o > c {
			pos = c + len(closeTag)
		}
	}
	for {
		o := strings.Index(lower[pos:], open)
		if o < 0 {
			b.WriteString(s[pos:])
			return b.String(), false
		}
		b.WriteString(s[pos : pos+o])
		c := strings.Index(lower[pos+o+len(open):], closeTag)
		if c < 0 {
			return b.String(), true
		}
		pos = pos + o + len(open) + c + len(closeTag)
	}
}

// extractASCIILower lowers ASCII letters only, keeping every byte offset.
func extractASCIILower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// ExtractJSON finds the JSON object of a model answer. It strips think
// blocks (StripThink), then looks for complete JSON objects in the rest,
// left to right, outside one another: markdown fences and text around the
// object are ignored. A balanced {…} span that is not valid JSON is skipped
// whole (its inner objects are not candidates) and its syntax error is
// reported when nothing else is found. An object that never closes (an
// answer cut short, out of tokens) is no answer, and neither are the
// complete pieces inside it, such as one size's {…} of a truncated config:
// after it only an object with a top-level "config" key (a fresh answer
// after a stray brace) counts. One object is returned as it stands. With several,
// the only one whose top level has a "config" key is returned; otherwise
// the answer is ambiguous. Errors wrap ErrNoJSON or ErrAmbiguousJSON.
func ExtractJSON(answer string) (string, error) {
	s, unclosed := StripThink(answer)
	if len(s) > MaxAnswerBytes {
		s = s[:MaxAnswerBytes]
	}
	var found []string
	var firstBad error
	starts, openAt := 0, -1
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		if starts++; starts > extractMaxStarts {
			break
		}
		end := extractObjectEnd(s, i)
		if end < 0 {
			if openAt < 0 {
				openAt = i
			}
			continue
		}
		if openAt >= 0 && !extractHasConfig(s[i:end]) {
			i = end - 1 // a piece of the object that never closes
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(s[i:end]), &v); err != nil {
			// Balanced but broken: skip it whole, so that the pieces of a
			// broken object are not taken for the answer.
			if firstBad == nil {
				firstBad = fmt.Errorf("the object at byte %d is not valid JSON: %w", i, err)
			}
		} else {
			found = append(found, s[i:end])
		}
		i = end - 1
	}
	switch len(found) {
	case 0:
		return "", extractNoJSON(firstBad, openAt, unclosed)
	case 1:
		return found[0], nil
	}
	var withConfig []string
	for _, f := range found {
		if extractHasConfig(f) {
			withConfig = append(withConfig, f)
		}
	}
	if len(withConfig) == 1 {
		return withConfig[0], nil
	}
	return "", fmt.Errorf("%w: %d objects, %d with a \"config\" key", ErrAmbiguousJSON, len(found), len(withConfig))
}

// extractNoJSON is ExtractJSON's error when it found no object: the first
// balanced but broken object's syntax error, else the object that never
// closes (openAt ≥ 0), else a think block the answer ended in.
func extractNoJSON(firstBad error, openAt int, unclosedThink bool) error {
	switch {
	case firstBad != nil:
		return fmt.Errorf("%w: %w", ErrNoJSON, firstBad)
	case openAt >= 0:
		return fmt.Errorf("%w: the object that opens at byte %d never closes (the answer was cut short: out of tokens?)", ErrNoJSON, openAt)
	case unclosedThink:
		return fmt.Errorf("%w: the answer ended inside an unclosed <think> block (out of tokens?)", ErrNoJSON)
	}
	return ErrNoJSON
}

// extractHasConfig reports whether the JSON object obj has a top-level
// "config" key (false for text that is not a JSON object).
func extractHasConfig(obj string) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal([]byte(obj), &top) != nil {
		return false
	}
	_, ok := top["config"]
	return ok
}

// extractObjectEnd returns the index after the '}' that balances the '{'
// at s[i], skipping braces inside JSON strings, or -1.
func extractObjectEnd(s string, i int) int {
	depth := 0
	inStr := false
	for j := i; j < len(s); j++ {
		c := s[j]
		if inStr {
			switch c {
			case '\\':
				j++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				if c != '}' {
					return -1
				}
				return j + 1
			}
			if depth < 0 {
				return -1
			}
		}
	}
	return -1
}

// Answer is a decoded engineer answer.
type Answer struct {
	Rationale string
	Config    env.Config
	// HasAgentsMax says the answer wrote config.agents_max (an optional
	// field): without it, the llm strategy keeps the previous config's
	// range.
	HasAgentsMax bool
}

// The strict wire form of an answer; pointers tell missing fields apart.
type wireSize struct {
	Size      *int     `json:"size"`
	DataRatio *float64 `json:"data_ratio"`
	HoleRatio *float64 `json:"hole_ratio"`
	WaitRatio *float64 `json:"wait_ratio"`
}

type wireConfig struct {
	Sizes     []wireSize `json:"sizes"`
	Agents    *int       `json:"agents"`
	AgentsMax *int       `json:"agents_max"`
	Instances *int       `json:"instances"`
}

type wireAnswer struct {
	Rationale *string     `json:"rationale"`
	Config    *wireConfig `json:"config"`
}

// ParseAnswer extracts (ExtractJSON) and decodes an answer against the
// output schema: {"rationale": string, "config": {"sizes": [{"size": int,
// "data_ratio": number, "hole_ratio": number, "wait_ratio": number}, ...],
// "agents": int, "instances": int}}, and optionally "agents_max": int in
// the config (Answer.HasAgentsMax). Every other field is required, unknown
// fields and keys in the wrong case are rejected, sizes must be non-empty.
// The config is not validated or projected here (values out of range are
// the caller's business). Schema errors wrap ErrSchema and, where a field
// is to blame, an *env.FieldError.
func ParseAnswer(answer string) (Answer, error) {
	obj, err := ExtractJSON(answer)
	if err != nil {
		return Answer{}, err
	}
	return decodeAnswer(obj)
}

func decodeAnswer(obj string) (Answer, error) {
	// Key names first: it names the field path of an unknown key.
	if err := schemaExactKeys([]byte(obj)); err != nil {
		return Answer{}, err
	}
	var w wireAnswer
	dec := json.NewDecoder(strings.NewReader(obj))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Answer{}, schemaDecodeErr(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Answer{}, fmt.Errorf("%w: trailing data after the object", ErrSchema)
	}
	missing := func(f string) error {
		return fmt.Errorf("%w: %w", ErrSchema, &env.FieldError{Field: f, Value: "(missing)", Reason: "required field"})
	}
	if w.Rationale == nil {
		return Answer{}, missing("rationale")
	}
	if w.Config == nil {
		return Answer{}, missing("config")
	}
	if w.Config.Agents == nil {
		return Answer{}, missing("config.agents")
	}
	if w.Config.Instances == nil {
		return Answer{}, missing("config.instances")
	}
	if len(w.Config.Sizes) == 0 {
		return Answer{}, fmt.Errorf("%w: %w", ErrSchema, &env.FieldError{Field: "config.sizes", Value: "[]", Reason: "must list the sizes"})
	}
	a := Answer{Rationale: *w.Rationale, Config: env.Config{Agents: *w.Config.Agents, Instances: *w.Config.Instances}}
	if w.Config.AgentsMax != nil {
		a.Config.AgentsMax, a.HasAgentsMax = *w.Config.AgentsMax, true
	}
	for i, s := range w.Config.Sizes {
		for _, f := range []struct {
			name string
			ok   bool
		}{{"size", s.Size != nil}, {"data_ratio", s.DataRatio != nil}, {"hole_ratio", s.HoleRatio != nil}, {"wait_ratio", s.WaitRatio != nil}} {
			if !f.ok {
				return Answer{}, missing(fmt.Sprintf("config.sizes[%d].%s", i, f.name))
			}
		}
		a.Config.Sizes = append(a.Config.Sizes, env.SizeConfig{Size: *s.Size, DataRatio: *s.DataRatio, HoleRatio: *s.HoleRatio, WaitRatio: *s.WaitRatio})
	}
	return a, nil
}

func schemaDecodeErr(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "(top level)"
		}
		return fmt.Errorf("%w: %w", ErrSchema, &env.FieldError{Field: field, Value: te.Value, Reason: "want a JSON value of Go type " + te.Type.String()})
	}
	return fmt.Errorf("%w: %w", ErrSchema, err)
}

// schemaExactKeys rejects unknown keys, including those that encoding/json
// would match case-insensitively, naming their path. Parts that are not
// objects are left to the struct decoder.
func schemaExactKeys(obj []byte) error {
	check := func(prefix string, raw json.RawMessage, known ...string) (map[string]json.RawMessage, error) {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil, nil // not an object: the struct decode judged it
		}
		var bad []string
		for k := range m {
			if !slices.Contains(known, k) {
				bad = append(bad, k)
			}
		}
		if len(bad) == 0 {
			return m, nil
		}
		slices.Sort(bad)
		return nil, fmt.Errorf("%w: %w", ErrSchema, &env.FieldError{Field: prefix + bad[0], Value: "(any)",
			Reason: "unknown field (names are case-sensitive: " + strings.Join(known, ", ") + ")"})
	}
	top, err := check("", obj, "rationale", "config")
	if err != nil || top == nil {
		return err
	}
	cfg, err := check("config.", top["config"], "sizes", "agents", "agents_max", "instances")
	if err != nil || cfg == nil {
		return err
	}
	var sizes []json.RawMessage
	if json.Unmarshal(cfg["sizes"], &sizes) == nil {
		for i, s := range sizes {
			if _, err := check(fmt.Sprintf("config.sizes[%d].", i), s, "size", "data_ratio", "hole_ratio", "wait_ratio"); err != nil {
				return err
			}
		}
	}
	return nil
}

// engConfigJSON is the canonical JSON of c (compact, env field names).
func engConfigJSON(c env.Config) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return "" // unreachable: NaN/Inf never reach here (JSON cannot carry them, strategies clip)
	}
	return strings.TrimRight(b.String(), "\n")
}
