package actors

// Every message the t2t actors take and send. Plain structs with msgpack tags:
// the tag names are the wire format, so only ever append fields, never rename
// or reuse a tag. Messages travel as pointers (*WorkUnit) inside a process;
// across nodes they are msgpack-encoded by the Serializer (see wire.go).
//
// Each doc line says who sends the message and what answer to expect.

// StartRun is sent by the driver (System.Run, or a CLI on another node) to the
// coordinator. It carries the stage plan and the config of its first stage. Answer:
// none directly; the coordinator publishes StageStart, StageDone and finally
// RunDone to its stage subscribers.
type StartRun struct {
	RunID            string       `msgpack:"run_id"`
	Stages           int          `msgpack:"stages"`
	Units            int          `msgpack:"units"`              // work units per stage
	InstancesPerUnit int          `msgpack:"instances_per_unit"` // instance indices per unit
	Split            string       `msgpack:"split"`
	Seed             uint64       `msgpack:"seed"`
	Config           ConfigUpdate `msgpack:"config"` // the config of stage FirstStage
	// FirstStage is the first stage to run (0 for a new run; s+1 when a run
	// resumes after stage s). Stages counts from stage 0, so the run covers
	// stages FirstStage..Stages-1, and unit ids and seeds of a stage are the
	// same whichever stage the run started at.
	FirstStage int `msgpack:"first_stage,omitempty"`
	// Eval lists the evaluation run after each stage's training units
	// (and, when the learner is paced, after it drained them): every split
	// becomes evaluation units of InstancesPerUnit instances, leased to the
	// rollouts like training units. The stage is done (StageDone) once
	// they are done too. Empty: no evaluation units.
	Eval []EvalSplit `msgpack:"eval,omitempty"`
	// Epochs is how many times a stage plays its instances (0 or 1: once):
	// a stage has Units·Epochs units, unit e·Units+i playing unit i's
	// instance range with its own sampling seed, every epoch after the one
	// before in dispatch order.
	Epochs int `msgpack:"epochs,omitempty"`
}

// EvalSplit is one evaluation set played after every stage: Spec is its
// description (opaque here: the Runner's suite spec, e.g. env.SuiteSpec
// JSON), Instances how many instances it has. Each of its units carries
// Spec as ConfigJSON and the instance range [Lo, Hi) to play.
type EvalSplit struct {
	Split     string `msgpack:"split"`
	Spec      []byte `msgpack:"spec"`
	Instances int    `msgpack:"instances"`
}

// WorkUnit is sent by the coordinator to a rollout actor, one per credit the
// rollout granted with RequestWork. Answer: UnitDone when the unit ran, or
// UnitRejected when the rollout refuses or fails it.
type WorkUnit struct {
	UnitID              string            `msgpack:"unit_id"`
	RunID               string            `msgpack:"run_id"`
	Stage               int               `msgpack:"stage"`
	Split               string            `msgpack:"split"`
	ConfigVersion       string            `msgpack:"config_version"`
	ConfigJSON          []byte            `msgpack:"config_json,omitempty"`
	Seed                uint64            `msgpack:"seed"`
	Lo                  int               `msgpack:"lo"`      // first instance index (inclusive)
	Hi                  int               `msgpack:"hi"`      // last instance index (exclusive)
	Attempt             int               `msgpack:"attempt"` // 0 on first issue, +1 per re-issue
	LeaseDeadlineUnixMs int64             `msgpack:"lease_deadline_unix_ms"`
	TraceHeaders        map[string]string `msgpack:"trace_headers,omitempty"`
	// PolicyVersion is the learner's policy version when the unit was
	// issued: the rollout plays this version or a newer one (it loads it
	// first when it holds an older one), so the staleness bound the
	// coordinator dispatches by holds from the unit's first sample.
	PolicyVersion int64 `msgpack:"policy_version,omitempty"`
	// Eval marks an evaluation unit (StartRun.Eval): ConfigJSON is the
	// split's spec, the unit is played greedily once per instance at
	// PolicyVersion or newer, and it sends no groups to the learner.
	Eval bool `msgpack:"eval,omitempty"`
}

// RequestWork is sent by a rollout actor to the coordinator (with Request, so
// the coordinator learns the rollout's PID). Credits is the number of further
// units the rollout can take; credits add up. The first RequestWork also
// registers the rollout. Answer: up to Credits WorkUnit messages, sent as
// units become available (never an empty answer; no polling).
type RequestWork struct {
	Node    string `msgpack:"node"`
	Credits int    `msgpack:"credits"`
}

