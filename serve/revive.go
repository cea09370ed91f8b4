package serve

import (
	"context"

	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/learner/torch"
)

// workerGone reports whether lm runs in a torch worker process that has exited (killed, out
// of memory): every call on it fails from then on.
func workerGone(lm *textpolicy.LM) bool {
	m, ok := lm.Model.(*torch.Model)
	if !ok {
		return false
	}
	select {
	case <-m.Worker().Exited():
		return true
	default:
		return false
	}
}

// serving is the model a new generation runs on. When the served model's torch worker has
// died (the requests that were running on it failed with a torch.DiedError), the first request
// after that loads its directory again (Options.LoadWeights: a new worker) and swaps it in, so
// the server recovers without a restart; the requests meanwhile wait for that load. Without
// LoadWeights, or when the load fails, the request runs on the dead model and fails with its
// error.
func (s *Server) serving(ctx context.Context) *served {
	c := s.cur.Load()
	if !workerGone(c.lm) || s.opt.LoadWeights == nil || c.lm.Dir == "" {
		return c
	}
	s.reviveMu.Lock()
	defer s.reviveMu.Unlock()
	if now := s.cur.Load(); now != c {
		return now
	}
	log := s.opt.Logger.With("dir", c.lm.Dir)
	log.Warn("the torch worker died: loading the model again")
	lm, err := s.opt.LoadWeights(ctx, c.lm.Dir)
	if err != nil {
		log.Error("reload after the worker died failed", "err", err)
		return c
	}
	s.swap(lm, c.name)
	go func() { _ = c.lm.Close() }()
	return s.cur.Load()
}
