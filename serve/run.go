package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// LoadError: Run could not load its checkpoint directory at start (a bad checkpoint, a missing
// tokenizer, or the engine failing: Err is textpolicy.OpenLM's error).
type LoadError struct {
	Dir string
	Err error
}

func (e *LoadError) Error() string { return fmt.Sprintf("serve: load %s: %v", e.Dir, e.Err) }

// Unwrap returns Err.
func (e *LoadError) Unwrap() error { return e.Err }

// RunConfig is what Run serves, and where.
type RunConfig struct {
	// Dir is the checkpoint directory (textpolicy.OpenLM), loaded at start and on every reload.
	Dir string
	// Addr is the listen address (host:port; port 0 picks a free one).
	Addr string
	// Engine is the compute engine and device every load uses.
	Engine engine.Spec
	// Options configure the Server.
	Options Options
	// Ready, if set, gets the listen address once the listener is up.
	Ready func(addr string)
	// Reloaded, if set, gets the outcome of each reload: the new revision, or the error that
	// left the previous model serving.
	Reloaded func(revision int64, err error)
}

// shutdownTimeout bounds how long Run waits for running requests once ctx ends.
const shutdownTimeout = 10 * time.Second

// Run loads cfg.Dir, serves it over HTTP at cfg.Addr until ctx ends, and reloads the directory
// on every value from reload (t2t serve sends SIGHUP there): a new model on the same engine is
// swapped in and the previous one is closed (a torch worker stopped) once the requests running
// on it end; a failed reload leaves the previous model serving. Run writes one line to out when
// it serves and one per reload. A directory that does not load at start is a *LoadError, bad
// Options are ErrOptions; once serving, Run returns nil when ctx ends (after up to 10 s for
// running requests) or the listener's error.
func Run(ctx context.Context, cfg RunConfig, reload <-chan os.Signal, out io.Writer) error {
	lm, err := textpolicy.OpenLM(ctx, cfg.Engine, cfg.Dir)
	if err != nil {
		return &LoadError{Dir: cfg.Dir, Err: err}
	}
	if cfg.Options.LoadWeights == nil {
		cfg.Options.LoadWeights = func(ctx context.Context, dir string) (*textpolicy.LM, error) {
			return textpolicy.OpenLM(ctx, cfg.Engine, dir)
		}
	}
	srv, err := New(lm, cfg.Options)
	if err != nil {
		_ = lm.Close()
		return err
	}
	defer func() {
		cur, _ := srv.Current()
		_ = cur.Close()
	}()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := srv.HTTPServer()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	addr := ln.Addr().String()
	printServing(out, srv, lm, ln.Addr(), cfg)
	if cfg.Ready != nil {
		cfg.Ready(addr)
	}
	for {
		select {
		case <-reload:
			rev, err := srv.reloadOn(ctx, cfg.Engine, cfg.Dir)
			if cfg.Reloaded != nil {
				cfg.Reloaded(rev, err)
			}
			if err != nil {
				fmt.Fprintf(out, "reload failed, still serving the previous model: %v\n", err)
				continue
			}
			fmt.Fprintf(out, "reloaded %s: revision %d\n", cfg.Dir, rev)
		case err := <-errc:
			return fmt.Errorf("serve: %w", err)
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		}
	}
}

// printServing writes Run's first line (the model, its engine and
// batching, the address) and the warning for an unprotected address.
func printServing(out io.Writer, srv *Server, lm *textpolicy.LM, addr net.Addr, cfg RunConfig) {
	batching := "one generation at a time"
	if n := lm.SchedulerSlots(); n > 0 {
		batching = fmt.Sprintf("continuous batching over %d slots", n)
	}
	fmt.Fprintf(out, "serving %s (%d parameters, context %d, engine %s on %s, %s) at http://%s/v1 — SIGHUP reloads %s\n",
		srv.ModelName(), lm.Model.Config().NumParams(), lm.MaxContext(), lm.Model.Engine(), lm.Model.Device(), batching, addr, cfg.Dir)
	if w := InsecureWarning(addr, cfg.Options.APIKey); w != "" {
		fmt.Fprintln(out, w)
	}
}

// reloadOn loads dir on the engine spec and swaps it in; the previous model is closed (a torch
// worker stopped) once the requests running on it end.
func (s *Server) reloadOn(ctx context.Context, spec engine.Spec, dir string) (int64, error) {
	lm, err := textpolicy.OpenLM(ctx, spec, dir)
	if err != nil {
		return 0, fmt.Errorf("reload %s: %w", dir, err)
	}
	old, _ := s.Current()
	rev := s.Swap(lm)
	go func() { _ = old.Close() }()
	return rev, nil
}

// HTTPServer is an http.Server for s with the timeouts a public endpoint needs: a client
// that trickles its request is cut off (ReadTimeout), an idle keep-alive connection closes
// (IdleTimeout). Responses have no write timeout (a long stream is legitimate); each write of
// a stream has its own deadline instead.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
}
