package store

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// TestParseURLHidesPassword: a URL that does not parse is a *fielderr.Error
// (ErrInvalid) whose message names the problem and the redacted URL but
// never the password, nor a piece of it that url.Parse or go-redis quote;
// Open fails with the same error.
func TestParseURLHidesPassword(t *testing.T) {
	for _, tc := range []struct {
		url, secret, want string
	}{
		{"redis://:s3cr3t-pw@h:bad/0", "s3cr3t-pw", "invalid port"},
		{"redis://:s3cr%zz3t@h:1/0", "s3cr", "invalid URL escape"},
		{"redis://:1/s3cr3t-pw@h/0", "s3cr3t-pw", "invalid URL path"}, // an unescaped "/": the password lands in the path
		{"redis://:s3:cr3t-pw/x@h/0", "cr3t-pw", "invalid port"},      // …or in the port
		{"redis://:s3cr3t-pw@h:1/notadb", "s3cr3t-pw", "invalid database number"},
		{"ftp://:s3cr3t-pw@h:1/0", "s3cr3t-pw", "invalid URL scheme"},
		{"redis://:s3cr3t-pw@h:1/0?bogus=1", "s3cr3t-pw", "unexpected option"},
		{"redis://user:s3cr3t pw@h:1/0", "s3cr3t", "invalid userinfo"},
		{"redis://h:bad/0", "", `invalid port ":bad" after host`}, // no password: the whole message
	} {
		_, err := ParseURL(tc.url)
		var ue *fielderr.Error
		if !errors.As(err, &ue) || !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseURL(%q) = %v, want a *fielderr.Error", tc.url, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || (tc.secret != "" && strings.Contains(msg, tc.secret)) || strings.Contains(msg, "\n") {
			t.Errorf("ParseURL(%q): %q; want %q and no %q", tc.url, msg, tc.want, tc.secret)
		}
		if tc.secret != "" && !strings.Contains(fmt.Sprint(ue.Value), ":***@") {
			t.Errorf("ParseURL(%q): URL %q is not redacted", tc.url, fmt.Sprint(ue.Value))
		}
		s, oerr := Open(context.Background(), Options{URL: tc.url, MaxRetryElapsed: time.Millisecond})
		if s != nil {
			_ = s.Close()
		}
		if oerr == nil || oerr.Error() != msg {
			t.Errorf("Open(%q) = %v, want %q", tc.url, oerr, msg)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"redis://:pw@h:6379/0", "redis://:***@h:6379/0"},
		{"rediss://alice:pw@h:6379/2", "rediss://alice:***@h:6379/2"},
		{"redis://:p%40w%2F@h:6379/0", "redis://:***@h:6379/0"},
		{"unix://:pw@/tmp/r.sock?db=1", "unix://:***@/tmp/r.sock?db=1"},
		{"redis://h:6379/0", "redis://h:6379/0"},
		{"redis://alice@h:6379/0", "redis://alice@h:6379/0"},
		{"unix:///tmp/r.sock?db=0", "unix:///tmp/r.sock?db=0"},
		{"", ""},
		// Malformed: everything up to the last "@" but the user name goes.
		{"redis://:pw@h:bad/0", "redis://:***@h:bad/0"},
		{"redis://:1/pw@h/0", "redis://:***@h/0"},
		{"redis://bob:p w@h/0", "redis://bob:***@h/0"},
		{"redis://:a@b@h/0", "redis://:***@h/0"},
		// A password as a query option, however spelled.
		{"redis://h:6379/0?password=sekret", "redis://h:6379/0?password=***"},
		{"redis://h:6379/0?db=1&Sentinel_Password=s2&protocol=3", "redis://h:6379/0?db=1&Sentinel_Password=***&protocol=3"},
		{"redis://:pw@h:6379/0?password=sekret#x", "redis://:***@h:6379/0?password=***#x"},
	} {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// redisFlags parses args into a Flags as a command line would.
func redisFlags(t *testing.T, args ...string) (*Flags, error) {
	t.Helper()
	var f Flags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs, "Redis URL")
	return &f, fs.Parse(args)
}

