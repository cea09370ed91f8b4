package actors

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// How t2t messages cross nodes.
//
// protoactor-go's remote (this version) serializes every outgoing message with
// serializer id 0, the protobuf serializer: the endpoint writer never reads
// the serializer id a sender asks for. So a Host does not rely on remote's
// serializer table. Its sender middleware encodes a t2t message bound for
// another address with the node's Serializer and ships it inside a protobuf
// Any{TypeUrl: registered name, Value: header+msgpack}; its receiver
// middleware decodes the Any back into the registered struct before the
// actor sees it. Messages between actors of one node are never encoded.
// A payload that does not decode (unknown name, bad version, corrupt bytes)
// is counted in the Serializer's stats, logged, and dropped; the node keeps
// running.

// HostStats is what a node counted.
type HostStats struct {
	Wire        WireStats
	MailboxFull uint64 // posts that found an actor's mailbox full (see Host.Props)
	Dropped     uint64 // messages dropped at the wire (encode or decode failure)
}

// Host is one actor system with the t2t wire: a Serializer built from an
// explicit Registry, wire middlewares on every actor it builds props for,
// bounded monitored mailboxes, and optionally the protoactor remote
// transport. Build it with NewNode; Close it when done.
type Host struct {
	name   string
	system *actor.ActorSystem
	root   *actor.RootContext
	ser    *Serializer
	logger *slog.Logger

	mu     sync.Mutex
	remote *remote.Remote
	closed bool

	mailboxFull atomic.Uint64
	dropped     atomic.Uint64
}

// NewHost builds a host named name (the membership node name, used in
// RequestWork.Node and NodeLeft) whose wire speaks the types in reg. It
// starts no listener; call StartRemote for that.
func NewHost(name string, reg *Registry, logger *slog.Logger) *Host {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := &Host{name: name, ser: NewSerializer(reg), logger: logger.With("node", name)}
	plog := n.logger.With("lib", "protoactor")
	n.system = actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return plog }),
		actor.WithDeadLetterRequestLogging(false),
	)
	n.root = actor.NewRootContext(n.system, nil, n.senderMiddleware)
	return n
}

// Name returns the node name.
func (n *Host) Name() string { return n.name }

// System returns the protoactor actor system.
func (n *Host) System() *actor.ActorSystem { return n.system }

// Root returns a root context whose sends go through the wire middleware.
// Use it (not System().Root) to send t2t messages from outside actors.
func (n *Host) Root() *actor.RootContext { return n.root }

// Serializer returns the node's serializer.
func (n *Host) Serializer() *Serializer { return n.ser }

// Address returns the node's actor address ("nonhost" before StartRemote).
func (n *Host) Address() string { return n.system.Address() }

// Stats returns the node's counters.
func (n *Host) Stats() HostStats {
	return HostStats{Wire: n.ser.Stats(), MailboxFull: n.mailboxFull.Load(), Dropped: n.dropped.Load()}
}

// StartRemote starts the protoactor remote transport listening on host:port
// (port 0 picks a free port; Address then reports it). Start it before
// spawning actors. Listen failures are returned, not panicked.
func (n *Host) StartRemote(host string, port int, opts ...remote.ConfigOption) (err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	if n.remote != nil {
		return fmt.Errorf("%w: already started on %s", ErrRemote, n.Address())
	}
	r := remote.NewRemote(n.system, remote.Configure(host, port, opts...))
	defer func() {
		// remote.Start panics when it cannot listen; nothing else has
		// started at that point.
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: listen %s:%d: %v", ErrRemote, host, port, p)
		}
	}()
	r.Start()
	n.remote = r
	n.logger.Info("remote started", "address", n.Address())
	return nil
}

// Close stops the remote transport (if started) and the actor system. Stop
// your actors first (StopFuture) so they can finish cleanly.
func (n *Host) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.closed = true
	if n.remote != nil {
		n.remote.Shutdown(false)
	}
	n.system.Shutdown()
}

