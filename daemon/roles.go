package daemon

import (
	"slices"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// Roles is a process's role set and what it makes the process do.
type Roles struct {
	// List is the role set as given, without duplicates.
	List []cluster.Role
	// Run: coordinator, learner and engineer, which run the training run
	// together.
	Run bool
	// Rollout: the process runs rollout actors.
	Rollout bool
}

// ParseRoles reads a comma-separated role set ("coordinator,learner,
// engineer", "rollout", or all four). Coordinator, learner and engineer
// come together or not at all. Errors are a *fielderr.Error about flag
// "roles" wrapping ErrNoRoles, ErrPartialRun or the *cluster.RoleError of an
// unknown role.
func ParseRoles(s string) (Roles, error) {
	if strings.TrimSpace(s) == "" {
		return Roles{}, &fielderr.Error{Kind: ErrNoRoles, Flag: "roles", Reason: "required (coordinator,learner,engineer and/or rollout)"}
	}
	list, err := cluster.ParseRoles(s)
	if err != nil {
		return Roles{}, &fielderr.Error{Flag: "roles", Value: strconv.Quote(s), Reason: err.Error() + " (want coordinator, learner, engineer, rollout)", Err: err}
	}
	r := Roles{List: list, Rollout: slices.Contains(list, cluster.RoleRollout)}
	n := 0
	for _, role := range []cluster.Role{cluster.RoleCoordinator, cluster.RoleLearner, cluster.RoleEngineer} {
		if slices.Contains(list, role) {
			n++
		}
	}
	switch n {
	case 3:
		r.Run = true
	case 0:
	default:
		return Roles{}, &fielderr.Error{Kind: ErrPartialRun, Flag: "roles", Value: strconv.Quote(s), Reason: "coordinator, learner and engineer run together on one node (give all three)"}
	}
	return r, nil
}

// Full reports whether the process holds every role (a one-node cluster).
func (r Roles) Full() bool { return r.Run && r.Rollout }

// String is the role set as ParseRoles reads it.
func (r Roles) String() string { return cluster.FormatRoles(r.List) }
