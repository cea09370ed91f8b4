package train

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/evaluate"
)

// A run evaluates its policy after every stage on the validation set
// (store.SplitVal) and the benchmark suite (store.SplitEvalPaper) as work:
// the coordinator leases evaluation units (actors.StartRun.Eval) to the
// rollouts, on this node or any other, with the leases, re-issues and
// de-duplication of training units; each unit's outcome is recorded in
// Redis under its split, and the stage's report reads the aggregates
// (evalStage). The units play with the one evaluator every command uses
// (evaluate.PlayEpisodes): greedily, once per instance.

// evalSplits are the run's evaluation sets, as the coordinator plans them.
func evalSplits(val, eval *env.SuiteSpec) ([]actors.EvalSplit, error) {
	var out []actors.EvalSplit
	for _, s := range []struct {
		split string
		spec  *env.SuiteSpec
	}{{store.SplitVal, val}, {store.SplitEvalPaper, eval}} {
		js, err := json.Marshal(s.spec)
		if err != nil {
			return nil, err
		}
		out = append(out, actors.EvalSplit{Split: s.split, Spec: js, Instances: s.spec.Len()})
	}
	return out, nil
}

// evalOptions is how a run's evaluation plays pol with seed: a
// perInstancePlayer (the scripted policy) per instance, any other in one
// greedy batch per agent count.
func evalOptions(pol Policy, seed uint64) evaluate.PlayOptions {
	pp, ok := pol.(perInstancePlayer)
	return evaluate.PlayOptions{Seed: seed, PerInstance: ok && pp.playsPerInstance()}
}

// evalResult plays ins with play (pol at version, or that version at a
// rollout engine) as the evaluation of stage does and returns the outcome
// record of unit unitID of split.
func evalResult(pol Policy, play evaluate.Player, runID string, stage int, split, unitID string, ins []*env.Instance, seed uint64, version int64, configVersion string) (store.UnitResult, error) {
	eps, err := evaluate.PlayEpisodes(play, ins, evalOptions(pol, seed))
	if err != nil {
		return store.UnitResult{}, err
	}
	return AggregateEpisodes(runID, stage, split, unitID, eps, version, configVersion), nil
}

// runEval plays evaluation unit u: the instances [Lo, Hi) of the suite its
// ConfigJSON describes, at u.PolicyVersion or newer (acquire), greedily,
// and records the outcome under u.Split. It sends no groups: evaluation
// does not train.
func (e *unitExecutor) runEval(ctx context.Context, u actors.WorkUnit) (unitRun, error) {
	t0 := time.Now()
	ctx, span := e.traces.start(telemetry.Extract(ctx, u.TraceHeaders), telemetry.SpanWorkUnit,
		attribute.String(telemetry.AttrWorkUnit, u.UnitID), attribute.Int(telemetry.AttrStage, u.Stage),
		attribute.Int(telemetry.AttrAttempt, u.Attempt), attribute.String(telemetry.AttrSplit, u.Split))
	defer span.End()
	out := unitRun{done: actors.UnitDone{UnitID: u.UnitID}, first: -1, last: -1}
	var spec env.SuiteSpec
	if err := json.Unmarshal(u.ConfigJSON, &spec); err != nil {
		return unitRun{}, fmt.Errorf("evaluation unit %s: suite: %w", u.UnitID, err)
	}
	ins, err := env.GenerateSuite(&spec, u.Lo, u.Hi)
	if err != nil {
		return unitRun{}, fmt.Errorf("evaluation unit %s: %w", u.UnitID, err)
	}
	if e.gate != nil { // every full batch of the stage applied
		if _, err := e.gate.wait(ctx, false); err != nil {
			return unitRun{}, fmt.Errorf("evaluation unit %s: %w", u.UnitID, err)
		}
	}
	version, play, release, err := e.hold(ctx, u)
	if err != nil {
		return unitRun{}, fmt.Errorf("evaluation unit %s: policy: %w", u.UnitID, err)
	}
	_, es := e.traces.start(ctx, telemetry.SpanEval, attribute.String(telemetry.AttrSplit, u.Split),
		attribute.Int64(telemetry.AttrPolicyVersion, version))
	out.result, err = evalResult(e.pol, play, e.runID, u.Stage, u.Split, u.UnitID, ins, u.Seed, version, u.ConfigVersion)
	release()
	es.End()
	if err != nil {
		if e.lost != nil {
			e.lost(err)
		}
		return unitRun{}, fmt.Errorf("evaluation unit %s: %w", u.UnitID, err)
	}
	if _, err := e.st.RecordUnit(ctx, out.result); err != nil {
		return unitRun{}, fmt.Errorf("evaluation unit %s: record: %w", u.UnitID, err)
	}
	out.first, out.last = version, version
	d := time.Since(t0)
	e.reportUnit(out.result, d)
	e.metrics.ObserveUnit(d, span.SpanContext())
	out.done.Stats.Instances = len(ins)
	out.done.Stats.Millis = d.Milliseconds()
	return out, nil
}
