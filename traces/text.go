package traces

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// Text renders the report as plain-text tables: a header line, latency per
// span name, the stages' critical-path breakdown, per-node utilisation and
// the stragglers.
func (r Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d spans in %d traces over %s", r.Spans, r.Traces, fmtDur(time.Duration(r.End-r.Start)))
	if r.Duplicates > 0 {
		fmt.Fprintf(&b, " (%d duplicate spans ignored)", r.Duplicates)
	}
	b.WriteString("\n")
	if r.Spans == 0 {
		return b.String()
	}

	b.WriteString("\nLatency by span name\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\tcount\tp50\tp90\tp99\tmax\tmean\ttotal\t")
	for _, l := range r.Latency {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", l.Name, l.Count,
			fmtDur(l.P50), fmtDur(l.P90), fmtDur(l.P99), fmtDur(l.Max), fmtDur(l.Mean), fmtDur(l.Total))
	}
	_ = tw.Flush() // writes to a strings.Builder cannot fail

	r.writeStages(&b)

	b.WriteString("\nNodes: busy = union of work_unit spans, over the observed window\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "node\tspans\tunits\tbusy\tutilisation\tmean unit\tstragglers\t")
	for _, n := range r.Nodes {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.1f%%\t%s\t%d\t\n", orDash(n.Node), n.Spans, n.WorkUnits,
			fmtDur(n.Busy), 100*n.Utilisation, fmtDur(n.MeanUnit), n.Stragglers)
	}
	_ = tw.Flush()

	r.writeStragglers(&b)
	return b.String()
}

// writeStages writes the stages' critical-path table, if there are stages.
func (r Report) writeStages(b *strings.Builder) {
	if len(r.Stages) == 0 {
		return
	}
	b.WriteString("\nStages: where the wall time went (critical path; parts sum to wall)\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "stage\trun\twall\tunits\t")
	for c := range NumCategories {
		fmt.Fprintf(tw, "%s\t", c)
	}
	fmt.Fprintln(tw)
	for i := range r.Stages {
		s := &r.Stages[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t", orDash(s.Stage), orDash(s.Run), fmtDur(s.Wall), s.WorkUnits)
		for c := range NumCategories {
			fmt.Fprintf(tw, "%s %3.0f%%\t", fmtDur(s.Parts[c]), 100*s.Fraction(c))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
}

// writeStragglers writes the stragglers' header and table, if a threshold
// was computed.
func (r Report) writeStragglers(b *strings.Builder) {
	if r.StragglerThreshold <= 0 {
		return
	}
	fmt.Fprintf(b, "\nStragglers: work units over %.1f × p90 = %s: %d\n", StragglerFactor, fmtDur(r.StragglerThreshold), len(r.Stragglers))
	if len(r.Stragglers) > 0 {
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "node\tstage\twork unit\tduration\t× p90\tspan\t")
		for _, s := range r.Stragglers {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t\n", orDash(s.Node), orDash(s.Stage), orDash(s.WorkUnit),
				fmtDur(s.Duration), s.Ratio, s.SpanID)
		}
		_ = tw.Flush()
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fmtDur prints d with about four significant digits in a fitting unit.
func fmtDur(d time.Duration) string {
	switch ad := max(d, -d); {
	case ad == 0:
		return "0"
	case ad >= time.Minute:
		return fmt.Sprintf("%.1fm", d.Minutes())
	case ad >= time.Second:
		return fmt.Sprintf("%.3fs", d.Seconds())
	case ad >= time.Millisecond:
		return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond))
	case ad >= time.Microsecond:
		return fmt.Sprintf("%.3fµs", float64(d)/float64(time.Microsecond))
	default:
		return fmt.Sprintf("%dns", int64(d))
	}
}
