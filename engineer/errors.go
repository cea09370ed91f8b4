package engineer

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match with errors.Is.
var (
	// ErrUnknownModule: ParseModules met a token that names no context module.
	ErrUnknownModule = errors.New("engineer: unknown context module")
	// ErrUnknownStrategy: ParseStrategy met a name that is no strategy.
	ErrUnknownStrategy = errors.New("engineer: unknown strategy")
	// ErrOptions: strategy options out of range or missing.
	ErrOptions = errors.New("engineer: invalid options")
	// ErrTokenBudget: the prompt does not fit the token budget even after
	// every trimmable part was dropped.
	ErrTokenBudget = errors.New("engineer: prompt exceeds the token budget")
	// ErrNoJSON: an answer holds no complete JSON object.
	ErrNoJSON = errors.New("engineer: no JSON object in the answer")
	// ErrAmbiguousJSON: an answer holds several candidate JSON objects.
	ErrAmbiguousJSON = errors.New("engineer: several JSON objects in the answer")
	// ErrSchema: the JSON object does not follow the output schema.
	ErrSchema = errors.New("engineer: answer does not follow the output schema")
	// ErrHTTP: the chat endpoint answered with an error or an unusable body.
	ErrHTTP = errors.New("engineer: chat endpoint error")
	// ErrBudgetExhausted: the run's call or token budget is spent.
	ErrBudgetExhausted = errors.New("engineer: engineer budget exhausted")
)

// ModuleError names the token that ParseModules rejected. It wraps
// ErrUnknownModule.
type ModuleError struct {
	Token  string
	Reason string
}

func (e *ModuleError) Error() string {
	return fmt.Sprintf("engineer: context module %q: %s", e.Token, e.Reason)
}

// Unwrap returns ErrUnknownModule.
func (e *ModuleError) Unwrap() error { return ErrUnknownModule }

// HTTPError is a non-2xx answer of the chat endpoint. It wraps ErrHTTP.
type HTTPError struct {
	StatusCode int
	// Body is the start of the response body (at most 512 bytes).
	Body string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("engineer: chat endpoint status %d: %s", e.StatusCode, e.Body)
}

// Unwrap returns ErrHTTP.
func (e *HTTPError) Unwrap() error { return ErrHTTP }
