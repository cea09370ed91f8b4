package daemon

import (
	"errors"
	"slices"
	"testing"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

func TestParseRoles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in            string
		want          []cluster.Role
		run, rollout  bool
		full          bool
		err, errClass error
	}{
		{in: "rollout", want: []cluster.Role{cluster.RoleRollout}, rollout: true},
		{in: "coordinator,learner,engineer", want: []cluster.Role{cluster.RoleCoordinator, cluster.RoleLearner, cluster.RoleEngineer}, run: true},
		{in: " engineer, learner ,coordinator,rollout,rollout", want: []cluster.Role{cluster.RoleEngineer, cluster.RoleLearner, cluster.RoleCoordinator, cluster.RoleRollout},
			run: true, rollout: true, full: true},
		{in: "", err: ErrNoRoles},
		{in: "  ", err: ErrNoRoles},
		{in: "coordinator", err: ErrPartialRun},
		{in: "learner,engineer,rollout", err: ErrPartialRun},
		{in: "rollout,pilot", err: cluster.ErrUnknownRole},
	} {
		r, err := ParseRoles(tc.in)
		if tc.err != nil {
			var re *fielderr.Error
			if !errors.Is(err, tc.err) || !errors.As(err, &re) || re.Flag != "roles" {
				t.Errorf("ParseRoles(%q) = %v, want a *fielderr.Error about roles wrapping %v", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(r.List, tc.want) || r.Run != tc.run || r.Rollout != tc.rollout || r.Full() != tc.full {
			t.Errorf("ParseRoles(%q) = %+v (full %v), %v; want %v run %v rollout %v full %v", tc.in, r, r.Full(), err, tc.want, tc.run, tc.rollout, tc.full)
		}
		if r.String() != cluster.FormatRoles(tc.want) {
			t.Errorf("ParseRoles(%q).String() = %q", tc.in, r.String())
		}
	}
}

// TestRolesErrorText: the unknown role's error carries cluster's message,
// which names the valid roles.
func TestRolesErrorText(t *testing.T) {
	t.Parallel()
	_, err := ParseRoles("rollout,pilot")
	var re *fielderr.Error
	if !errors.As(err, &re) {
		t.Fatalf("err %v", err)
	}
	var ce *cluster.RoleError
	if !errors.As(re.Err, &ce) || ce.Role != "pilot" {
		t.Fatalf("the cause %v, want cluster's *RoleError for pilot", re.Err)
	}
	if want := `--roles "rollout,pilot": ` + ce.Error() + " (want coordinator, learner, engineer, rollout)"; re.Usage() != want {
		t.Fatalf("usage %q, want %q", re.Usage(), want)
	}
}
