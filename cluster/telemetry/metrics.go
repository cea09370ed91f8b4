package telemetry

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
)

// Exemplar label names: a histogram observation made inside a sampled span
// carries that span's ids, so a dashboard can jump from a slow bucket to
// its trace (Grafana's exemplar link reads trace_id).
const (
	ExemplarTraceID = "trace_id"
	ExemplarSpanID  = "span_id"
)

// StepBuckets are the upper bounds (seconds, 1-2.5-5 steps from 1 ms to
// 500 s) of the work-unit, learner-step and engineer-proposal histograms: a
// scripted policy takes milliseconds, an LLM seconds to minutes.
func StepBuckets() []float64 {
	return []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500}
}

// RedisBuckets are the upper bounds (seconds, 100 µs to 1 s) of the Redis
// command histogram: a command on a LAN takes well under a millisecond, and
// one past a second is a problem to look at.
func RedisBuckets() []float64 {
	return []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
}

// Metrics are a node's metrics in a client_golang registry: t2t's standard
// counters, gauges and latency histograms (the Metric* names), each sample
// labelled with the constant labels NewMetrics got (node=...), the Go
// runtime (go_*) and process (process_*) collectors, and whatever a package
// adds with Register. Handler serves them. Update the fields directly; the
// Observe methods add exemplars and are no-ops on a nil *Metrics.
type Metrics struct {
	reg      *prometheus.Registry
	labelled prometheus.Registerer // reg, adding the constant labels

	Episodes          prometheus.Counter // MetricEpisodes
	EpisodesPerSecond prometheus.Gauge   // MetricEpisodesPerSecond
	WorkUnits         prometheus.Counter // MetricWorkUnits
	QueueDepth        prometheus.Gauge   // MetricQueueDepth
	PolicyLag         prometheus.Gauge   // MetricPolicyLag
	LeaseReissues     prometheus.Counter // MetricLeaseReissues
	LearnerUpdates    prometheus.Counter // MetricLearnerUpdates
	Stage             prometheus.Gauge   // MetricStage

	UnitSeconds            prometheus.Histogram     // MetricUnitSeconds
	LearnerStepSeconds     prometheus.Histogram     // MetricLearnerStepSeconds
	EngineerProposeSeconds prometheus.Histogram     // MetricEngineerProposeSeconds
	RedisSeconds           *prometheus.HistogramVec // MetricRedisSeconds, label LabelCommand
}

// LabelCommand is MetricRedisSeconds' label: the Redis command in lower
// case ("get", "evalsha"), or "pipeline" for a pipeline or transaction.
const LabelCommand = "command"

// NewMetrics returns a new registry holding the Go and process collectors
// and the standard metrics, the latter labelled with constLabels (nil for
// none). A label name or value client_golang refuses (an empty name, a
// reserved "__" one, a value that is not UTF-8) is a *MetricError.
func NewMetrics(constLabels map[string]string) (*Metrics, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, &MetricError{Name: "go", Err: err}
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, &MetricError{Name: "process", Err: err}
	}
	m := &Metrics{reg: reg, labelled: prometheus.WrapRegistererWith(constLabels, reg)}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	hist := func(name, help string, buckets []float64) prometheus.HistogramOpts {
		return prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}
	}
	m.Episodes = counter(MetricEpisodes, "Episodes finished (one sampled plan verified).")
	m.WorkUnits = counter(MetricWorkUnits, "Work units completed (first result per unit).")
	m.LeaseReissues = counter(MetricLeaseReissues, "Work units re-issued after their lease expired.")
	m.LearnerUpdates = counter(MetricLearnerUpdates, "Learner updates applied.")
	m.EpisodesPerSecond = gauge(MetricEpisodesPerSecond, "Episodes per second over the last measured window.")
	m.QueueDepth = gauge(MetricQueueDepth, "Work units waiting for a rollout.")
	m.PolicyLag = gauge(MetricPolicyLag, "Policy lag of the latest samples, in versions.")
	m.Stage = gauge(MetricStage, "Current stage index.")
	m.UnitSeconds = prometheus.NewHistogram(hist(MetricUnitSeconds,
		"Seconds one work unit took on this node's rollouts: generate, sample, verify and record.", StepBuckets()))
	m.LearnerStepSeconds = prometheus.NewHistogram(hist(MetricLearnerStepSeconds,
		"Seconds one learner update took: batch assembly, optimizer step and policy publish.", StepBuckets()))
	m.EngineerProposeSeconds = prometheus.NewHistogram(hist(MetricEngineerProposeSeconds,
		"Seconds the engineer's strategy took to propose one stage's config.", StepBuckets()))
	m.RedisSeconds = prometheus.NewHistogramVec(hist(MetricRedisSeconds,
		"Seconds one Redis command (or pipeline) of the run's store took, by command.", RedisBuckets()), []string{LabelCommand})
	if err := m.Register(m.Episodes, m.WorkUnits, m.LeaseReissues, m.LearnerUpdates,
		m.EpisodesPerSecond, m.QueueDepth, m.PolicyLag, m.Stage,
		m.UnitSeconds, m.LearnerStepSeconds, m.EngineerProposeSeconds, m.RedisSeconds); err != nil {
		return nil, err
	}
	return m, nil
}

