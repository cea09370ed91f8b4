package learner

// Policy is what every trainable policy offers the rest of t2t: a version that grows with each
// optimizer step (samples carry it, so staleness can be bounded), and checkpoints.
type Policy interface {
	// Version is the number of optimizer steps behind the current weights.
	Version() int64
	// Save writes a checkpoint directory atomically.
	Save(dir string) error
	// Load restores a checkpoint; on error the policy is unchanged.
	Load(dir string) error
}
