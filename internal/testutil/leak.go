package testutil

import "go.uber.org/goleak"

// IgnoreProtoactor returns goleak options that ignore the goroutines protoactor-go
// v0.0.0-20240822202345-3c0e61ca19c9 leaves running after a node has shut down, for
// goleak.VerifyTestMain in packages whose tests run protoactor nodes (actors, cluster). Each is
// third-party and known:
//
//   - gRPC client connections of the remote transport. remote.Shutdown(false) (actors.Host.Close)
//     stops only the gRPC server; the endpoint writers' client connections stay open (their
//     stream, reader, writer and callback-serializer goroutines) and keep redialling a peer that
//     has gone (addrConn.resetTransportAndUnlock since grpc v1.85), or an endpoint writer sleeps
//     between dials to such a peer. Shutdown(true) closes more but waits up to 10 s and still
//     leaves the redialling connections. t2t opens no gRPC connection of its own.
//   - Throttle timers (actor.NewThrottle, NewThrottleWithLogger) of the dead-letter process and
//     the cluster's gossiper and gossip actor: one goroutine per throttle period (60 s for
//     gossip), which exits when its ticker fires. Their names are those of the inlined closures.
func IgnoreProtoactor() []goleak.Option {
	return []goleak.Option{
		// gRPC client connections opened by protoactor's remote endpoint writers, and a writer
		// still waiting between dials to a peer that has gone.
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/remote.(*endpointWriter).initialize"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/remote.(*endpointWriter).initializeInternal.func1"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc.newClientStreamWithParams.func4"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*http2Client).reader"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.(*loopyWriter).run"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc.(*addrConn).resetTransportAndUnlock"),
		// Throttle timers.
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.(*Gossiper).StartGossiping.NewThrottle.func3.1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.NewGossipActor.NewThrottleWithLogger.func2.1"),
	}
}
