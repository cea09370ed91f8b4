package telemetry

import (
	"bytes"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Registry is a small set of named counters and gauges rendered in the
// Prometheus text exposition format (version 0.0.4) by Handler. Every sample
// carries the registry's constant labels; a CounterVec's samples add one
// label of their own. Safe for concurrent use; updating a metric is one
// atomic operation.
type Registry struct {
	labels     string // rendered constant labels, "" or `{k="v",...}`
	labelNames map[string]bool

	mu      sync.Mutex
	metrics map[string]metric
}

type metric interface {
	kind() string
	help() string
	value() float64
}

// Counter is a monotonically increasing count.
type Counter struct {
	h string
	n atomic.Uint64
}

// Inc adds one.
func (c *Counter) Inc() { c.n.Add(1) }

// Add adds n.
func (c *Counter) Add(n uint64) { c.n.Add(n) }

// Value returns the count.
func (c *Counter) Value() uint64 { return c.n.Load() }

func (c *Counter) kind() string   { return "counter" }
func (c *Counter) help() string   { return c.h }
func (c *Counter) value() float64 { return float64(c.n.Load()) }

// Gauge is a value that goes up and down.
type Gauge struct {
	h    string
	bits atomic.Uint64
}

// Set sets the value.
func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

// Add adds d (which may be negative).
func (g *Gauge) Add(d float64) {
	for {
		old := g.bits.Load()
		if g.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// Value returns the value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.bits.Load()) }

func (g *Gauge) kind() string   { return "gauge" }
func (g *Gauge) help() string   { return g.h }
func (g *Gauge) value() float64 { return g.Value() }

// NewRegistry returns an empty registry whose samples carry constLabels
// (nil for none). Label names must be valid metric names without ':'.
func NewRegistry(constLabels map[string]string) (*Registry, error) {
	keys := make([]string, 0, len(constLabels))
	for k := range constLabels {
		if !validName(k) || strings.Contains(k, ":") || strings.HasPrefix(k, "__") {
			return nil, &MetricError{Name: k, Err: ErrMetricName}
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	if len(keys) > 0 {
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(k)
			b.WriteString(`="`)
			b.WriteString(escapeLabel(constLabels[k]))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	names := map[string]bool{}
	for _, k := range keys {
		names[k] = true
	}
	return &Registry{labels: b.String(), labelNames: names, metrics: map[string]metric{}}, nil
}

// CounterVec is a family of counters under one metric name that differ in
// the value of one label, e.g. t2t_learner_discarded_groups_total with
// reason="stale" and reason="duplicate".
type CounterVec struct {
	h, label string
	mu       sync.Mutex
	series   map[string]*Counter
}

// With returns the counter of the label value v, creating it (at 0) if new.
func (v *CounterVec) With(value string) *Counter {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.series[value]
	if !ok {
		c = &Counter{}
		v.series[value] = c
	}
	return c
}

func (v *CounterVec) kind() string { return "counter" }
func (v *CounterVec) help() string { return v.h }

// value is the sum over the series (the family's total).
func (v *CounterVec) value() float64 {
	var n float64
	for _, s := range v.snapshot() {
		n += s.v
	}
	return n
}

type vecSample struct {
	label string
	v     float64
}

func (v *CounterVec) snapshot() []vecSample {
	v.mu.Lock()
	out := make([]vecSample, 0, len(v.series))
	for k, c := range v.series {
		out = append(out, vecSample{k, c.value()})
	}
	v.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].label < out[j].label })
	return out
}

// CounterVec returns the counter family registered under name, registering
// it with help text help and the label label if it is new. It fails with
// ErrMetricName for an invalid metric or label name (or a label that is
// one of the registry's constant labels) and ErrMetricKind if name is
// registered as something else.
func (r *Registry) CounterVec(name, help, label string) (*CounterVec, error) {
	if !validName(label) || strings.Contains(label, ":") || strings.HasPrefix(label, "__") || r.labelNames[label] {
		return nil, &MetricError{Name: label, Err: ErrMetricName}
	}
	m, err := r.register(name, func() metric { return &CounterVec{h: help, label: label, series: map[string]*Counter{}} })
	if err != nil {
		return nil, err
	}
	v, ok := m.(*CounterVec)
	if !ok || v.label != label {
		return nil, &MetricError{Name: name, Err: ErrMetricKind}
	}
	return v, nil
}

// withLabel renders the constant labels plus name="value".
func (r *Registry) withLabel(name, value string) string {
	l := name + `="` + escapeLabel(value) + `"`
	if r.labels == "" {
		return "{" + l + "}"
	}
	return r.labels[:len(r.labels)-1] + "," + l + "}"
}

// Counter returns the counter registered under name, registering it with
// help text help if it is new. It fails with ErrMetricName for an invalid
// name and ErrMetricKind if name is a gauge.
func (r *Registry) Counter(name, help string) (*Counter, error) {
	m, err := r.register(name, func() metric { return &Counter{h: help} })
	if err != nil {
		return nil, err
	}
	c, ok := m.(*Counter)
	if !ok {
		return nil, &MetricError{Name: name, Err: ErrMetricKind}
	}
	return c, nil
}

// Gauge returns the gauge registered under name, registering it if new; see
// Counter for the errors.
func (r *Registry) Gauge(name, help string) (*Gauge, error) {
	m, err := r.register(name, func() metric { return &Gauge{h: help} })
	if err != nil {
		return nil, err
	}
	g, ok := m.(*Gauge)
	if !ok {
		return nil, &MetricError{Name: name, Err: ErrMetricKind}
	}
	return g, nil
}

func (r *Registry) register(name string, mk func() metric) (metric, error) {
	if !validName(name) {
		return nil, &MetricError{Name: name, Err: ErrMetricName}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.metrics[name]; ok {
		return m, nil
	}
	m := mk()
	r.metrics[name] = m
	return m, nil
}

// WriteText appends every metric, sorted by name, in the Prometheus text
// format to b.
func (r *Registry) WriteText(b *bytes.Buffer) {
	r.mu.Lock()
	names := make([]string, 0, len(r.metrics))
	for n := range r.metrics {
		names = append(names, n)
	}
	ms := make([]metric, len(names))
	sort.Strings(names)
	for i, n := range names {
		ms[i] = r.metrics[n]
	}
	r.mu.Unlock()
	for i, n := range names {
		m := ms[i]
		if h := m.help(); h != "" {
			b.WriteString("# HELP ")
			b.WriteString(n)
			b.WriteByte(' ')
			b.WriteString(escapeHelp(h))
			b.WriteByte('\n')
		}
		b.WriteString("# TYPE ")
		b.WriteString(n)
		b.WriteByte(' ')
		b.WriteString(m.kind())
		b.WriteByte('\n')
		if v, ok := m.(*CounterVec); ok {
			for _, s := range v.snapshot() {
				b.WriteString(n)
				b.WriteString(r.withLabel(v.label, s.label))
				b.WriteByte(' ')
				b.WriteString(formatValue(s.v))
				b.WriteByte('\n')
			}
			continue
		}
		b.WriteString(n)
		b.WriteString(r.labels)
		b.WriteByte(' ')
		b.WriteString(formatValue(m.value()))
		b.WriteByte('\n')
	}
}

// TextContentType is the Content-Type of the Prometheus text format.
const TextContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves the registry for GET and HEAD (any path) and answers 405
// to other methods.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		var b bytes.Buffer
		r.WriteText(&b)
		w.Header().Set("Content-Type", TextContentType)
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		if req.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(b.Bytes()) // a client gone away is not our error
	})
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == ':':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Metrics are t2t's standard metrics (the Metric* names), registered in
// Registry. Actors update the fields directly.
type Metrics struct {
	Registry          *Registry
	Episodes          *Counter // MetricEpisodes
	EpisodesPerSecond *Gauge   // MetricEpisodesPerSecond
	WorkUnits         *Counter // MetricWorkUnits
	QueueDepth        *Gauge   // MetricQueueDepth
	PolicyLag         *Gauge   // MetricPolicyLag
	LeaseReissues     *Counter // MetricLeaseReissues
	LearnerUpdates    *Counter // MetricLearnerUpdates
	Stage             *Gauge   // MetricStage
}

// NewMetrics returns a new registry (with constLabels) holding the standard
// metrics.
func NewMetrics(constLabels map[string]string) (*Metrics, error) {
	r, err := NewRegistry(constLabels)
	if err != nil {
		return nil, err
	}
	m := &Metrics{Registry: r}
	counters := []struct {
		dst        **Counter
		name, help string
	}{
		{&m.Episodes, MetricEpisodes, "Episodes finished (one sampled plan verified)."},
		{&m.WorkUnits, MetricWorkUnits, "Work units completed (first result per unit)."},
		{&m.LeaseReissues, MetricLeaseReissues, "Work units re-issued after their lease expired."},
		{&m.LearnerUpdates, MetricLearnerUpdates, "Learner updates applied."},
	}
	for _, c := range counters {
		if *c.dst, err = r.Counter(c.name, c.help); err != nil {
			return nil, err
		}
	}
	gauges := []struct {
		dst        **Gauge
		name, help string
	}{
		{&m.EpisodesPerSecond, MetricEpisodesPerSecond, "Episodes per second over the last measured window."},
		{&m.QueueDepth, MetricQueueDepth, "Work units waiting for a rollout."},
		{&m.PolicyLag, MetricPolicyLag, "Policy lag of the latest samples, in versions."},
		{&m.Stage, MetricStage, "Current stage index."},
	}
	for _, g := range gauges {
		if *g.dst, err = r.Gauge(g.name, g.help); err != nil {
			return nil, err
		}
	}
	return m, nil
}
