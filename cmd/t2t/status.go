package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/daemon"
	"github.com/t2t-lab/t2t/train"
)

const statusUsage = `t2t status --redis redis://host:port/db [--run ID] [--json | --http host:port]

Prints the live state of a run from Redis: its stage, phase, policy and
config version; the config history and the latest config change; per stage
the valid/optimal rates of the training episodes, the validation set and
the 3/4/5-agent benchmark suite, the learner's updates and the groups it
discarded (stale, late stage, duplicate); the run's flow (groups used,
kept late, discarded, time dispatch waited for the learner); its nodes
with their load as the run last recorded them (roles, units done and in
flight, mean unit time, last heartbeat); and the checkpoints. Without --run, the most recently updated run. With --http it
serves the run's live page (/ui, /api/status) from Redis until interrupted:
the page of a finished run, or of a run whose own --http you cannot reach.`

func runStatus(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t status", statusUsage, stderr)
	var redis store.Flags
	redis.Register(fs, "Redis URL of the run (redis://host:port/db)")
	runID := fs.String("run", "", "run id (default: the most recently updated run)")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	timeout := fs.Duration("timeout", 5*time.Second, "give up on Redis after this long (an unreachable Redis fails within it)")
	httpAddr := fs.String("http", "", "serve the run's live page (/ui, /api/status) on this host:port until interrupted, reading Redis on every request")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if redis.URL() == "" {
		return badInput("--redis is required: the Redis URL the run's nodes use")
	}
	if *timeout <= 0 {
		return badInput("--timeout must be > 0")
	}
	if *asJSON && *httpAddr != "" {
		return badInput("--json and --http: choose one")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	st, err := store.Open(ctx, store.Options{URL: redis.URL(), MaxRetryElapsed: *timeout, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer st.Close()
	ps, err := train.OpenPolicyStore(ctx, redis.URL(), "")
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer ps.Close()
	rep, err := train.CollectStatus(ctx, st, ps, *runID)
	if err != nil {
		return err
	}
	rep.Redis = st.URL()
	if *httpAddr != "" {
		return serveStatus(*httpAddr, st, ps, rep.Run, stdout)
	}
	if *asJSON {
		return train.WriteStatusJSON(stdout, rep)
	}
	return train.WriteStatus(stdout, rep, time.Now())
}

// serveStatus serves run's live page from st and ps on addr until an
// interrupt.
func serveStatus(addr string, st *store.Store, ps *train.PolicyStore, run string, out io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return daemon.ServeUntil(ctx, addr, daemon.NewDashboard(st, ps, run, nil).Handler(), out, "t2t status: run="+run+" ")
}
