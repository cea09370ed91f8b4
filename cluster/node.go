package cluster

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// Role is a job a node takes in a t2t cluster. A node may hold several.
type Role string

// The roles a node can hold.
const (
	// RoleCoordinator drives stages: hands out work units, collects results.
	RoleCoordinator Role = "coordinator"
	// RoleRollout runs rollout actors (generate, sample, verify); NodeMeta.Capacity
	// says how many run concurrently.
	RoleRollout Role = "rollout"
	// RoleLearner runs the learner (GRPO updates, checkpoints, weights).
	RoleLearner Role = "learner"
	// RoleEngineer runs the environment engineer.
	RoleEngineer Role = "engineer"
)

var allRoles = [...]Role{RoleCoordinator, RoleRollout, RoleLearner, RoleEngineer}

// AllRoles returns every role, in a fixed order.
func AllRoles() []Role { return slices.Clone(allRoles[:]) }

// Valid reports whether r is one of the Role constants.
func (r Role) Valid() bool { return slices.Contains(allRoles[:], r) }

// String returns the role name.
func (r Role) String() string { return string(r) }

// ParseRoles parses a comma-separated role list such as "rollout,learner".
// Spaces around names are trimmed, names are case-sensitive, duplicates are
// dropped (first occurrence kept). An empty or all-blank string yields no
// roles and no error (a node that only observes the cluster). An unknown or
// empty element ("rollout,,learner") yields a *RoleError naming it.
func ParseRoles(s string) ([]Role, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	roles := make([]Role, 0, len(parts))
	for _, p := range parts {
		r := Role(strings.TrimSpace(p))
		if !r.Valid() {
			return nil, &RoleError{Role: string(r)}
		}
		if !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	return roles, nil
}

// FormatRoles is the inverse of ParseRoles.
func FormatRoles(roles []Role) string {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	return strings.Join(names, ",")
}

// MaxMetaSize is the largest encoded metadata memberlist carries (its
// MetaMaxSize). Encode keeps 10 bytes of it for the leave flag and refuses a
// NodeMeta whose encoding is longer than MaxMetaSize-10 with a
// *MetaTooLargeError.
const MaxMetaSize = 512

// maxIDLen bounds NodeMeta.ID (also the memberlist node name).
const maxIDLen = 64

// metaFormatV1 is the first byte of encoded metadata: a format tag so the
// encoding can change without old nodes misreading new bytes.
const metaFormatV1 byte = 1

// NodeMeta is what a node tells the cluster about itself. It travels in
// memberlist's node metadata (Encode/DecodeNodeMeta), so the encoded form must
// stay within MaxMetaSize bytes. JSON field names are part of the wire format:
// only append.
type NodeMeta struct {
	// ID identifies this process in the cluster; it is also the memberlist
	// node name and, under Provider, the protoactor member id (the actor
	// system's id). It is fresh per process start (NewNodeID), so a restarted
	// node joins as a new member and the old one is reported Left or Failed.
	// 1..64 characters from [A-Za-z0-9._-].
	ID string `json:"id"`
	// Name is a human name (host name, pod name); not unique, may be empty.
	Name string `json:"n,omitempty"`
	// Address is the protoactor remote "host:port" of this node; empty for a
	// node that runs no protoactor remote.
	Address string `json:"a,omitempty"`
	// Roles are the jobs this node takes.
	Roles []Role `json:"r,omitempty"`
	// Capacity is the number of rollout workers this node runs (0 when it
	// is not a rollout node).
	Capacity int `json:"c,omitempty"`
	// Version is the software version string of the node (build info).
	Version string `json:"v,omitempty"`
	// Kinds are the protoactor cluster kinds this node hosts (set by
	// Provider from the cluster's registered kinds).
	Kinds []string `json:"k,omitempty"`
	// Client marks a protoactor cluster client (Provider.StartClient): it
	// sees the topology but hosts no kinds and is not part of it.
	Client bool `json:"cl,omitempty"`
}

// NewNodeID returns a fresh random member id (26 base32 characters from
// crypto/rand).
func NewNodeID() string { return rand.Text() }

// HasRole reports whether the node holds role r.
func (m NodeMeta) HasRole(r Role) bool { return slices.Contains(m.Roles, r) }

// HasKind reports whether the node hosts protoactor kind k.
func (m NodeMeta) HasKind(k string) bool { return slices.Contains(m.Kinds, k) }

// Clone returns a deep copy.
func (m NodeMeta) Clone() NodeMeta {
	m.Roles = slices.Clone(m.Roles)
	m.Kinds = slices.Clone(m.Kinds)
	return m
}

// Equal reports whether two metadata values are the same.
func (m NodeMeta) Equal(o NodeMeta) bool {
	return m.ID == o.ID && m.Name == o.Name && m.Address == o.Address &&
		slices.Equal(m.Roles, o.Roles) && m.Capacity == o.Capacity &&
		m.Version == o.Version && slices.Equal(m.Kinds, o.Kinds) && m.Client == o.Client
}

// Validate checks the fields; errors are *fielderr.Error (errors.Is ErrInvalidMeta).
func (m NodeMeta) Validate() error {
	if err := validateID(m.ID); err != nil {
		return err
	}
	if m.Address != "" {
		host, port, err := net.SplitHostPort(m.Address)
		if err != nil {
			return &fielderr.Error{Kind: ErrInvalidMeta, Field: "Address", Value: m.Address, Reason: "want host:port", Err: err}
		}
		if host == "" {
			return &fielderr.Error{Kind: ErrInvalidMeta, Field: "Address", Value: m.Address, Reason: "empty host"}
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return &fielderr.Error{Kind: ErrInvalidMeta, Field: "Address", Value: m.Address, Reason: "port must be 1..65535"}
		}
	}
	for i, r := range m.Roles {
		if !r.Valid() {
			return &fielderr.Error{Kind: ErrInvalidMeta, Field: fmt.Sprintf("Roles[%d]", i), Value: string(r), Reason: "unknown role", Err: &RoleError{Role: string(r)}}
		}
		if slices.Contains(m.Roles[:i], r) {
			return &fielderr.Error{Kind: ErrInvalidMeta, Field: fmt.Sprintf("Roles[%d]", i), Value: string(r), Reason: "duplicate role"}
		}
	}
	if m.Capacity < 0 {
		return &fielderr.Error{Kind: ErrInvalidMeta, Field: "Capacity", Value: m.Capacity, Reason: "must be >= 0"}
	}
	for i, k := range m.Kinds {
		if k == "" {
			return &fielderr.Error{Kind: ErrInvalidMeta, Field: fmt.Sprintf("Kinds[%d]", i), Value: k, Reason: "empty kind"}
		}
		if slices.Contains(m.Kinds[:i], k) {
			return &fielderr.Error{Kind: ErrInvalidMeta, Field: fmt.Sprintf("Kinds[%d]", i), Value: k, Reason: "duplicate kind"}
		}
	}
	return nil
}

func validateID(id string) error {
	if id == "" {
		return &fielderr.Error{Kind: ErrInvalidMeta, Field: "ID", Value: id, Reason: "empty (use NewNodeID)"}
	}
	if len(id) > maxIDLen {
		return &fielderr.Error{Kind: ErrInvalidMeta, Field: "ID", Value: id, Reason: fmt.Sprintf("longer than %d characters", maxIDLen)}
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return &fielderr.Error{Kind: ErrInvalidMeta, Field: "ID", Value: id, Reason: "characters must be in [A-Za-z0-9._-]"}
		}
	}
	return nil
}

