package bench

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// modelRow is the table's first row: the model and its shape.
func modelRow(name string, c hfmodel.Config) [2]string {
	return [2]string{"model", fmt.Sprintf("%s (%d layers, hidden %d, %d/%d heads × %d, vocab %d)",
		name, c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.VocabSize)}
}

func memRows(m MemoryReport, estimate int64) [][2]string {
	gib := func(b int64) string { return fmt.Sprintf("%.3f GiB", float64(b)/(1<<30)) }
	return [][2]string{
		{"memory estimate", gib(estimate)},
		{"host peak RSS", gib(m.HostPeakRSS)},
		{"Go runtime", fmt.Sprintf("%s obtained from the OS, heap peak %s", gib(m.GoSys), gib(m.GoHeapPeak))},
		{"device memory", m.Device},
	}
}

func printRows(w io.Writer, title string, rows [][2]string) error {
	fmt.Fprintln(w, title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}