// UnitDone is sent by a rollout actor to the coordinator (with Request) when
// its Runner finished a unit. Groups is left empty on this leg: the groups go
// to the learner in UnitGroups. The coordinator keeps the first UnitDone of a
// unit and counts the others as duplicates. Answer: none.
type UnitDone struct {
	UnitID string    `msgpack:"unit_id"`
	Node   string    `msgpack:"node"`
	Result []byte    `msgpack:"result,omitempty"` // opaque encoded store.UnitResult
	Groups []Group   `msgpack:"groups,omitempty"`
	Stats  UnitStats `msgpack:"stats"`
	// GroupCount is the number of groups the rollout sent to the learner
	// for this unit (set by the rollout): the coordinator counts them
	// against the learner's window until the learner retires them.
	GroupCount int `msgpack:"group_count,omitempty"`
}

// UnitStats summarises one unit's run; filled by the Runner.
type UnitStats struct {
	Instances int     `msgpack:"instances"`
	Samples   int     `msgpack:"samples"`
	Valid     int     `msgpack:"valid"`
	Optimal   int     `msgpack:"optimal"`
	RewardSum float64 `msgpack:"reward_sum"`
	Millis    int64   `msgpack:"millis"`
}

// Group is the samples drawn for one instance: the unit of a GRPO update. It
// carries the three versions every sample needs (policy, config, instance id
// and seed).
type Group struct {
	InstanceID    string   `msgpack:"instance_id"`
	Seed          uint64   `msgpack:"seed"`
	PolicyVersion int64    `msgpack:"policy_version"`
	ConfigVersion string   `msgpack:"config_version"`
	Samples       []Sample `msgpack:"samples"`
	// Instance is the instance's JSON (env.Instance) when the learner needs
	// it to rebuild the inputs (a step-wise policy replays its actions).
	Instance []byte `msgpack:"instance,omitempty"`
	// Local is the decoded instance (an *env.Instance) while the group
	// stays in the process that played it, so the learner there need not
	// decode Instance. It never travels: a group sent to another node
	// carries Instance, and the receiver decodes that.
	Local any `msgpack:"-" json:"-"`
}

// Sample is one sampled answer: its token (or action) ids, the per-token log
// probabilities under the sampling policy, and how the verifier judged it.
type Sample struct {
	Tokens   []int32   `msgpack:"tokens"`
	LogProbs []float32 `msgpack:"logprobs"`
	Reward   float32   `msgpack:"reward"`
	Valid    bool      `msgpack:"valid"`
	Optimal  bool      `msgpack:"optimal"`
}

// UnitGroups is sent by a rollout actor to the learner, before the matching
// UnitDone goes to the coordinator. The learner keeps the first copy per
// UnitID. Answer: none.
type UnitGroups struct {
	UnitID string  `msgpack:"unit_id"`
	Node   string  `msgpack:"node"`
	Stage  int     `msgpack:"stage"`
	Groups []Group `msgpack:"groups"`
}

// UnitRejected is sent by a rollout actor to the coordinator (with Request)
// when it refuses a unit (config version not acked, no free slot) or its
// Runner failed. The coordinator re-queues the unit at once. Answer: none
// (for a config mismatch the coordinator re-sends the current ConfigUpdate).
type UnitRejected struct {
	UnitID     string `msgpack:"unit_id"`
	Node       string `msgpack:"node"`
	Reason     string `msgpack:"reason"`
	NeedConfig bool   `msgpack:"need_config"` // the rollout has not acked the unit's config version
}

// ConfigUpdate is sent by the engineer to the coordinator (the proposal for
// Stage), and by the coordinator to every rollout actor (the broadcast).
// Answer from a rollout: ConfigAck. The coordinator answers nothing; a stale
// or out-of-order update is rejected and counted.
type ConfigUpdate struct {
	Version string `msgpack:"version"`
	Stage   int    `msgpack:"stage"`
	JSON    []byte `msgpack:"json"`
}

// ConfigAck is sent by a rollout actor to the coordinator (with Request) once
// it holds Version. Answer: WorkUnits of that version, once the stage starts.
type ConfigAck struct {
	Node    string `msgpack:"node"`
	Version string `msgpack:"version"`
}

// PolicyVersion is sent by the learner (with Request) to each subscriber
// when the policy version moved, at most one unacknowledged at a time per
// subscriber (versions in between are skipped: the latest wins). Answer:
// PolicyAck. Without the ack window a learner could fill a busy rollout's
// mailbox while that rollout waits on the learner's: a deadlock.
type PolicyVersion struct {
	Version int64 `msgpack:"version"`
}

// PolicyAck is sent by a subscriber to the learner (with Request) for each
// PolicyVersion it received. Answer: the next PolicyVersion, if the version
// moved meanwhile.
type PolicyAck struct {
	Node    string `msgpack:"node"`
	Version int64  `msgpack:"version"`
}

