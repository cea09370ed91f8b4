package actors

// Stats returns the actors' counters now, while the system runs (a live
// view for metrics endpoints): the coordinator's, learner's, engineer's,
// this process's rollouts' and the node's. Stages is empty: per-stage
// counts come with Run's report. Safe for concurrent use.
func (s *System) Stats() RunReport {
	rep := RunReport{RunID: s.cfg.RunID}
	s.fill(&rep)
	return rep
}
