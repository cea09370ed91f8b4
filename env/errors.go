package env

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match with errors.Is; the typed errors below wrap them
// where they apply.
var (
	// ErrInfeasible: a generator request that cannot be met (too many agents
	// for the free cells, holes that leave no room, a wait ratio that the
	// sizes cannot produce).
	ErrInfeasible = errors.New("env: infeasible request")
	// ErrUnsolvable: an instance has no solution (an agent cannot reach its
	// goal, or the agents block each other for good).
	ErrUnsolvable = errors.New("env: instance has no solution")
	// ErrBudget: the solver ran out of its node or expansion budget.
	ErrBudget = errors.New("env: solver budget exceeded")
	// ErrParse: an answer could not be parsed into a plan.
	ErrParse = errors.New("env: cannot parse plan")
	// ErrInvalidConfig: a generator configuration fails validation.
	ErrInvalidConfig = errors.New("env: invalid config")
)

// FieldError names a field, the offending value and the bound it broke.
type FieldError struct {
	Field  string
	Value  any
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s = %v: %s", e.Field, e.Value, e.Reason)
}
