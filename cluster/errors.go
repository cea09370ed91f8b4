package cluster

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors of the membership layer. Match them with errors.Is; the
// typed errors below, and the *fielderr.Error of a bad field, wrap them and
// carry the details (errors.As).
var (
	// ErrUnknownRole: a role name that is not one of the Role constants.
	// Wrapped by *RoleError.
	ErrUnknownRole = errors.New("cluster: unknown role")
	// ErrInvalidMeta: node metadata that fails NodeMeta.Validate. Wrapped by
	// *fielderr.Error.
	ErrInvalidMeta = errors.New("cluster: invalid node metadata")
	// ErrMetaTooLarge: encoded node metadata longer than MaxMetaSize bytes
	// (memberlist's limit). Wrapped by *MetaTooLargeError.
	ErrMetaTooLarge = errors.New("cluster: node metadata too large")
	// ErrBadMeta: bytes received from the network that do not decode into
	// valid node metadata.
	ErrBadMeta = errors.New("cluster: cannot decode node metadata")
	// ErrInvalidConfig: a membership Config that fails Validate. Wrapped by
	// *fielderr.Error.
	ErrInvalidConfig = errors.New("cluster: invalid membership config")
	// ErrJoin: no seed could be reached before the join deadline (wrong
	// gossip key or label, seeds down, firewall). Wrapped by *JoinError.
	ErrJoin = errors.New("cluster: cannot join any seed")
	// ErrShutdown: the Membership (or Provider) has been shut down.
	ErrShutdown = errors.New("cluster: membership shut down")
)

// RoleError names a role string that ParseRoles or NodeMeta.Validate rejected.
type RoleError struct {
	Role string // the offending role as written ("" for an empty list element)
}

func (e *RoleError) Error() string {
	return fmt.Sprintf("cluster: unknown role %q (want one of %s)", e.Role, roleNames())
}

// Unwrap returns ErrUnknownRole.
func (e *RoleError) Unwrap() error { return ErrUnknownRole }

func roleNames() string {
	names := make([]string, len(allRoles))
	for i, r := range allRoles {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}

// MetaTooLargeError reports encoded metadata over the memberlist limit.
type MetaTooLargeError struct {
	Size  int // encoded size in bytes, including the 10 bytes kept for the leave flag
	Limit int // MaxMetaSize
}

func (e *MetaTooLargeError) Error() string {
	return fmt.Sprintf("cluster: encoded node metadata needs %d bytes, limit is %d (shorten Name, Version or Kinds)", e.Size, e.Limit)
}

// Unwrap returns ErrMetaTooLarge.
func (e *MetaTooLargeError) Unwrap() error { return ErrMetaTooLarge }

// JoinError reports a join that reached no seed before its deadline.
type JoinError struct {
	Seeds    []string // the seeds tried (the local address removed)
	Attempts int      // join rounds made
	Last     error    // the last round's error from memberlist (may be nil when ctx ended first)
	Ctx      error    // the context error that ended the retries, if any
}

func (e *JoinError) Error() string {
	msg := fmt.Sprintf("cluster: cannot join any of %v after %d attempt(s)", e.Seeds, e.Attempts)
	if e.Last != nil {
		msg += ": " + e.Last.Error()
	}
	if e.Ctx != nil {
		msg += " (" + e.Ctx.Error() + ")"
	}
	return msg
}

// Unwrap returns ErrJoin, the last memberlist error and the context error.
func (e *JoinError) Unwrap() []error {
	errs := []error{ErrJoin}
	if e.Last != nil {
		errs = append(errs, e.Last)
	}
	if e.Ctx != nil {
		errs = append(errs, e.Ctx)
	}
	return errs
}
