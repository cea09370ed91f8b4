package actors

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/anypb"
)

// The remote tests run each node in its own process: protoactor's
// remote.Start resets grpc's global logger without synchronisation, so two
// remotes in one process race (the race detector reports it). The parent
// test starts the echo node and the driver node as child processes of this
// test binary (TestRemoteChild) and fails if either fails.

const remRoleEnv = "T2T_ACTORS_REMOTE_ROLE"

// remBogus is registered on the driver only.
type remBogus struct {
	X int `msgpack:"x"`
}

// remStatsRequest asks the echo node for its HostStats; answer: remStats.
type remStatsRequest struct{}

type remStats struct {
	Stats HostStats `msgpack:"stats"`
}

func remRegistry(t testing.TB, driver bool) *Registry {
	reg := wireRegistry(t)
	for name, proto := range map[string]any{"t2t.test.StatsRequest": remStatsRequest{}, "t2t.test.Stats": remStats{}} {
		if err := reg.Register(name, proto); err != nil {
			t.Fatal(err)
		}
	}
	if driver {
		if err := reg.Register("t2t.test.Bogus", remBogus{}); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// remProc is a child process of this test binary running one role. Lines it
// writes are collected; expect waits for one with a prefix.
type remProc struct {
	t     *testing.T
	role  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	exit  chan error

	mu  sync.Mutex
	out []string
}

// remStart starts this test binary as a child in role, with env added. The
// child is killed (if still running) and its output logged when the test
// ends.
func remStart(t *testing.T, role string, env ...string) *remProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRemoteChild$", "-test.v", "-test.count=1")
	cmd.Env = append(append(os.Environ(), remRoleEnv+"="+role), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &remProc{t: t, role: role, cmd: cmd, stdin: stdin, lines: make(chan string, 4096), exit: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.out = append(p.out, sc.Text())
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default: // nobody reads this many lines
			}
		}
		close(p.lines)
		p.exit <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() // an error if it already exited; nothing to do
		if t.Failed() || testing.Verbose() {
			p.dump()
		}
	})
	return p
}

func (p *remProc) dump() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.out {
		p.t.Logf("%s| %s", p.role, l)
	}
	p.out = nil
}

// expect returns the rest of the first line starting with prefix.
func (p *remProc) expect(prefix string) string {
	p.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("%s exited before %q", p.role, prefix)
			}
			if rest, found := strings.CutPrefix(l, prefix); found {
				return rest
			}
		case <-deadline:
			p.t.Fatalf("%s: timed out waiting for %q", p.role, prefix)
		}
	}
}

// send writes a command line to the child's stdin.
func (p *remProc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("%s: %v", p.role, err)
	}
}

// finish closes the child's stdin (its signal to stop) and fails the test if
// it exits non-zero.
func (p *remProc) finish() {
	p.t.Helper()
	p.stdin.Close()
	for range p.lines {
	}
	if err := testWait(p.t, p.exit, p.role+" to exit"); err != nil {
		p.t.Fatalf("%s child: %v", p.role, err)
	}
}

// kill ends the child abruptly, as a crashed node.
func (p *remProc) kill() {
	p.t.Helper()
	p.cmd.Process.Kill()
	for range p.lines {
	}
	testWait(p.t, p.exit, p.role+" to die")
}

func TestRemoteEveryMessageCrossesTheWire(t *testing.T) {
	echo := remStart(t, "echo")
	addr := echo.expect("ECHO-ADDRESS ")
	driver := remStart(t, "driver", "T2T_ACTORS_ECHO="+addr)
	driver.finish()
	echo.finish()
}

func TestRemoteStartErrors(t *testing.T) {
	remStart(t, "start-errors").finish()
}

// TestRemoteChild is the body of the child processes; it does nothing in a
// normal test run.
func TestRemoteChild(t *testing.T) {
	switch role := os.Getenv(remRoleEnv); role {
	case "":
		t.Skip("helper process of the remote tests")
	case "echo":
		remEchoChild(t)
	case "driver":
		remDriverChild(t, os.Getenv("T2T_ACTORS_ECHO"))
	case "start-errors":
		remStartErrorsChild(t)
	case "cluster-coord":
		clusterCoordChild(t)
	case "cluster-rollout":
		clusterRolloutChild(t)
	default:
		t.Fatalf("unknown role %q", role)
	}
}

