package train

import (
	"fmt"
	"io"
	"sync"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/progress"
)

// Progress draws, on a terminal w, a bar of the running stage's training
// units and then one of its evaluation units, hooking itself into
// opt.OnUnit (units of this process's rollouts). Elsewhere the per-stage
// table lines on Options.Out are the plain-line progress, so it draws
// nothing.
func Progress(opt *Options, w io.Writer) {
	if !progress.IsTerminal(w) || opt.Config.Instances <= 0 || opt.InstancesPerUnit <= 0 {
		return
	}
	o := *opt
	o.SetDefaults()
	per := o.InstancesPerUnit
	units := func(n int) int { return (n + per - 1) / per }
	val, eval := env.ValidationSpec(o.SuiteSeed, o.ValPerSize), env.PaperEvalSpec(o.SuiteSeed, o.EvalPerSize)
	total := map[bool]int{false: units(o.Config.Instances), true: units(val.Len()) + units(eval.Len())}
	var (
		mu  sync.Mutex
		cur struct {
			stage int
			eval  bool
		}
		seen map[string]bool
		bar  *progress.Bar
	)
	cur.stage = -1
	next := opt.OnUnit
	opt.OnUnit = func(u UnitLog) {
		if next != nil {
			next(u)
		}
		r := u.Result
		mu.Lock()
		defer mu.Unlock()
		isEval := r.Split != store.SplitTrain
		if r.Stage != cur.stage || isEval != cur.eval {
			if bar != nil {
				bar.Finish()
			}
			cur.stage, cur.eval, seen = r.Stage, isEval, map[string]bool{}
			label := fmt.Sprintf("stage %d units", r.Stage)
			if isEval {
				label = fmt.Sprintf("stage %d evaluation units", r.Stage)
			}
			bar = progress.New(w, label, total[isEval])
		}
		seen[r.UnitID] = true
		bar.Set(len(seen))
		if len(seen) == total[isEval] {
			bar.Finish()
			bar = nil
			cur.stage = -1
		}
	}
}
