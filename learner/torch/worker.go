package torch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Hello is the worker's handshake (PROTOCOL.md).
type Hello struct {
	Type     string `msgpack:"type"`
	Protocol int    `msgpack:"protocol"`
	Worker   string `msgpack:"worker"`
	PID      int    `msgpack:"pid"`
	Python   string `msgpack:"python"`
	Torch    string `msgpack:"torch"`
	Device   string `msgpack:"device"`
	Threads  int    `msgpack:"threads"`
	// Rank and WorldSize place the worker among its ranks (0 and 1 alone); Backend is the
	// process group's ("gloo", "nccl"; "" alone) and Sharding how the ranks hold the parameters
	// ("replicated"; "none" alone).
	Rank      int    `msgpack:"rank"`
	WorldSize int    `msgpack:"world_size"`
	Backend   string `msgpack:"backend"`
	Sharding  string `msgpack:"sharding"`
	BLAS      struct {
		Kernel      string  `msgpack:"kernel"`
		CoretypeEnv string  `msgpack:"coretype_env"`
		SetByWorker bool    `msgpack:"set_by_worker"`
		CheckRelErr float64 `msgpack:"check_rel_err"`
	} `msgpack:"blas"`
}

// WorkerOptions configure StartWorker.
type WorkerOptions struct {
	// Python is the interpreter (FindPython's answer when empty).
	Python string
	// Device is "cpu" (default), "cuda" or "cuda:N".
	Device string
	// Threads is the worker's CPU threads (0: every core).
	Threads int
	// Dir holds the t2t_worker package (default: the embedded copy, extracted by WorkerDir).
	Dir string
	// Log receives each stderr line of the worker (nil: discarded).
	Log func(line string)
	// HelloTimeout bounds the wait for the handshake (default 2 minutes: importing torch and
	// CUDA can be slow).
	HelloTimeout time.Duration
	// Ranks, when not nil, makes the worker one rank of a torch.distributed process group
	// (StartGroup fills it).
	Ranks *RankOptions
}

// RankOptions place a worker among its ranks: the environment torch.distributed reads (RANK,
// WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT) and the bound on a collective's wait.
type RankOptions struct {
	Rank, WorldSize int
	// MasterPort is a free TCP port on 127.0.0.1 where rank 0 holds the group's store.
	MasterPort int
	// Timeout bounds how long a collective waits for the other ranks (the worker's
	// --dist-timeout; 0: its default, 60 s).
	Timeout time.Duration
}

