package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/daemon"
	"github.com/t2t-lab/t2t/train"
)

func runTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t train", "t2t train [flags]   (every role in one process: coordinator, rollouts, learner, engineer)", stderr)
	var tf train.Flags
	tf.Register(fs)
	rollouts := fs.Int("rollouts", 2, "rollout actors")
	httpAddr := fs.String("http", "", "serve on this host:port (empty: off): /healthz, /readyz, /metrics (Prometheus text), the live page /ui and its JSON /api/status; GET and HEAD only")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *rollouts < 1 || *rollouts > 256 {
		return badInput("--rollouts %d: must be in [1,256]", *rollouts)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	s, err := tf.Build(ctx, tf.Logger(stderr), stdout)
	if err != nil {
		return err
	}
	defer s.Close()
	tel, stopTel, err := tf.Telemetry.Setup(ctx)
	if err != nil {
		return badInput("tracing: %v", err)
	}
	defer stopTel()
	st, err := store.Open(ctx, store.Options{URL: tf.Redis.URL(), Logger: s.Logger})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer st.Close()
	opt := tf.Options(s, stdout)
	opt.Rollouts = *rollouts
	opt.Tracer = tel.Tracer("t2t/train")
	if *httpAddr != "" {
		dash := daemon.NewDashboard(st, nil, cmp.Or(opt.RunID, train.DefaultRunID(opt.Seed)), nil).WithSampling(train.NewSamplingMeter(s.Policy, time.Now())).
			WithDevice(train.NewDeviceMeter(s.Policy))
		stopHTTP, err := daemon.ServeRun(*httpAddr, tf.Telemetry.Node, &opt, st, dash, stdout, "t2t train: ")
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	train.Progress(&opt, stderr)
	start := time.Now()
	res, err := train.Run(ctx, opt, s.Policy, st)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, train.DoneLine(res.RunID, time.Since(start), st.URL(), res.Flow()))
	return nil
}
