package serve

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/internal/regfile"
)

// APIKeyEnv names the environment variable that holds the API key when --api-key is not
// given: t2t serve and a coordinator's policy endpoint require it, and rollout nodes send it.
const APIKeyEnv = "T2T_API_KEY"

// Defaults of the request limits (Options).
const (
	DefaultMaxTokensLimit  = 8192
	DefaultMaxPromptTokens = 32768
	DefaultMaxQueue        = 64
)

// RegisterFlags binds o's request limits and API key to fs, for a command line that serves a
// model (t2t serve, and t2t node --serve-addr, whose rollout nodes send the key):
// --max-tokens-limit, --max-prompt-tokens, --max-memory, --max-queue and --api-key, with
// Options' defaults. A limit below 1 or a malformed size is refused when fs parses it.
// --api-key defaults to $T2T_API_KEY, read here (and never shown in the usage text).
func RegisterFlags(fs *flag.FlagSet, o *Options) {
	o.MaxTokens, o.MaxPromptTokens, o.MaxQueue = DefaultMaxTokensLimit, DefaultMaxPromptTokens, DefaultMaxQueue
	fs.Var((*positive)(&o.MaxTokens), "max-tokens-limit", "the most max_tokens a request may ask for (more is answered 422)")
	fs.Var((*positive)(&o.MaxPromptTokens), "max-prompt-tokens", "the most tokens of one prompt (more is answered 422, counted without tokenizing the rest)")
	fs.Var((*ByteSize)(&o.MaxMemory), "max-memory", "memory budget of the generations running at once, bytes with an optional K, M, G or T suffix (powers of 1024);\n"+
		"a request whose estimate exceeds it is answered 422 (default: half of MemAvailable at start; on a GPU, set the device memory left after the weights)")
	fs.Var((*positive)(&o.MaxQueue), "max-queue", "requests that may wait for the model; more are answered 429 with Retry-After")
	fs.StringVar(&o.APIKey, "api-key", "", "bearer token every request must send (default $"+APIKeyEnv+"; empty: none, with a warning off loopback); it shows in ps: prefer --api-key-file or $"+APIKeyEnv)
	o.APIKey = os.Getenv(APIKeyEnv) // after StringVar, so that the usage text does not show it
	fs.Func("allow-origin", "serve cross-origin requests from `ORIGIN` (scheme://host[:port], or *; repeatable); others are refused (403)", func(origin string) error {
		if u, err := url.Parse(origin); origin != "*" && (err != nil || u.Scheme == "" || u.Host == "") {
			return fmt.Errorf("%q: want scheme://host[:port] or *", origin)
		}
		o.AllowOrigins = append(o.AllowOrigins, origin)
		return nil
	})
	fs.Func("api-key-file", "read the API key from `FILE` (its first line) rather than --api-key or $"+APIKeyEnv, func(path string) error {
		k, err := ReadAPIKeyFile(path)
		if err == nil {
			o.APIKey = k
		}
		return err
	})
}

// maxAPIKey bounds the first line of an API key file.
const maxAPIKey = 4096

// ReadAPIKeyFile returns the first line of the file at path (without its line end). A missing
// file, one that is not a regular file, an empty first line or one over 4096 bytes is an error
// that names the file and never holds its content.
func ReadAPIKeyFile(path string) (string, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAPIKey+2))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSuffix(line, "\r")
	switch {
	case len(line) > maxAPIKey:
		return "", fmt.Errorf("%s: the first line is over %d bytes, want the API key", path, maxAPIKey)
	case strings.TrimSpace(line) == "":
		return "", fmt.Errorf("%s: the first line is empty, want the API key", path)
	}
	return line, nil
}

// positive is a flag.Value of an int ≥ 1.
type positive int

func (p *positive) String() string {
	if p == nil {
		return "0"
	}
	return strconv.Itoa(int(*p))
}

func (p *positive) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return fmt.Errorf("%q: want an integer ≥ 1", s)
	}
	*p = positive(v)
	return nil
}

// ByteSize is a flag.Value of bytes: a positive integer with an optional K, M, G or T suffix
// (powers of 1024, "B" or "iB" after it allowed), such as 512M or 8GiB. Zero means unset.
type ByteSize int64

// String implements flag.Value.
func (b *ByteSize) String() string {
	if b == nil || *b == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*b), 10)
}

// Set implements flag.Value.
func (b *ByteSize) Set(s string) error {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	shift := 0
	if n := len(t); n > 0 {
		if k := strings.IndexByte("KMGT", t[n-1]); k >= 0 {
			shift, t = 10*(k+1), t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 1 || v > (1<<62)>>shift {
		return fmt.Errorf("%q: want a positive number of bytes, optionally with a K, M, G or T suffix (e.g. 512M, 8G)", s)
	}
	*b = ByteSize(v << shift)
	return nil
}

// InsecureWarning is the warning to print when a server listens at addr, reachable from
// other hosts, without an API key ("" when addr is a loopback address or a key is set).
func InsecureWarning(addr net.Addr, apiKey string) string {
	if ta, ok := addr.(*net.TCPAddr); apiKey != "" || (ok && ta.IP.IsLoopback()) {
		return ""
	}
	return fmt.Sprintf("WARNING: serving on %s, reachable from other hosts, without an API key: anyone who can reach it can use the model (set --api-key or $%s)", addr, APIKeyEnv)
}
