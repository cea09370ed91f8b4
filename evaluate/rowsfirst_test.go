package evaluate

import (
	"testing"

	"github.com/t2t-lab/t2t/env"
)

// TestRowsFirst: the baseline player's episodes are env.ManhattanPlan's, verified one by one,
// groupSize of them per instance in order; on the quick suite some are valid and some walk into
// a hole, so the comparison discriminates.
func TestRowsFirst(t *testing.T) {
	ins := quickSuite(t, 4).Instances
	ro, err := RowsFirst{}.Play(ins, 2, 1, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(ro.Episodes) != 2*len(ins) {
		t.Fatalf("%d episodes for %d instances × 2", len(ro.Episodes), len(ins))
	}
	var valid, holes int
	for i, ep := range ro.Episodes {
		in := ins[i/2]
		var want env.Report
		env.Verify(in, env.ManhattanPlan(in), &want)
		if ep.Instance != in || ep.Report.Valid != want.Valid || ep.Report.Counts != want.Counts {
			t.Fatalf("episode %d (%s): report %+v, want %+v", i, in.ID, ep.Report.Counts, want.Counts)
		}
		if ep.Report.Valid {
			valid++
			if ep.Reward <= 0 {
				t.Fatalf("episode %d: valid with reward %v", i, ep.Reward)
			}
		}
		if want.Counts[env.CheckHoleFree] > 0 {
			holes++
		}
	}
	if valid == 0 || holes == 0 {
		t.Fatalf("%d valid, %d through a hole of %d: the suite does not discriminate", valid, holes, len(ro.Episodes))
	}
	outs, err := Play(RowsFirst{}, ins, PlayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outs {
		if o.Valid != ro.Episodes[2*i].Report.Valid {
			t.Fatalf("outcome %d: valid %v, the episode says %v", i, o.Valid, !o.Valid)
		}
	}
}
