package cluster

import (
	"encoding/base64"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

func TestGossipKey(t *testing.T) {
	dir := t.TempDir()
	k16 := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	k32 := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	file := filepath.Join(dir, "key")
	if err := os.WriteFile(file, []byte(k32+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag, file, env string
		want            int // key length; -1: an error
	}{
		{"", "", "", 0},
		{k16, "", "", 16},
		{"", file, "", 32},
		{"", "", k16, 16},
		{k32, "", k16, 32}, // the flag wins over the environment
		{k16, file, "", -1},
		{"not base64!", "", "", -1},
		{base64.StdEncoding.EncodeToString([]byte("short")), "", "", -1},
		{"", filepath.Join(dir, "missing"), "", -1},
	} {
		t.Setenv(GossipKeyEnv, tc.env)
		key, err := ReadGossipKey(tc.flag, tc.file)
		var ce *fielderr.Error
		switch {
		case tc.want < 0 && (err == nil || !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig)):
			t.Errorf("ReadGossipKey(%q, %q, env %q) = %v, want a *fielderr.Error", tc.flag, tc.file, tc.env, err)
		case tc.want >= 0 && (err != nil || len(key) != tc.want):
			t.Errorf("ReadGossipKey(%q, %q, env %q) = %d bytes, %v; want %d", tc.flag, tc.file, tc.env, len(key), err, tc.want)
		}
	}
}

func TestGossipFlagsConfig(t *testing.T) {
	t.Setenv(GossipKeyEnv, "")
	c, err := GossipFlags{Bind: "127.0.0.1:0", Advertise: "10.0.0.7", Join: " a:1, ,b:2 ", Profile: ProfileLocal, JoinTimeout: time.Second}.Config()
	if err != nil || c.BindAddr != "127.0.0.1" || c.AdvertiseAddr != "10.0.0.7" || len(c.Seeds) != 2 || c.SecretKey != nil {
		t.Fatalf("config %+v, %v", c, err)
	}
	for _, tc := range []struct {
		g    GossipFlags
		want string
	}{
		{GossipFlags{Bind: "nohost", JoinTimeout: time.Second}, `--gossip "nohost": `},
		{GossipFlags{Bind: "127.0.0.1:70000", JoinTimeout: time.Second}, `--gossip "127.0.0.1:70000": port must be 0..65535`},
		{GossipFlags{Bind: "127.0.0.1:0", Advertise: "h:x", JoinTimeout: time.Second}, `--advertise "h:x": bad port`},
	} {
		_, err := tc.g.Config()
		var ce *fielderr.Error
		if !errors.As(err, &ce) || len(ce.Usage()) < len(tc.want) || ce.Usage()[:len(tc.want)] != tc.want {
			t.Errorf("%+v: %v, want a usage starting %q", tc.g, err, tc.want)
		}
	}
}

// TestGossipFlagsExposed: by default gossip binds loopback; an address
// other hosts can reach needs a key, or --insecure, and its refusal is one
// line that names the ways out.
func TestGossipFlagsExposed(t *testing.T) {
	t.Setenv(GossipKeyEnv, "")
	var g GossipFlags
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	g.Register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if c, err := g.Config(); err != nil || c.BindAddr != "127.0.0.1" || c.BindPort != 7946 || c.Exposed() {
		t.Fatalf("default: %+v, %v; want 127.0.0.1:7946 accepted without a key", c, err)
	}
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	for _, tc := range []struct {
		bind, key string
		insecure  bool
		refused   bool
	}{
		{"0.0.0.0:7946", "", false, true},
		{"10.0.0.5:7946", "", false, true},
		{"[::]:7946", "", false, true},
		{"0.0.0.0:7946", key, false, false},
		{"0.0.0.0:7946", "", true, false},
		{"127.0.0.2:0", "", false, false},
		{"[::1]:0", "", false, false},
	} {
		g := GossipFlags{Bind: tc.bind, Key: tc.key, Insecure: tc.insecure, Profile: ProfileLAN, JoinTimeout: time.Second}
		c, err := g.Config()
		var ce *fielderr.Error
		switch {
		case tc.refused && (!errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig)):
			t.Errorf("%+v: %v, want a *fielderr.Error", g, err)
		case tc.refused && (!strings.HasPrefix(ce.Usage(), "--gossip "+tc.bind+": ") || !strings.Contains(ce.Usage(), "--insecure") ||
			!strings.Contains(ce.Usage(), "$"+GossipKeyEnv) || strings.Contains(ce.Usage(), "\n")):
			t.Errorf("%+v: usage %q", g, ce.Usage())
		case !tc.refused && err != nil:
			t.Errorf("%+v: %v, want accepted", g, err)
		case !tc.refused && c.Exposed() != (tc.insecure):
			t.Errorf("%+v: Exposed() = %v", g, c.Exposed())
		}
	}
}