// TestFlagsPassword: the password comes from --redis-password-file, else
// the URL, else $T2T_REDIS_PASSWORD; a missing or empty file is a parse
// error that names the file and holds none of its content.
func TestFlagsPassword(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	if err := os.WriteFile(file, []byte("from/file@x\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const fromFile = "from/file@x"
	for _, tc := range []struct {
		args          []string
		env, want, pw string // pw: the password go-redis reads from want
	}{
		{[]string{"--redis", "redis://h:1/0"}, "", "redis://h:1/0", ""},
		{[]string{"--redis", "redis://h:1/0", "--redis-password-file", file}, "from-env", "redis://:from%2Ffile%40x@h:1/0", fromFile},
		{[]string{"--redis-password-file", file, "--redis", "redis://alice@h:1/0"}, "", "redis://alice:from%2Ffile%40x@h:1/0", fromFile},
		{[]string{"--redis", "redis://:inurl@h:1/0", "--redis-password-file", file}, "", "redis://:from%2Ffile%40x@h:1/0", fromFile},
		{[]string{"--redis", "redis://:inurl@h:1/0"}, "from-env", "redis://:inurl@h:1/0", "inurl"},
		{[]string{"--redis", "redis://h:1/0"}, "from-env", "redis://:from-env@h:1/0", "from-env"},
		{[]string{"--redis", "unix:///tmp/r.sock?db=0"}, "from-env", "unix://:from-env@/tmp/r.sock?db=0", "from-env"},
		{nil, "from-env", "", ""}, // embedded: no password
		{[]string{"--redis-password-file", file}, "", "", ""},
	} {
		t.Setenv(PasswordEnv, tc.env)
		f, err := redisFlags(t, tc.args...)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if got := f.URL(); got != tc.want {
			t.Errorf("%q, env %q: URL %q, want %q", tc.args, tc.env, got, tc.want)
		}
		if ro, err := ParseURL(f.URL()); f.URL() != "" && (err != nil || ro.Password != tc.pw) {
			t.Errorf("%q: go-redis reads password %q, %v; want %q", tc.args, ro.Password, err, tc.pw)
		}
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\nsecret on line two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(dir, "long")
	if err := os.WriteFile(long, bytes.Repeat([]byte("s"), maxPassword+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing"), empty, long} {
		_, err := redisFlags(t, "--redis", "redis://h:1/0", "--redis-password-file", path)
		if err == nil || !strings.Contains(err.Error(), "redis-password-file") || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "sss") {
			t.Errorf("--redis-password-file %s: %v", path, err)
		}
	}
}

// TestOpenWithPasswordFromFlags: a Redis that requires a password is
// opened with the password of the file or of the environment, and refused
// without; the Store's URL and its logs show the password redacted.
func TestOpenWithPasswordFromFlags(t *testing.T) {
	const pw = "p4ss/w0rd@x"
	mr := miniredis.RunT(t)
	mr.RequireAuth(pw)
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	raw := "redis://" + mr.Addr() + "/0"
	var logs bytes.Buffer
	open := func(f *Flags) (*Store, error) {
		return Open(context.Background(), Options{URL: f.URL(), MaxRetryElapsed: 200 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	}
	t.Setenv(PasswordEnv, "")
	f, _ := redisFlags(t, "--redis", raw)
	if s, err := open(f); err == nil {
		_ = s.Close()
		t.Fatal("opened a Redis that requires a password without one")
	}
	for _, how := range []string{"file", "env"} {
		args := []string{"--redis", raw}
		if how == "file" {
			args = append(args, "--redis-password-file", file)
		} else {
			t.Setenv(PasswordEnv, pw)
		}
		f, err := redisFlags(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		s, err := open(f)
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		if want := "redis://:***@" + mr.Addr() + "/0"; s.URL() != want {
			t.Errorf("%s: URL %q, want %q", how, s.URL(), want)
		}
		if err := s.PutRunState(context.Background(), RunState{RunID: "r", Phase: "p"}); err != nil {
			t.Errorf("%s: %v", how, err)
		}
		_ = s.Close()
	}
	if strings.Contains(logs.String(), "p4ss") {
		t.Errorf("logs show the password:\n%s", logs.String())
	}
}

// FuzzRedactURL: whatever surrounds it, a password between "://:" and "@"
// shows neither in RedactURL's output nor in ParseURL's error. The
// password is marked at both ends ("Zq9") so that a leaked piece of it is
// found too.
func FuzzRedactURL(f *testing.F) {
	for _, s := range [][2]string{{"pw", "h:6379/0"}, {"p/w", "h/0"}, {"1/x", "h/0"}, {"a@b", "h:bad/0"}, {"%zz", "h:1/0"},
		{"p w", "h:1/0?db=x"}, {":", "[::1]:1/0"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, mid, rest string) {
		mid, rest = strings.ReplaceAll(mid, "Zq9", ""), strings.ReplaceAll(rest, "Zq9", "")
		raw := "redis://:Zq9" + mid + "Zq9@" + rest
		if got := RedactURL(raw); strings.Contains(got, "Zq9") {
			t.Fatalf("RedactURL(%q) = %q", raw, got)
		}
		if _, err := ParseURL(raw); err != nil && strings.Contains(err.Error(), "Zq9") {
			t.Fatalf("ParseURL(%q): %v", raw, err)
		}
	})
}

// FuzzReadPassword: a password file's first line is the password, up to
// maxPassword bytes; an error never repeats the file's content.
func FuzzReadPassword(f *testing.F) {
	for _, s := range []string{"pw\n", "pw", "pw\r\nmore", "\nsecond", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := passwordLine(bytes.NewReader(b), "pw")
		line, _, _ := strings.Cut(string(b), "\n")
		line = strings.TrimSuffix(line, "\r")
		switch {
		case err != nil && (line != "" && len(line) <= maxPassword):
			t.Fatalf("%q: %v", b, err)
		case err != nil && len(line) >= 8 && strings.Contains(err.Error(), line[:8]):
			t.Fatalf("%q: the error %v shows the content", b, err)
		case err == nil && got != line:
			t.Fatalf("%q: %q, want %q", b, got, line)
		}
	})
}

// TestParseURLRefusesBadPortsAndHidesQueryPasswords: a port go-redis would
// take and then fail to dial forever is a *fielderr.Error at once; a password
// given as a query option never shows in the error.
func TestParseURLRefusesBadPortsAndHidesQueryPasswords(t *testing.T) {
	for _, raw := range []string{"redis://127.0.0.1:99999/0", "redis://h:0/0", "redis://:pw@h:65536/0"} {
		var ue *fielderr.Error
		if _, err := ParseURL(raw); !errors.As(err, &ue) || !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "pw@") {
			t.Errorf("ParseURL(%q) = %v, want a redacted *fielderr.Error", raw, err)
		}
	}
	for _, raw := range []string{"redis://h:6379/0", "redis://h/0", "unix:///tmp/r.sock?db=0"} {
		if _, err := ParseURL(raw); err != nil {
			t.Errorf("ParseURL(%q) = %v", raw, err)
		}
	}
	_, err := ParseURL("redis://h:6379/0?password=sekret")
	if err == nil || strings.Contains(err.Error(), "sekret") {
		t.Fatalf("query password: %v", err)
	}
}
