package daemon

import (
	"errors"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// Sentinel errors of the package. Match them with errors.Is; the typed
// errors below wrap them and carry the details (errors.As).
var (
	// ErrNoRoles: an empty role set. Wrapped by ParseRoles' *fielderr.Error.
	ErrNoRoles = errors.New("daemon: no roles (want coordinator,learner,engineer and/or rollout)")
	// ErrPartialRun: a role set with some, not all, of coordinator, learner
	// and engineer, which run the training run together. Wrapped by
	// ParseRoles' *fielderr.Error.
	ErrPartialRun = errors.New("daemon: coordinator, learner and engineer run together on one node (give all three)")
	// ErrBadSetting: a Config field Run cannot use. Wrapped by a
	// *fielderr.Error naming the field and its flag.
	ErrBadSetting = errors.New("daemon: unusable setting")
	// ErrNoRunSetup: Run was given a role set that runs the training run
	// but no RunSetup (or one without Build).
	ErrNoRunSetup = errors.New("daemon: the coordinator role needs a RunSetup with Build")
	// ErrNoRoutableIP: RoutableHost found no interface with an address
	// other nodes could reach.
	ErrNoRoutableIP = errors.New("no up, non-loopback interface with an IP address")
)

// settingFlags names the flag of t2t node that sets each Config field a
// setting error can name.
var settingFlags = map[string]string{"HTTPAddr": "http", "ServeAddr": "serve-addr", "Listen": "listen",
	"TLS": "tls-*", "UnitLogPath": "unit-log", "TelemetryName": "node-name"}

// settingError is the *fielderr.Error (wrapping ErrBadSetting and err) of
// the Config field that Run could not use: field is "HTTPAddr" or
// "ServeAddr" (cannot listen), "Listen" (the actor transport cannot
// listen), "TLS" (the files do not load), "UnitLogPath" (cannot open),
// "TelemetryName" (not a valid metrics label value). The addresses are
// repeated as the Value; the other errors (err) name their value.
func settingError(field, value string, err error) *fielderr.Error {
	e := &fielderr.Error{Kind: ErrBadSetting, Field: field, Flag: settingFlags[field], Err: err}
	switch field {
	case "HTTPAddr", "ServeAddr", "Listen":
		e.Value = value
	}
	return e
}