// Props returns props for an actor of this node: a bounded mailbox of
// mailboxSize (rounded up to a power of two, as the ring buffer does) whose
// fill is monitored, and the wire middlewares. A post that finds the mailbox
// full increments HostStats.MailboxFull and logs; the sender then blocks
// until there is room (back-pressure), so the queue never grows. name is
// used in logs only.
func (n *Host) Props(name string, mailboxSize int, producer actor.Producer, opts ...actor.PropsOption) *actor.Props {
	size := roundPow2(mailboxSize)
	base := []actor.PropsOption{
		actor.WithMailbox(func() actor.Mailbox {
			return actor.Bounded(size, &mailboxMonitor{node: n, name: name, capacity: int64(size)})()
		}),
		actor.WithReceiverMiddleware(n.receiverMiddleware),
		actor.WithSenderMiddleware(n.senderMiddleware),
	}
	return actor.PropsFromProducer(producer, append(base, opts...)...)
}

// Decode turns a message received outside an actor (a future's result) into
// the registered struct when it came over the wire; other values are
// returned as they are.
func (n *Host) Decode(msg any) (any, error) {
	a, ok := msg.(*anypb.Any)
	if !ok {
		return msg, nil
	}
	return n.ser.Deserialize(a.TypeUrl, a.Value)
}

func (n *Host) isLocal(pid *actor.PID) bool {
	return pid.Address == n.system.Address()
}

func (n *Host) senderMiddleware(next actor.SenderFunc) actor.SenderFunc {
	return func(c actor.SenderContext, target *actor.PID, env *actor.MessageEnvelope) {
		if target == nil || n.isLocal(target) {
			next(c, target, env)
			return
		}
		if _, ok := env.Message.(proto.Message); ok {
			next(c, target, env) // protoactor's own messages and pre-built Any
			return
		}
		a, err := n.encode(env.Message)
		if err != nil {
			n.dropped.Add(1)
			n.logger.Error("wire: message not sent", "to", target.Address+"/"+target.Id, "error", err)
			return
		}
		next(c, target, &actor.MessageEnvelope{Header: env.Header, Message: a, Sender: env.Sender})
	}
}

func (n *Host) encode(msg any) (*anypb.Any, error) {
	name, err := n.ser.GetTypeName(msg)
	if err != nil {
		return nil, err
	}
	b, err := n.ser.Serialize(msg)
	if err != nil {
		return nil, err
	}
	return &anypb.Any{TypeUrl: name, Value: b}, nil
}

func (n *Host) receiverMiddleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		a, ok := env.Message.(*anypb.Any)
		if !ok {
			next(c, env)
			return
		}
		msg, err := n.ser.Deserialize(a.TypeUrl, a.Value)
		if err != nil {
			n.dropped.Add(1)
			from := ""
			if env.Sender != nil {
				from = env.Sender.Address + "/" + env.Sender.Id
			}
			n.logger.Warn("wire: message dropped", "actor", c.Self().Id, "from", from, "error", err)
			return
		}
		next(c, &actor.MessageEnvelope{Header: env.Header, Message: msg, Sender: env.Sender})
	}
}

// mailboxMonitor counts messages posted but not yet processed. A post that
// finds capacity messages queued or in process counts as "full": with one
// message in process the ring is then full, with none the post blocks.
type mailboxMonitor struct {
	node     *Host
	name     string
	capacity int64
	depth    atomic.Int64
	full     atomic.Uint64
}

func (m *mailboxMonitor) MailboxStarted()     {}
func (m *mailboxMonitor) MailboxEmpty()       {}
func (m *mailboxMonitor) MessageReceived(any) { m.depth.Add(-1) }
func (m *mailboxMonitor) MessagePosted(msg any) {
	if m.depth.Add(1)-1 < m.capacity {
		return
	}
	m.node.mailboxFull.Add(1)
	k := m.full.Add(1)
	if k&(k-1) == 0 { // log the 1st, 2nd, 4th, 8th ... time
		m.node.logger.Warn("mailbox full, sender blocks", "actor", m.name, "capacity", m.capacity,
			"times", k, "message", fmt.Sprintf("%T", msg))
	}
}

func roundPow2(v int) int {
	if v < 2 {
		return 2
	}
	p := 1
	for p < v {
		p <<= 1
	}
	return p
}