// Register adds collectors (a package's own metrics) to the registry with
// the constant labels. A refused one (a name taken, an invalid name or
// label) is a *MetricError naming it; those before it stay registered.
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := m.labelled.Register(c); err != nil {
			return &MetricError{Name: collectorName(c), Err: err}
		}
	}
	return nil
}

// collectorName is the first metric name c describes, for errors.
func collectorName(c prometheus.Collector) string {
	ch := make(chan *prometheus.Desc, 1)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	name := ""
	for d := range ch {
		if name == "" {
			name = d.String()
		}
	}
	return name
}

// Gatherer returns the registry, for tests and for serving it elsewhere.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Handler serves the registry for any path: the Prometheus text format, or
// OpenMetrics (with the histograms' exemplars) to a scraper that asks for
// it in its Accept header, as Prometheus does with exemplar storage on. An
// error collecting one metric is reported in the page's place with 500.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// ObserveUnit records one work unit's duration; sc is its work_unit span.
func (m *Metrics) ObserveUnit(d time.Duration, sc trace.SpanContext) {
	if m != nil {
		observe(m.UnitSeconds, d, sc)
	}
}

// ObserveLearnerStep records one learner update's duration; sc is its
// learner.update span.
func (m *Metrics) ObserveLearnerStep(d time.Duration, sc trace.SpanContext) {
	if m != nil {
		observe(m.LearnerStepSeconds, d, sc)
	}
}

// ObserveEngineerPropose records one proposal's duration; sc is its
// engineer.propose span.
func (m *Metrics) ObserveEngineerPropose(d time.Duration, sc trace.SpanContext) {
	if m != nil {
		observe(m.EngineerProposeSeconds, d, sc)
	}
}

// ObserveRedis records one Redis command's duration, with the span of ctx
// (the store operation's caller) as exemplar. Its signature is
// store.Options.ObserveCommand's.
func (m *Metrics) ObserveRedis(ctx context.Context, command string, d time.Duration) {
	if m != nil {
		observe(m.RedisSeconds.WithLabelValues(command), d, trace.SpanContextFromContext(ctx))
	}
}

// observe records d in seconds, with sc's ids as exemplar when sc is
// sampled (an unsampled span's trace is nowhere to be found).
func observe(o prometheus.Observer, d time.Duration, sc trace.SpanContext) {
	if eo, ok := o.(prometheus.ExemplarObserver); ok && sc.IsSampled() {
		eo.ObserveWithExemplar(d.Seconds(), prometheus.Labels{
			ExemplarTraceID: sc.TraceID().String(), ExemplarSpanID: sc.SpanID().String()})
		return
	}
	o.Observe(d.Seconds())
}
