package telemetry

import (
	"context"
	"flag"
	"os"
	"time"
)

// Flags are the tracing settings of a command line (--trace-file, --otlp,
// --node-name).
type Flags struct {
	TraceFile, OTLP, Node string
}

// Register binds f to fs; the node name defaults to the host name.
func (f *Flags) Register(fs *flag.FlagSet) {
	host, _ := os.Hostname()
	fs.StringVar(&f.TraceFile, "trace-file", "", "write OpenTelemetry spans to this file as OTLP JSON, one export request per line (read it with 't2t traces')")
	fs.StringVar(&f.OTLP, "otlp", "", "export spans over OTLP/HTTP to host:port (an OpenTelemetry collector, Jaeger)")
	fs.StringVar(&f.Node, "node-name", host, "this node's name in traces and metrics")
}

// Setup starts tracing as f says for service "t2t"; stop flushes it (within
// 10 s).
func (f *Flags) Setup(ctx context.Context) (t *Telemetry, stop func(), err error) {
	t, err = Setup(ctx, Options{ServiceName: "t2t", NodeID: f.Node, TraceFile: f.TraceFile, OTLPEndpoint: f.OTLP})
	if err != nil {
		return nil, nil, err
	}
	return t, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		t.Shutdown(sctx)
	}, nil
}
