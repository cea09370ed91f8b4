package train

import (
	"context"
	"fmt"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
)

// evalStage fills rep's Val, Eval and Policy with the policy's
// evaluation after stage on the validation set (store.SplitVal) and the
// benchmark suite (store.SplitEvalPaper). After a stage (stage >= 0) the
// evaluation units played them (evalunit.go): evalStage reads their
// aggregates in Redis, and fails when a split's units did not record every
// instance. Before the first stage (stage -1) it plays them here, with the
// same evaluator, and records nothing.
func (r *run) evalStage(ctx context.Context, stage int, rep *StageReport) error {
	for _, split := range []struct {
		name string
		ins  []*env.Instance
	}{{store.SplitVal, r.val}, {store.SplitEvalPaper, r.eval}} {
		var buckets map[store.Key]store.Counts
		if stage < 0 {
			version, play, release, err := r.hold(ctx)
			if err != nil {
				return fmt.Errorf("%s before the first stage: %w", split.name, err)
			}
			res, err := evalResult(r.pol, play, r.opt.RunID, stage, split.name, split.name, split.ins, actors.EvalSeed(r.opt.Seed, stage), version, "")
			release()
			if err != nil {
				return fmt.Errorf("%s before the first stage: %w", split.name, err)
			}
			buckets = res.Buckets
		} else {
			agg, err := r.st.Aggregates(ctx, r.opt.RunID, stage, split.name)
			if err != nil {
				return fmt.Errorf("%s after stage %d: %w", split.name, stage, err)
			}
			buckets = agg
		}
		sum := store.SumSplit(buckets)
		if got := sum.All.Episodes; got != int64(len(split.ins)) {
			return fmt.Errorf("%s after stage %d: %d of %d instances evaluated", split.name, stage, got, len(split.ins))
		}
		if split.name == store.SplitVal {
			rep.Val = ratesOf(sum.All)
			continue
		}
		rep.Eval = map[int]Rates{}
		for k, c := range sum.ByAgents {
			rep.Eval[k] = ratesOf(c)
		}
	}
	rep.Policy = r.pol.Version()
	return nil
}

// closeStage closes stage, a step of the run loop: it evaluates the policy, reads the training
// outcome from Redis and appends the stage report.
func (r *run) closeStage(ctx context.Context, stage int) (*StageReport, error) {
	if r.gate != nil {
		// The stage's last batch may still be in the learner.
		if _, err := r.gate.wait(ctx, true); err != nil {
			return nil, fmt.Errorf("after stage %d: %w", stage, err)
		}
	}
	r.mu.Lock()
	ls := r.learn.stats()
	rep := StageReport{Stage: stage, Config: r.configs[stage], ConfigVersion: r.configs[stage].Hash(),
		Updates: ls.Updates, MeanLoss: ls.MeanLoss, ZeroShare: ls.ZeroShare, Learn: ls, Duration: time.Since(r.stageStart)}
	r.learn = learnAcc{}
	r.mu.Unlock()
	if r.sampler != nil {
		now, _ := r.sampler.SamplingStats()
		rep.Sampling = samplingSince(now, r.samp0, rep.Duration)
	}
	rep.Flow = r.flow.stageDone(stage)
	agg, err := r.st.Aggregates(ctx, r.opt.RunID, stage, store.SplitTrain)
	if err != nil {
		return nil, err
	}
	rep.Train = ratesOf(store.SumSplit(agg).All)
	if err := r.evalStage(ctx, stage, &rep); err != nil {
		return nil, err
	}
	if err := r.checkpoint(ctx, stage); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.res.Stages = append(r.res.Stages, rep)
	r.stageStart = time.Now()
	r.mu.Unlock()
	if r.sampler != nil { // the next stage's counters start after this one's evaluation
		r.samp0, _ = r.sampler.SamplingStats()
	}
	printStage(r.opt.Out, &rep)
	printLearn(r.opt.Out, &rep.Learn)
	printSampling(r.opt.Out, rep.Sampling)
	printFlow(r.opt.Out, &rep.Flow)
	return &r.res.Stages[len(r.res.Stages)-1], nil
}

// checkpoint saves a Checkpointer policy after stage and indexes it in
// Redis (see saveCheckpoint).
func (r *run) checkpoint(ctx context.Context, stage int) error {
	cp, ok := r.pol.(Checkpointer)
	if !ok || r.opt.CheckpointDir == "" {
		return nil
	}
	if err := r.saveCheckpoint(ctx, cp, stage); err != nil {
		return fmt.Errorf("checkpoint after stage %d: %w", stage, err)
	}
	return nil
}