// env is the environment of a rank's worker; a worker alone gets WORLD_SIZE=1, so that a
// WORLD_SIZE inherited from t2t's own environment (a torchrun launch) does not make it a rank.
func (o *RankOptions) env() []string {
	if o == nil {
		return []string{"RANK=0", "WORLD_SIZE=1"}
	}
	return []string{"RANK=" + strconv.Itoa(o.Rank), "WORLD_SIZE=" + strconv.Itoa(o.WorldSize),
		"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + strconv.Itoa(o.MasterPort)}
}

// Worker is a running torch worker process: one request at a time over its stdin/stdout
// (worker/PROTOCOL.md). It dies with this process (Pdeathsig, and EOF on its stdin). Methods are
// safe for concurrent use; requests are serialised.
type Worker struct {
	hello Hello

	mu     sync.Mutex // serialises requests; guards w, r, nextID
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	w      *bufio.Writer
	r      *bufio.Reader
	nextID uint64

	exited  chan struct{} // closed when the process has been waited for
	exitErr error         // the process's exit (valid after exited)
	tail    *stderrTail
	closed  bool
}

// StartWorker starts a worker and completes the handshake. The error wraps ErrNoTorch when no
// interpreter imports torch, ErrVersion when the worker speaks another protocol, ErrWorkerDied
// when it exits before its hello.
func StartWorker(ctx context.Context, opt WorkerOptions) (*Worker, error) {
	py := opt.Python
	if py == "" {
		var err error
		if py, err = FindPython(ctx, ""); err != nil {
			return nil, err
		}
	}
	dir := opt.Dir
	if dir == "" {
		var err error
		if dir, err = WorkerDir(); err != nil {
			return nil, err
		}
	}
	args := []string{"-u", "-m", "t2t_worker"}
	if opt.Device != "" {
		args = append(args, "--device", opt.Device)
	}
	if opt.Threads > 0 {
		args = append(args, "--threads", strconv.Itoa(opt.Threads))
	}
	if opt.Ranks != nil && opt.Ranks.Timeout > 0 {
		args = append(args, "--dist-timeout", strconv.FormatFloat(opt.Ranks.Timeout.Seconds(), 'g', -1, 64))
	}
	cmd := exec.Command(py, args...)
	cmd.Env = append(append(os.Environ(), "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1"), opt.Ranks.env()...)
	// Its own process group, so kill reaches anything it started; Pdeathsig kills it if t2t dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start %s: %w", ErrNoTorch, py, err)
	}
	wk := &Worker{
		cmd: cmd, stdin: stdin, w: bufio.NewWriterSize(stdin, 1<<16), r: bufio.NewReaderSize(stdout, 1<<16),
		exited: make(chan struct{}), tail: &stderrTail{},
	}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		wk.tail.copy(stderr, opt.Log)
	}()
	go func() {
		<-stderrDone // Wait closes the pipes: read stderr to its end first
		wk.exitErr = cmd.Wait()
		close(wk.exited)
	}()
	timeout := opt.HelloTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	helloCh := make(chan error, 1)
	go func() {
		body, err := readFrame(wk.r)
		if err == nil {
			err = msgpack.Unmarshal(body, &wk.hello)
			if err != nil || wk.hello.Type != "hello" {
				err = fmt.Errorf("%w: first frame is not a hello (%v)", ErrProtocol, err)
			}
		}
		helloCh <- err
	}()
	select {
	case err = <-helloCh:
	case <-time.After(timeout):
		err = fmt.Errorf("torch: no hello from the worker within %s", timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		wk.kill()
		// A worker that exits before its hello: EOF, or the pipe already closed by the Wait
		// that reaped it.
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, os.ErrClosed) {
			return nil, wk.died("start")
		}
		return nil, err
	}
	if wk.hello.Protocol != ProtocolVersion {
		wk.kill()
		return nil, fmt.Errorf("%w: the worker (%s) speaks protocol %d, t2t speaks %d", ErrVersion, dir, wk.hello.Protocol, ProtocolVersion)
	}
	if r := opt.Ranks; r != nil && (wk.hello.Rank != r.Rank || wk.hello.WorldSize != r.WorldSize) {
		wk.kill()
		return nil, fmt.Errorf("%w: the worker says rank %d of %d, t2t started rank %d of %d", ErrProtocol, wk.hello.Rank, wk.hello.WorldSize, r.Rank, r.WorldSize)
	}
	return wk, nil
}

// Hello returns the worker's handshake.
func (wk *Worker) Hello() Hello { return wk.hello }

// PID is the worker's process id.
func (wk *Worker) PID() int { return wk.cmd.Process.Pid }

// Exited is closed once the worker process has ended.
func (wk *Worker) Exited() <-chan struct{} { return wk.exited }

