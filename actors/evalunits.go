package actors

import "fmt"

// Evaluation units (StartRun.Eval): after a stage's training units are
// done and, paced, the learner drained them, the coordinator leases the
// plan's evaluation splits as units through the same queue, leases and
// de-duplication; the stage ends once they are done.

// trained moves on once the stage's training is over (its units done, the
// learner drained): to the stage's evaluation units when the plan has
// any, else to the stage's end.
func (c *coordinator) trained() {
	if len(c.plan.Eval) > 0 {
		c.buildEval()
		return
	}
	c.finishStage()
}

// checkEval checks the evaluation splits of a plan whose training split
// is train.
func checkEval(eval []EvalSplit, train string) error {
	seen := map[string]bool{train: true}
	for _, e := range eval {
		switch {
		case e.Split == "" || seen[e.Split]:
			return fmt.Errorf("%w: evaluation split %q is empty or named twice (the training split is %q)", ErrBadPlan, e.Split, train)
		case e.Instances < 1:
			return fmt.Errorf("%w: evaluation split %q has %d instances, must be >= 1", ErrBadPlan, e.Split, e.Instances)
		}
		seen[e.Split] = true
	}
	return nil
}

// buildEval adds the stage's evaluation units (every split of the plan's
// Eval in InstancesPerUnit ranges) to the queue and starts evaluating. The
// units sample with the stage's evaluation seed (EvalSeed) and carry the
// learner's version: the rollout plays that version or a newer one.
func (c *coordinator) buildEval() {
	per := c.plan.InstancesPerUnit
	var hdr map[string]string
	if c.evalHeaders != nil {
		hdr = c.evalHeaders(c.plan.RunID, c.stage)
	}
	seed := EvalSeed(c.plan.Seed, c.stage)
	n := 0
	for _, e := range c.plan.Eval {
		for j, lo := 0, 0; lo < e.Instances; j, lo = j+1, lo+per {
			id := fmt.Sprintf("%s/s%d/%s/u%d", c.plan.RunID, c.stage, e.Split, j)
			c.index[id] = len(c.units)
			c.queue = append(c.queue, len(c.units))
			c.units = append(c.units, unitState{unit: WorkUnit{
				UnitID: id, RunID: c.plan.RunID, Stage: c.stage, Split: e.Split,
				ConfigVersion: c.cfg.Version, ConfigJSON: e.Spec, Seed: seed,
				Lo: lo, Hi: min(lo+per, e.Instances), TraceHeaders: hdr, Eval: true,
			}})
			n++
		}
	}
	c.evalLeft, c.cur.EvalUnits = n, n
	c.phase = phaseEvaluating
	c.dispatch()
}
