package daemon

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package. Match them with errors.Is; the typed
// errors below wrap them and carry the details (errors.As).
var (
	// ErrNoRoles: an empty role set. Wrapped by *RolesError.
	ErrNoRoles = errors.New("daemon: no roles (want coordinator,learner,engineer and/or rollout)")
	// ErrPartialRun: a role set with some, not all, of coordinator, learner
	// and engineer, which run the training run together. Wrapped by
	// *RolesError.
	ErrPartialRun = errors.New("daemon: coordinator, learner and engineer run together on one node (give all three)")
	// ErrBadSetting: a Config field Run cannot use. Wrapped by *InputError.
	ErrBadSetting = errors.New("daemon: unusable setting")
	// ErrNoRunSetup: Run was given a role set that runs the training run
	// but no RunSetup (or one without Build).
	ErrNoRunSetup = errors.New("daemon: the coordinator role needs a RunSetup with Build")
	// ErrNoRoutableIP: RoutableHost found no interface with an address
	// other nodes could reach.
	ErrNoRoutableIP = errors.New("no up, non-loopback interface with an IP address")
)

// RolesError is a role set ParseRoles refused.
type RolesError struct {
	Roles string // the role set as given
	// Err is ErrNoRoles, ErrPartialRun, or the *cluster.RoleError of an
	// unknown role (which wraps cluster.ErrUnknownRole).
	Err error
}

func (e *RolesError) Error() string {
	return fmt.Sprintf("daemon: roles %q: %v", e.Roles, e.Err)
}

// Unwrap returns Err.
func (e *RolesError) Unwrap() error { return e.Err }

// InputError is a Config field that Run could not use.
type InputError struct {
	// Field names the Config field: "HTTPAddr" or "ServeAddr" (cannot
	// listen), "Listen" (the actor transport cannot listen), "TLS" (the
	// files do not load), "UnitLogPath" (cannot open), "TelemetryName" (not
	// a valid metrics label value).
	Field string
	Value string // the field's value
	Err   error  // why it cannot be used
}

func (e *InputError) Error() string {
	return fmt.Sprintf("daemon: %s %q: %v", e.Field, e.Value, e.Err)
}

// Unwrap returns ErrBadSetting and Err.
func (e *InputError) Unwrap() []error { return []error{ErrBadSetting, e.Err} }
