package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/t2t-lab/t2t/experiment"
	"github.com/t2t-lab/t2t/report"
)

func runExperiment(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t experiment", "t2t experiment --strategies fixed,rules,learnability[,llm] --seeds 3 --stages N [--modules 'F;F,G;F,G,H0,T'] --out DIR\n"+
		"       t2t experiment --recipe configs/paper/qwen3-4b.json --model DIR [--scale F] [flags that override the recipe]", stderr)
	var f experiment.Flags
	f.Register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o, err := f.Options(fs, args, stdout, stderr)
	if err != nil {
		return inputError(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	exp, err := experiment.Run(ctx, o)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "\n%s\nwrote %s/{experiment.html,experiment.md,experiment.csv,summary.csv,experiment.json}\n", report.ExperimentSummaryMarkdown(exp), o.Dir)
	return err
}
