package store

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// PasswordEnv names the environment variable that holds the Redis password
// when neither --redis-password-file nor the URL gives one (a Kubernetes
// Secret as an environment variable, say).
const PasswordEnv = "T2T_REDIS_PASSWORD"

// urlError is the *fielderr.Error of a Redis URL that does not parse:
// Field "Redis URL", Flag "redis", Value the URL redacted (RedactURL), and a
// Reason that never repeats the password, so the error can be printed and
// logged. It wraps ErrInvalid.
func urlError(raw, reason string) *fielderr.Error {
	return &fielderr.Error{Kind: ErrInvalid, Field: "Redis URL", Flag: "redis", Value: RedactURL(raw),
		Reason: reason + " (want redis://[user@]host:port/db, rediss://… or unix:///path?db=N)"}
}

// ParseURL parses a Redis URL as go-redis does (redis://, rediss://,
// unix://), with an error that never shows the password (urlError). The
// errors of go-redis' own ParseURL and of url.Parse repeat the URL, or the
// part of it they stumbled on, which may be the password.
func ParseURL(raw string) (*redis.Options, error) {
	ro, err := redis.ParseURL(raw)
	if err != nil {
		return nil, urlError(raw, reason(err, raw))
	}
	if ro.Network != "unix" {
		_, port, err := net.SplitHostPort(ro.Addr)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
			// go-redis takes any port and fails at every dial: a malformed URL is bad input at once.
			return nil, urlError(raw, fmt.Sprintf("port %q out of range [1,65535]", port))
		}
	}
	return ro, nil
}

// reason is what went wrong in err, a parse error of raw: the whole message
// when raw has no user info, else only its fixed words up to the first
// quote or colon (`invalid port ":pa" after host` is "invalid port").
func reason(err error, raw string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "net/url: "), "redis: ")
	if userinfo(raw) == "" && !secretQuery(raw) {
		return msg
	}
	if i := strings.IndexAny(msg, "\":"); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg) + " (details hidden: the URL holds a password; URL-escape it, or give it with --redis-password-file)"
}

// userinfo is the text between "://" and the last "@" of raw, or "": the
// user name and password, however malformed.
func userinfo(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if i := strings.LastIndex(rest, "@"); ok && i >= 0 {
		return rest[:i+1]
	}
	return ""
}

// secretKey reports whether a URL query key may name a secret (password=,
// sentinel_password=, token=, …): its value is never printed.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "pass") || strings.Contains(k, "secret") || strings.Contains(k, "token") || strings.Contains(k, "auth") || k == "pwd"
}

// secretQuery reports whether raw's query has a secretKey.
func secretQuery(raw string) bool {
	_, q, ok := strings.Cut(raw, "?")
	if !ok {
		return false
	}
	for _, kv := range strings.FieldsFunc(q, func(r rune) bool { return r == '&' || r == ';' }) {
		k, _, _ := strings.Cut(kv, "=")
		if secretKey(k) {
			return true
		}
	}
	return false
}

// redactQuery replaces the value of every secretKey in raw's query by "***".
func redactQuery(raw string) string {
	base, q, ok := strings.Cut(raw, "?")
	if !ok || !secretQuery(raw) {
		return raw
	}
	frag := ""
	if i := strings.IndexByte(q, '#'); i >= 0 {
		q, frag = q[:i], q[i:]
	}
	parts := strings.Split(q, "&")
	for i, kv := range parts {
		if k, _, _ := strings.Cut(kv, "="); secretKey(k) {
			parts[i] = k + "=***"
		}
	}
	return base + "?" + strings.Join(parts, "&") + frag
}

// RedactURL returns raw with its password replaced by "***", as logs and
// status lines print it: redis://:***@host:port/db (a user name stays);
// the values of query options that may be secrets (password=…,
// sentinel_password=…, token=…) are "***" too. Without a password it
// returns raw unchanged. When raw does not parse, or parses with an "@"
// outside its user info, everything between "://" and the last "@" but
// the user name is replaced. It is the one redaction of Redis URLs: every
// line that prints one calls it.
func RedactURL(raw string) string {
	return redactQuery(redactUserinfo(raw))
}

// redactUserinfo is RedactURL of the user info only.
func redactUserinfo(raw string) string {
	info := userinfo(raw)
	if u, err := url.Parse(raw); err == nil && u.User != nil && u.User.String()+"@" == info {
		if _, ok := u.User.Password(); !ok {
			return raw
		}
		name := url.User(u.User.Username()).String()
		u.User = nil
		scheme, rest, _ := strings.Cut(u.String(), "://")
		return scheme + "://" + name + ":***@" + rest
	}
	if info == "" {
		return raw
	}
	user, _, _ := strings.Cut(info[:len(info)-1], ":")
	return strings.Replace(raw, info, user+":***@", 1)
}

// WithPassword returns raw with its password set to password (its user
// name kept); raw itself when password is "" or raw does not parse (Open
// then reports the URL, redacted).
func WithPassword(raw, password string) string {
	u, err := url.Parse(raw)
	if password == "" || raw == "" || err != nil {
		return raw
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String()
}

// Flags are the Redis flags of every command that opens one: --redis URL
// and --redis-password-file. The password comes from the file, else the
// URL, else $PasswordEnv (what the command line says before what the
// environment says), so that it never needs to stand on the command line,
// where other users of a host see it (ps).
type Flags struct {
	raw      string
	password string // of --redis-password-file
}

// Register binds --redis (with the usage text help) and
// --redis-password-file to fs. The file is read when the flag is parsed: a
// missing or empty file is a parse error naming the flag.
func (f *Flags) Register(fs *flag.FlagSet, help string) {
	fs.StringVar(&f.raw, "redis", "", help+"; its password: --redis-password-file or $"+PasswordEnv+" (one in the URL works too, but shows in ps)")
	fs.Func("redis-password-file", "read the Redis password from `FILE` (its first line), not from the URL or $"+PasswordEnv,
		func(path string) error {
			p, err := readPassword(path)
			f.password = p
			return err
		})
}

// URL is the --redis URL with its password: that of
// --redis-password-file, else the URL's own, else $PasswordEnv (none:
// the URL as given). "" when --redis is empty (an embedded Redis, which
// has no password). It holds the secret: print RedactURL(URL()) instead.
func (f *Flags) URL() string {
	if f.raw == "" {
		return ""
	}
	if f.password != "" {
		return WithPassword(f.raw, f.password)
	}
	if u, err := url.Parse(f.raw); err == nil {
		if _, ok := u.User.Password(); ok {
			return f.raw
		}
	}
	return WithPassword(f.raw, os.Getenv(PasswordEnv))
}

// maxPassword bounds the first line of a password file.
const maxPassword = 4096

// readPassword returns the first line of the file at path (without its
// line end); a missing file, an empty first line or one over maxPassword
// bytes is an error, which never holds the file's content.
func readPassword(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return passwordLine(f, path)
}

// passwordLine is readPassword of r, the file at path.
func passwordLine(r io.Reader, path string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPassword+2))
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSuffix(line, "\r")
	switch {
	case len(line) > maxPassword:
		return "", fmt.Errorf("%s: the first line is over %d bytes, want the Redis password", path, maxPassword)
	case line == "":
		return "", fmt.Errorf("%s: the first line is empty, want the Redis password", path)
	}
	return line, nil
}