// wireMeta is the encoded form: NodeMeta plus the leave intent that
// Membership.Leave gossips before departing, so that the others can tell a
// graceful leave from a failure (memberlist's own notices do not say).
type wireMeta struct {
	NodeMeta
	Leaving bool `json:"lv,omitempty"`
}

// leavingOverhead is the room Encode keeps free for the leave flag.
var leavingOverhead = len(`,"lv":true`)

// Encode validates m and returns its wire form: a format byte followed by
// JSON. It fails with *fielderr.Error or, when the result exceeds MaxMetaSize
// bytes less 10 reserved for the leave flag, *MetaTooLargeError.
func (m NodeMeta) Encode() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	b, err := encodeWire(m, false)
	if err != nil {
		return nil, err
	}
	if len(b)+leavingOverhead > MaxMetaSize {
		return nil, &MetaTooLargeError{Size: len(b) + leavingOverhead, Limit: MaxMetaSize}
	}
	return b, nil
}

func encodeWire(m NodeMeta, leaving bool) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(metaFormatV1)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(wireMeta{NodeMeta: m, Leaving: leaving}); err != nil {
		return nil, fmt.Errorf("cluster: encode node meta: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// DecodeNodeMeta parses bytes made by Encode and validates the result. Any
// failure wraps ErrBadMeta (and the validation error, if that is the cause).
func DecodeNodeMeta(b []byte) (NodeMeta, error) {
	m, _, err := decodeWire(b)
	return m, err
}

func decodeWire(b []byte) (NodeMeta, bool, error) {
	if len(b) == 0 {
		return NodeMeta{}, false, fmt.Errorf("%w: empty", ErrBadMeta)
	}
	if len(b) > MaxMetaSize {
		return NodeMeta{}, false, fmt.Errorf("%w: %d bytes, limit %d", ErrBadMeta, len(b), MaxMetaSize)
	}
	if b[0] != metaFormatV1 {
		return NodeMeta{}, false, fmt.Errorf("%w: unknown format byte %#x", ErrBadMeta, b[0])
	}
	var w wireMeta
	if err := json.Unmarshal(b[1:], &w); err != nil {
		return NodeMeta{}, false, fmt.Errorf("%w: %w", ErrBadMeta, err)
	}
	if err := w.NodeMeta.Validate(); err != nil {
		return NodeMeta{}, false, fmt.Errorf("%w: %w", ErrBadMeta, err)
	}
	return w.NodeMeta, w.Leaving, nil
}
