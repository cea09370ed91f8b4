package serve_test

import (
	"context"
	"net/http"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/serve"
)

// Serve a checkpoint directory and swap in a newer one later.
func Example() {
	ctx := context.Background()
	lm, err := textpolicy.OpenLM(ctx, engine.Spec{Device: "cpu"}, "/tmp/tiny")
	if err != nil {
		panic(err)
	}
	srv, err := serve.New(lm, serve.Options{ModelName: "policy"})
	if err != nil {
		panic(err)
	}
	go func() { _ = http.ListenAndServe("127.0.0.1:8000", srv) }()
	// … after the learner saved a new checkpoint:
	if _, err := srv.Reload(ctx, engine.Spec{Device: "cpu"}, "/tmp/tiny-stage-1"); err != nil {
		panic(err)
	}
	// (Not run as a test: it needs checkpoint directories.)
}