// SubscribePolicy is sent to the learner (with Request) by any actor that
// wants PolicyVersion updates. Answer: the current PolicyVersion (to be
// acked like the others).
type SubscribePolicy struct {
	Node string `msgpack:"node"`
}

// StageStart is sent by the coordinator to its stage subscribers (learner,
// engineer, driver) when every live rollout acked the stage's config and the
// first units go out. Answer: none.
type StageStart struct {
	RunID         string `msgpack:"run_id"`
	Stage         int    `msgpack:"stage"`
	ConfigVersion string `msgpack:"config_version"`
	Units         int    `msgpack:"units"`
}

// StageDone is sent by the coordinator to its stage subscribers when every
// unit of the stage is done exactly once. The engineer answers (unless Last)
// with a ConfigUpdate for Stage+1, or ProposalFailed.
type StageDone struct {
	RunID         string `msgpack:"run_id"`
	Stage         int    `msgpack:"stage"`
	ConfigVersion string `msgpack:"config_version"`
	Units         int    `msgpack:"units"`      // units in the stage plan
	Completed     int    `msgpack:"completed"`  // units accepted (== Units)
	Issued        int    `msgpack:"issued"`     // leases handed out, re-issues included
	Reissued      int    `msgpack:"reissued"`   // leases that expired, were rejected or whose node left
	Duplicates    int    `msgpack:"duplicates"` // UnitDone for an already-done unit, so far
	Rejected      int    `msgpack:"rejected"`   // UnitRejected received
	Last          bool   `msgpack:"last"`
	// LearnerWaitMs is how long, during the stage, queued units waited for
	// the learner while rollouts had credits (dispatch paced by the
	// learner; see SystemConfig.MaxLag).
	LearnerWaitMs int64 `msgpack:"learner_wait_ms,omitempty"`
	// EvalUnits is the number of evaluation units played after the
	// stage's training (StartRun.Eval), all done.
	EvalUnits int `msgpack:"eval_units,omitempty"`
}

// ProposalFailed is sent by the engineer to the coordinator when its Proposer
// failed to produce a config for Stage. The coordinator ends the run with
// RunDone{Error}. Answer: none.
type ProposalFailed struct {
	RunID string `msgpack:"run_id"`
	Stage int    `msgpack:"stage"`
	Error string `msgpack:"error"`
}

// RunDone is sent by the coordinator to its stage subscribers after the last
// StageDone, or when the run fails (Error set). Answer: none.
type RunDone struct {
	RunID  string `msgpack:"run_id"`
	Stages int    `msgpack:"stages"` // stages completed
	Error  string `msgpack:"error,omitempty"`
}

// NodeLeft is sent by membership to the coordinator when a node leaves or is
// declared dead. The coordinator drops that node's rollouts and re-queues
// their leased units at once. Answer: none.
type NodeLeft struct {
	Node string `msgpack:"node"`
}

// Tick is sent by the driver's ticker (or a test) to the coordinator. The
// coordinator re-queues units whose lease deadline passed by its Clock.
// Answer: none.
type Tick struct{}

// Shutdown is sent by the driver to any t2t actor. The actor cancels its work
// and stops itself. Answer: none.
type Shutdown struct {
	Reason string `msgpack:"reason"`
}

// RegisterMessages registers every message above in r under the name
// "t2t.<TypeName>". Call it once when a node is built.
func RegisterMessages(r *Registry) error {
	for _, m := range []struct {
		name  string
		proto any
	}{
		{"t2t.StartRun", StartRun{}},
		{"t2t.WorkUnit", WorkUnit{}},
		{"t2t.RequestWork", RequestWork{}},
		{"t2t.UnitDone", UnitDone{}},
		{"t2t.UnitGroups", UnitGroups{}},
		{"t2t.UnitRejected", UnitRejected{}},
		{"t2t.ConfigUpdate", ConfigUpdate{}},
		{"t2t.ConfigAck", ConfigAck{}},
		{"t2t.PolicyVersion", PolicyVersion{}},
		{"t2t.PolicyAck", PolicyAck{}},
		{"t2t.SubscribePolicy", SubscribePolicy{}},
		{"t2t.StageStart", StageStart{}},
		{"t2t.StageDone", StageDone{}},
		{"t2t.ProposalFailed", ProposalFailed{}},
		{"t2t.RunDone", RunDone{}},
		{"t2t.NodeLeft", NodeLeft{}},
		{"t2t.Tick", Tick{}},
		{"t2t.Shutdown", Shutdown{}},
	} {
		if err := r.Register(m.name, m.proto); err != nil {
			return err
		}
	}
	return nil
}
