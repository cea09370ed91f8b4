package serve

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/t2t-lab/t2t/internal/genmetrics"
	"github.com/t2t-lab/t2t/learner/engine"
)

// Metric names of the server's own gauges (next to genmetrics' scheduler counters).
const (
	MetricQueued  = "t2t_serve_queued_requests"
	MetricRunning = "t2t_serve_running_requests"
)

// metricsHandler serves GET /metrics: the requests waiting for and holding a generation
// place, and, when the served model samples through a scheduler, its counters (rows per
// decode step, tokens, queue wait, KV-pool use; package genmetrics).
func (s *Server) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: MetricQueued, Help: "Requests waiting for a generation place."},
			func() float64 { q, _ := s.gate.stats(); return float64(q) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: MetricRunning, Help: "Requests generating now."},
			func() float64 { _, r := s.gate.stats(); return float64(r) }),
		genmetrics.New(func() (engine.SchedulerStats, bool) { return s.cur.Load().lm.SchedulerStats() }),
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
