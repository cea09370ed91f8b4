package actors

import "time"

// flowControl paces dispatch by the learner, as AReaL's bounded staleness
// does: a unit goes out only while the groups issued and not yet retired by
// the learner, plus its own, fit in window = (maxLag+1)·batch. The learner
// consumes groups in batches of B in the order they arrive, so a unit's
// groups then land in a batch at most maxLag updates after the version it
// was issued at (WorkUnit.PolicyVersion), which the rollout plays at least.
// Counting groups, not seconds, needs no estimate of the learner's speed:
// a slower learner retires groups later and dispatch waits accordingly.
type flowControl struct {
	maxLag int64 // η; < 0: no pacing
	batch  int64 // B
	// issued counts the groups of units leased or done (a unit put back in
	// the queue stops counting); retired, pending and version are the
	// learner's, as last heard.
	issued, retired, pending, version int64
	inflight                          int64     // groups of leased units
	heardAt                           time.Time // when the learner's counters last moved
	heldSince                         time.Time // queued units wait for the learner since (zero: not waiting)
	drainSince                        time.Time // the stage drains since (phaseDraining)
}

// drained reports whether the learner holds nothing outstanding but its
// pending part batch: every group sent so far reached it, and every full
// batch was trained.
func (f *flowControl) drained() bool { return f.outstanding() <= f.pending }

func (f *flowControl) on() bool           { return f.maxLag >= 0 }
func (f *flowControl) window() int64      { return (f.maxLag + 1) * f.batch }
func (f *flowControl) outstanding() int64 { return f.issued - f.retired }

// admits reports whether a unit of g groups may go out now. Below one
// batch outstanding it always may: the learner cannot make a batch of what
// is outstanding, so holding back would stall the run.
func (f *flowControl) admits(g int64) bool {
	if !f.on() {
		return true
	}
	o := f.outstanding()
	return o+g <= f.window() || o < f.batch
}