// call sends one request and decodes its reply into out (a pointer to a struct with msgpack
// tags, or nil). Events of the request go to onEvent (their raw frames); onEvent may send
// frames on the stream with send (a cancel). A worker error is a *RemoteError; a dead worker
// a *DiedError; a malformed frame stops the worker and wraps ErrProtocol.
func (wk *Worker) call(op string, req map[string]any, out any, onEvent func(body []byte, send func(map[string]any) error) error) error {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	if wk.closed {
		return ErrClosed
	}
	select {
	case <-wk.exited:
		return wk.died(op)
	default:
	}
	wk.nextID++
	id := wk.nextID
	req["id"] = id
	req["op"] = op
	if err := writeFrame(wk.w, req); err != nil {
		return wk.ioErr(op, err)
	}
	send := func(m map[string]any) error {
		if err := writeFrame(wk.w, m); err != nil {
			return wk.ioErr(op, err)
		}
		return nil
	}
	for {
		body, err := readFrame(wk.r)
		if err != nil {
			return wk.ioErr(op, err)
		}
		var env envelope
		if err := msgpack.Unmarshal(body, &env); err != nil {
			wk.kill()
			return fmt.Errorf("%w: %s: undecodable frame: %v", ErrProtocol, op, err)
		}
		if env.ID != id {
			wk.kill()
			return fmt.Errorf("%w: %s: reply for request %d, want %d", ErrProtocol, op, env.ID, id)
		}
		if env.Event != "" {
			if onEvent == nil {
				wk.kill()
				return fmt.Errorf("%w: %s: unexpected %q event", ErrProtocol, op, env.Event)
			}
			if err := onEvent(body, send); err != nil {
				return err
			}
			continue
		}
		if !env.OK {
			if env.Error == nil {
				wk.kill()
				return fmt.Errorf("%w: %s: failed reply without an error", ErrProtocol, op)
			}
			return &RemoteError{Op: op, Kind: env.Error.Kind, Message: env.Error.Message}
		}
		if out != nil {
			if err := msgpack.Unmarshal(body, out); err != nil {
				wk.kill()
				return fmt.Errorf("%w: %s: reply: %v", ErrProtocol, op, err)
			}
		}
		return nil
	}
}

// ioErr turns a failed read or write into the error callers see: a dead worker, or a protocol
// error (then the worker is stopped).
func (wk *Worker) ioErr(op string, err error) error {
	if errors.Is(err, ErrProtocol) {
		wk.kill()
		return fmt.Errorf("%s: %w", op, err)
	}
	// EOF or a broken pipe: the worker is gone (or going). Wait for its exit status.
	select {
	case <-wk.exited:
	case <-time.After(5 * time.Second):
		wk.kill()
		<-wk.exited
	}
	return wk.died(op)
}

func (wk *Worker) died(op string) error {
	<-wk.exited
	status := "exited"
	if wk.exitErr != nil {
		status = wk.exitErr.Error()
	} else if wk.cmd.ProcessState != nil {
		status = wk.cmd.ProcessState.String()
	}
	return &DiedError{Op: op, Status: status, Stderr: wk.tail.last()}
}

// kill stops the worker's process group at once and closes its stdin.
func (wk *Worker) kill() {
	if wk.cmd.Process != nil {
		_ = syscall.Kill(-wk.cmd.Process.Pid, syscall.SIGKILL)
		_ = wk.cmd.Process.Kill()
	}
	_ = wk.stdin.Close()
}

// Close asks the worker to exit (shutdown, then EOF on its stdin) and kills it if it has not
// exited within a few seconds. Close is idempotent.
func (wk *Worker) Close() error {
	wk.mu.Lock()
	if wk.closed {
		wk.mu.Unlock()
		return nil
	}
	wk.closed = true
	select {
	case <-wk.exited:
	default:
		_ = writeFrame(wk.w, map[string]any{"id": wk.nextID + 1, "op": "shutdown"})
		_ = wk.stdin.Close()
	}
	wk.mu.Unlock()
	select {
	case <-wk.exited:
	case <-time.After(10 * time.Second):
		wk.kill()
		<-wk.exited
	}
	return nil
}

// stderrTail copies the worker's stderr lines to a log function and keeps the last few for
// error messages.
type stderrTail struct {
	mu    sync.Mutex
	lines []string
}

const tailLines = 6

func (t *stderrTail) copy(r io.Reader, log func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if log != nil {
			log(line)
		}
		t.mu.Lock()
		t.lines = append(t.lines, line)
		if len(t.lines) > tailLines {
			t.lines = t.lines[len(t.lines)-tailLines:]
		}
		t.mu.Unlock()
	}
}

func (t *stderrTail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}