// remEchoChild runs node b: an echo actor that answers every t2t message
// with itself, and remStatsRequest with its stats. It stops when stdin
// closes.
func remEchoChild(t *testing.T) {
	b := NewHost("b", remRegistry(t, false), testLogger(t))
	defer b.Close()
	if err := b.StartRemote("127.0.0.1", 0); err != nil {
		t.Fatal(err)
	}
	_, err := b.Root().SpawnNamed(b.Props("echo", 64, func() actor.Actor {
		return actorFunc(func(c actor.Context) {
			switch m := c.Message().(type) {
			case actor.SystemMessage, actor.AutoReceiveMessage:
			case *remStatsRequest:
				c.Respond(&remStats{Stats: b.Stats()})
			default:
				if c.Sender() != nil {
					c.Respond(m)
				}
			}
		})
	}), "echo")
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("ECHO-ADDRESS " + b.Address() + "\n")
	io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
}

func remAsk(t *testing.T, from *Host, to *actor.PID, msg any) any {
	t.Helper()
	res, err := from.Root().RequestFuture(to, msg, 10*time.Second).Result()
	if err != nil {
		t.Fatalf("request %T: %v", msg, err)
	}
	v, err := from.Decode(res)
	if err != nil {
		t.Fatalf("decode answer to %T: %v", msg, err)
	}
	return v
}

// remDriverChild runs node a against the echo node at addr.
func remDriverChild(t *testing.T, addr string) {
	a := NewHost("a", remRegistry(t, true), testLogger(t))
	defer a.Close()
	if err := a.StartRemote("127.0.0.1", 0); err != nil {
		t.Fatal(err)
	}
	if a.Address() == addr || a.Address() == "nonhost" {
		t.Fatalf("addresses %s %s", a.Address(), addr)
	}
	echo := actor.NewPID(addr, "echo")
	stats := func() HostStats { return remAsk(t, a, echo, &remStatsRequest{}).(*remStats).Stats }

	// Every message goes to b (decoded there: b answers with what it got)
	// and comes back (decoded here).
	for _, m := range wireSamples() {
		if back := remAsk(t, a, echo, m); !reflect.DeepEqual(back, m) {
			t.Errorf("%T round trip:\n got %#v\nwant %#v", m, back, m)
		}
	}
	n := uint64(len(wireSamples()))
	st := stats()
	if st.Wire.Decoded != n+1 || st.Wire.Encoded != n || st.Dropped != 0 {
		t.Fatalf("b stats %+v, want %d decoded (+1 stats request) and %d encoded", st, n, n)
	}
	if got := a.Stats().Wire; got.Encoded != n+1 || got.Decoded != n+1 {
		t.Fatalf("a stats %+v", got)
	}

	// A type b does not know, a corrupt payload, a payload of another wire
	// version: b drops and counts each, and keeps running. Messages from
	// one sender arrive in order, so the stats answer comes after all three.
	a.Root().Send(echo, &remBogus{X: 1})
	a.Root().Send(echo, &anypb.Any{TypeUrl: "t2t.WorkUnit", Value: []byte{wireMagic, WireVersion, 0xdd, 0xff, 0xff, 0xff, 0xff}})
	a.Root().Send(echo, &anypb.Any{TypeUrl: "t2t.Tick", Value: []byte{wireMagic, WireVersion + 1, 0x80}})
	st = stats()
	if st.Wire.Unknown != 1 || st.Wire.Corrupt != 1 || st.Wire.Version != 1 || st.Dropped != 3 {
		t.Fatalf("b stats after bad messages %+v", st)
	}
	ping := &PolicyVersion{Version: 42}
	if back := remAsk(t, a, echo, ping); !reflect.DeepEqual(back, ping) {
		t.Fatalf("after bad messages: %#v", back)
	}

	// A Go type a has not registered is not sent at all.
	type unregistered struct{ A int }
	a.Root().Send(echo, &unregistered{1})
	if st := a.Stats(); st.Dropped != 1 || st.Wire.EncodeErrors != 1 {
		t.Fatalf("a stats %+v", st)
	}
}

// remStartErrorsChild checks that listen failures come back as errors.
func remStartErrorsChild(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	a := NewHost("a", wireRegistry(t), testLogger(t))
	defer a.Close()
	if err := a.StartRemote("127.0.0.1", port); !errors.Is(err, ErrRemote) {
		t.Fatalf("listen on a used port: %v", err)
	}
	l.Close()
	if err := a.StartRemote("127.0.0.1", port); err != nil {
		t.Fatalf("start after the port was freed: %v", err)
	}
	if err := a.StartRemote("127.0.0.1", 0); !errors.Is(err, ErrRemote) {
		t.Fatalf("second start: %v", err)
	}
	a.Close()
	if err := a.StartRemote("127.0.0.1", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("start after close: %v", err)
	}
}
