package main

import (
	"fmt"
	"io"

	"github.com/t2t-lab/t2t/traces"
)

func runTraces(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t traces", "t2t traces [--svg FILE] SPANS.jsonl... | --otlp-json DIR", stderr)
	svg := fs.String("svg", "", "also write an SVG timeline (one row per node) to this file")
	otlpDir := fs.String("otlp-json", "", "read every *.json / *.jsonl in this folder (span files from --trace-file, or an OpenTelemetry Collector file exporter's output)")
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	var spans []traces.Span
	switch {
	case *otlpDir != "" && len(files) > 0:
		return badInput("give span files or --otlp-json, not both")
	case *otlpDir != "":
		spans, err = traces.ReadOTLPJSON(*otlpDir)
	case len(files) == 0:
		return badInput("name at least one span file (written by --trace-file), or --otlp-json DIR")
	default:
		spans, err = traces.ReadSpans(files...)
	}
	if err != nil {
		return badInput("%v", err)
	}
	rep := traces.Analyze(spans)
	if _, err := io.WriteString(stdout, rep.Text()); err != nil {
		return err
	}
	if *svg != "" {
		if err := writeOut(*svg, stdout, traces.TimelineSVG(spans)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "timeline → %s\n", *svg)
	}
	return nil
}
