package serve

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
)

// hostBytesPerToken is what one generated token costs on the host beyond the model's
// buffers: its entry in the results and its share of the response (text, log-prob JSON); each
// top-log-prob alternative costs as much again.
const hostBytesPerToken = 96

// promptCap is the most tokens a prompt of c may have: Options.MaxPromptTokens, and the
// context less one (the first completion token needs a position).
func (s *Server) promptCap(c *served) int {
	return max(1, min(s.opt.MaxPromptTokens, c.lm.MaxContext()-1))
}

// encodePrompt tokenizes text, counting no further than the prompt cap: a prompt over it is a
// 422 (param names the field) without the rest of it ever being tokenized.
func (s *Server) encodePrompt(c *served, text, param string) ([]int32, *reqError) {
	limit := s.promptCap(c)
	ids, ok := c.lm.Tok.EncodeLimit(text, limit)
	if !ok {
		return nil, promptTooLong(param, limit)
	}
	return ids, nil
}

func promptTooLong(param string, limit int) *reqError {
	return unprocessable(param, "prompt_too_long", "the prompt has more than %d tokens, the most this server takes (the model's context less one, or --max-prompt-tokens)", limit)
}

// memoryEstimate is the bytes job needs: the model's generation buffers for its rows and
// padded lengths, and its results on the host.
func memoryEstimate(job *genJob) int64 {
	maxPrompt := 0
	for _, r := range job.rows {
		maxPrompt = max(maxPrompt, len(r))
	}
	est := float64(job.lm.Model.Config().GenerateMemory(len(job.rows), maxPrompt, job.sc.MaxNewTokens))
	est += float64(len(job.rows)) * float64(job.sc.MaxNewTokens) * float64(hostBytesPerToken*(1+job.top))
	if est >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(est)
}

// admit waits until job may generate (gate.acquire) and returns the release to call when it
// is done. When it may not, admit answers the request (422 for a request over the memory
// budget, 429 with Retry-After when the queue is full; nothing when the client went away)
// and returns false.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, job *genJob, log *slog.Logger) (func(), bool) {
	need := memoryEstimate(job)
	release, err := s.gate.acquire(r.Context(), need, job.key)
	switch {
	case err == nil:
		return release, true
	case errors.Is(err, errNeverFits):
		log.Warn("request over the memory budget", "need", need, "budget", s.opt.MaxMemory)
		writeReqError(w, unprocessable("n", "memory_limit_exceeded",
			"this request (%d completions of up to %d new tokens) needs about %s, more than this server's memory budget of %s (--max-memory): ask for fewer completions (n) or tokens (max_tokens)",
			len(job.rows), job.sc.MaxNewTokens, mib(need), mib(s.opt.MaxMemory)))
	case errors.Is(err, errQueueFull):
		log.Warn("request queue full", "max_queue", s.opt.MaxQueue)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "rate_limit_error", "", "queue_full",
			fmt.Sprintf("the server is busy: %d requests are already waiting (--max-queue); retry later", s.opt.MaxQueue))
	default:
		log.Info("request abandoned while queued", "err", err)
	}
	return nil, false
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
