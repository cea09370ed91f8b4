package serve_test

import (
	"flag"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/serve"
)

// RegisterFlags: Options' defaults, the key from $T2T_API_KEY unless --api-key, sizes with
// suffixes, and limits below 1 or malformed sizes refused at parse time.
func TestRegisterFlags(t *testing.T) {
	t.Setenv(serve.APIKeyEnv, "from-env")
	parse := func(args ...string) (serve.Options, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var o serve.Options
		serve.RegisterFlags(fs, &o)
		return o, fs.Parse(args)
	}
	o, err := parse()
	if err != nil || o.MaxTokens != serve.DefaultMaxTokensLimit || o.MaxPromptTokens != serve.DefaultMaxPromptTokens ||
		o.MaxQueue != serve.DefaultMaxQueue || o.MaxMemory != 0 || o.APIKey != "from-env" {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	o, err = parse("--api-key", "flag", "--max-memory", "512M", "--max-queue", "3", "--max-prompt-tokens", "100", "--max-tokens-limit", "7")
	if err != nil || o.APIKey != "flag" || o.MaxMemory != 512<<20 || o.MaxQueue != 3 || o.MaxPromptTokens != 100 || o.MaxTokens != 7 {
		t.Fatalf("set: %+v %v", o, err)
	}
	for in, want := range map[string]int64{"100": 100, "1k": 1 << 10, "8GiB": 8 << 30, "2T": 2 << 40, "3 MB": -1, "1.5G": -1, "0": -1, "-1": -1, "G": -1, "": -1, "9999999T": -1} {
		o, err := parse("--max-memory", in)
		if (err == nil) != (want > 0) || (want > 0 && o.MaxMemory != want) {
			t.Errorf("--max-memory %q: %d %v, want %d", in, o.MaxMemory, err, want)
		}
	}
	for _, name := range []string{"--max-queue", "--max-prompt-tokens", "--max-tokens-limit"} {
		for _, v := range []string{"0", "-5", "x"} {
			if _, err := parse(name, v); err == nil {
				t.Errorf("%s %s accepted", name, v)
			}
		}
	}
}

// The warning for a server reachable from other hosts without a key.
func TestInsecureWarning(t *testing.T) {
	lo := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8000}
	any := &net.TCPAddr{IP: net.IPv4zero, Port: 8000}
	if w := serve.InsecureWarning(lo, ""); w != "" {
		t.Errorf("loopback: %q", w)
	}
	if w := serve.InsecureWarning(any, "k"); w != "" {
		t.Errorf("with a key: %q", w)
	}
	if w := serve.InsecureWarning(any, ""); !strings.Contains(w, "WARNING") || !strings.Contains(w, serve.APIKeyEnv) {
		t.Errorf("0.0.0.0 without a key: %q", w)
	}
}
