package store

import "errors"

// Sentinel errors. Every error a Store method returns wraps at most one of
// them; match with errors.Is.
var (
	// ErrConflict: a write that would replace an immutable record with a
	// different one: another config version for a stage that already has
	// one, another audit record for the same (stage, attempt), another
	// checkpoint for the same version.
	ErrConflict = errors.New("store: conflicting record")
	// ErrNotFound: a record that a lookup asked for by key does not exist
	// (Store.Config). Listing methods return empty results instead.
	ErrNotFound = errors.New("store: not found")
	// ErrUnavailable: Redis could not be reached, or kept failing with
	// transient errors, for Options.MaxRetryElapsed. The last underlying
	// error is wrapped as well.
	ErrUnavailable = errors.New("store: redis unavailable")
	// ErrInvalid: bad input (empty or malformed run id, negative stage,
	// unknown category name, inconsistent counts, bad options). Inputs are
	// validated before anything is sent to Redis, so a call that fails with
	// ErrInvalid has changed nothing.
	ErrInvalid = errors.New("store: invalid input")
)
