package env

import (
	"encoding/json"
	"errors"
	"flag"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

var cfgSeed = flag.Uint64("cfgseed", 0, "seed for the randomised config tests (0: a fixed default)")

// cfgDefaultHash is the golden Hash of DefaultConfig. If it changes, the
// canonical encoding (or DefaultConfig) changed: every stored config
// version id changes with it. Update it only on purpose, together with the
// version in cfgHashMagic.
const cfgDefaultHash = "505abf23ef3c70ac"

func cfgRand(t testing.TB) *rand.Rand {
	seed := *cfgSeed
	if seed == 0 {
		seed = 20260617
	}
	t.Logf("seed %d (replay with -cfgseed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0x636667))
}

func TestConfigDefaultsValidate(t *testing.T) {
	for name, c := range map[string]Config{"default": DefaultConfig(), "local": DefaultLocalConfig()} {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestConfigValidateRules(t *testing.T) {
	type tc struct {
		name   string
		edit   func(c *Config)
		field  string // "" means valid
		reason string // substring of Reason
	}
	cases := []tc{
		{"default", func(c *Config) {}, "", ""},
		{"no sizes", func(c *Config) { c.Sizes = nil }, "sizes", "at least one"},
		{"size below min", func(c *Config) { c.Sizes[0].Size = MinSize - 1 }, "sizes[0].size", "[2,32]"},
		{"size above max", func(c *Config) { c.Sizes[7].Size = MaxSize + 1 }, "sizes[7].size", "[2,32]"},
		{"size min ok", func(c *Config) { c.Sizes[0].Size = MinSize }, "", ""},
		{"size max ok", func(c *Config) { c.Sizes[7].Size = MaxSize }, "", ""},
		{"duplicate size", func(c *Config) { c.Sizes[3].Size = c.Sizes[2].Size }, "sizes[3].size", "strictly increasing"},
		{"decreasing size", func(c *Config) { c.Sizes[1].Size, c.Sizes[2].Size = 5, 4 }, "sizes[2].size", "strictly increasing"},
		{"data ratio negative", func(c *Config) { c.Sizes[1].DataRatio = -0.1 }, "sizes[1].data_ratio", "[0,1]"},
		{"data ratio above one", func(c *Config) { c.Sizes[1].DataRatio = 1.5 }, "sizes[1].data_ratio", "[0,1]"},
		{"data ratio NaN", func(c *Config) { c.Sizes[1].DataRatio = math.NaN() }, "sizes[1].data_ratio", "finite"},
		{"hole ratio NaN", func(c *Config) { c.Sizes[2].HoleRatio = math.NaN() }, "sizes[2].hole_ratio", "finite"},
		{"hole ratio +Inf", func(c *Config) { c.Sizes[2].HoleRatio = math.Inf(1) }, "sizes[2].hole_ratio", "finite"},
		{"hole ratio negative", func(c *Config) { c.Sizes[2].HoleRatio = -1e-9 }, "sizes[2].hole_ratio", "[0,1]"},
		{"hole ratio one ok", func(c *Config) { c.Sizes[2].HoleRatio = 1 }, "", ""},
		{"wait ratio -Inf", func(c *Config) { c.Sizes[4].WaitRatio = math.Inf(-1) }, "sizes[4].wait_ratio", "finite"},
		{"wait ratio above one", func(c *Config) { c.Sizes[4].WaitRatio = 1.0000001 }, "sizes[4].wait_ratio", "[0,1]"},
		{"wait ratio zero ok", func(c *Config) { c.Sizes[4].WaitRatio = 0 }, "", ""},
		{"data sum low", func(c *Config) { c.Sizes[0].DataRatio -= 1e-5 }, "sizes[*].data_ratio", "sum to 1"},
		{"data sum high", func(c *Config) { c.Sizes[0].DataRatio += 1e-5 }, "sizes[*].data_ratio", "sum to 1"},
		{"data sum within tolerance", func(c *Config) { c.Sizes[0].DataRatio += 1e-7 }, "", ""},
		{"all data zero", func(c *Config) {
			for i := range c.Sizes {
				c.Sizes[i].DataRatio = 0
			}
		}, "sizes[*].data_ratio", "sum to 1"},
		{"agents zero", func(c *Config) { c.Agents = 0 }, "agents", "[1,10]"},
		{"agents negative", func(c *Config) { c.Agents = -3 }, "agents", "[1,10]"},
		{"agents above max", func(c *Config) {
			c.Sizes = []SizeConfig{{Size: 20, DataRatio: 1}}
			c.Agents = MaxAgents + 1
		}, "agents", "[1,10]"},
		{"agents exceed smallest size", func(c *Config) { c.Agents = 4 }, "agents", "<= 3"},
		{"agents fit after zero ratio", func(c *Config) {
			c.Agents = 4
			c.Sizes[1].DataRatio += c.Sizes[0].DataRatio
			c.Sizes[0].DataRatio = 0
		}, "", ""},
		{"agents exceed next active size", func(c *Config) {
			c.Agents = 5
			c.Sizes[1].DataRatio += c.Sizes[0].DataRatio
			c.Sizes[0].DataRatio = 0
		}, "agents", "<= 4"},
		{"agents equal size ok", func(c *Config) { c.Agents = 3 }, "", ""},
		{"agent range ok", func(c *Config) { c.AgentsMax = 5 }, "", ""},
		{"agent range past the smallest size ok", func(c *Config) { c.AgentsMax = MaxAgents }, "", ""},
		{"agents_max equal to agents ok", func(c *Config) { c.AgentsMax = 2 }, "", ""},
		{"agents_max below agents", func(c *Config) { c.AgentsMax = 1 }, "agents_max", "[agents=2,10]"},
		{"agents_max negative", func(c *Config) { c.AgentsMax = -1 }, "agents_max", "0 (no range)"},
		{"agents_max above max", func(c *Config) { c.AgentsMax = MaxAgents + 1 }, "agents_max", "[agents=2,10]"},
		{"instances negative", func(c *Config) { c.Instances = -1 }, "instances", "[0,10000000]"},
		{"instances above max", func(c *Config) { c.Instances = MaxConfigInstances + 1 }, "instances", "[0,10000000]"},
		{"instances zero ok", func(c *Config) { c.Instances = 0 }, "", ""},
		{"instances max ok", func(c *Config) { c.Instances = MaxConfigInstances }, "", ""},
		{"first error wins", func(c *Config) { c.Sizes[5].HoleRatio = 2; c.Agents = 0 }, "sizes[5].hole_ratio", "[0,1]"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error on %s, got nil", tt.field)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			if fe.Field != tt.field {
				t.Errorf("field %q, want %q (%v)", fe.Field, tt.field, err)
			}
			if !strings.Contains(fe.Reason, tt.reason) {
				t.Errorf("reason %q does not mention %q", fe.Reason, tt.reason)
			}
		})
	}
}

func cfgSame(a, b Config) bool { return a.Hash() == b.Hash() && a.Diff(b) == "" }

func TestConfigJSONRoundTrip(t *testing.T) {
	for _, c := range []Config{DefaultConfig(), DefaultLocalConfig(), cfgOdd(), cfgRange()} {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseConfig(b)
		if err != nil {
			t.Fatalf("ParseConfig(%s): %v", b, err)
		}
		if !cfgSame(got, c) {
			t.Errorf("JSON round trip changed the config:\n%s", got.Diff(c))
		}
	}
}

// cfgOdd is a valid config with awkward floats.
func cfgOdd() Config {
	return Config{
		Sizes: []SizeConfig{
			{Size: 2, DataRatio: 0, HoleRatio: 0, WaitRatio: 1},
			{Size: 7, DataRatio: 1.0 / 3, HoleRatio: 0.1 + 0.2, WaitRatio: 5e-324},
			{Size: 32, DataRatio: 2.0 / 3, HoleRatio: math.Nextafter(1, 0), WaitRatio: 0.5},
		},
		Agents:    7,
		Instances: 123457,
	}
}

// cfgRange is DefaultConfig with a 2..5 agent range.
func cfgRange() Config {
	c := DefaultConfig()
	c.AgentsMax = 5
	return c
}

// A config without a range encodes as it did before agents_max existed;
// with one, the field is there under its documented name.
func TestConfigAgentsMaxEncoding(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want bool
	}{{DefaultConfig(), false}, {cfgRange(), true}} {
		j, err := json.Marshal(tc.c)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(j), `"agents_max":5`); got != tc.want {
			t.Errorf("JSON %s: has agents_max %v, want %v", j, got, tc.want)
		}
		b, err := msgpack.Marshal(tc.c)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := msgpack.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if _, got := m["agents_max"]; got != tc.want {
			t.Errorf("msgpack %v: has agents_max %v, want %v", m, got, tc.want)
		}
	}
	c := cfgRange()
	if lo, hi := c.AgentRange(); lo != 2 || hi != 5 || !c.HasAgentRange() || c.AgentsText() != "2..5" {
		t.Errorf("range 2..5: AgentRange %d..%d, HasAgentRange %v, AgentsText %q", lo, hi, c.HasAgentRange(), c.AgentsText())
	}
	for n, want := range map[int][]int{3: {2, 3}, 4: {2, 3, 4}, 5: {2, 3, 4, 5}, 10: {2, 3, 4, 5}} {
		if got := c.AgentCounts(n); !slices.Equal(got, want) {
			t.Errorf("AgentCounts(%d) = %v, want %v", n, got, want)
		}
	}
	if got := DefaultConfig().AgentCounts(10); !slices.Equal(got, []int{2}) || DefaultConfig().AgentsText() != "2" {
		t.Errorf("no range: AgentCounts(10) = %v, AgentsText %q", got, DefaultConfig().AgentsText())
	}
}

func TestConfigMsgpackRoundTrip(t *testing.T) {
	for _, c := range []Config{DefaultConfig(), DefaultLocalConfig(), cfgOdd(), cfgRange()} {
		b, err := msgpack.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var got Config
		if err := msgpack.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if !cfgSame(got, c) {
			t.Errorf("msgpack round trip changed the config:\n%s", got.Diff(c))
		}
		if err := got.Validate(); err != nil {
			t.Error(err)
		}
	}
	// The msgpack field names are the documented ones.
	b, err := msgpack.Marshal(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := msgpack.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"sizes", "agents", "instances"} {
		if _, ok := m[k]; !ok {
			t.Errorf("msgpack form lacks %q: %v", k, m)
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	valid, err := json.Marshal(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseConfig(valid); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	cases := []struct {
		name, in, field, msg string
	}{
		{"unknown top field", `{"sizes":[{"size":3,"data_ratio":1,"hole_ratio":0,"wait_ratio":0}],"agents":2,"instances":1,"extra":1}`, "extra", "unknown field"},
		{"unknown size field", `{"sizes":[{"size":3,"data_ratio":1,"hole_ratio":0,"wait_ratio":0,"holes":1}],"agents":2,"instances":1}`, "holes", "unknown field"},
		{"trailing object", string(valid) + `{}`, "", "trailing data"},
		{"trailing garbage", string(valid) + ` x`, "", "trailing data"},
		{"wrong type", `{"sizes":[{"size":"3","data_ratio":1,"hole_ratio":0,"wait_ratio":0}],"agents":2,"instances":1}`, "sizes.size", "string"},
		{"fractional agents", `{"sizes":[{"size":3,"data_ratio":1,"hole_ratio":0,"wait_ratio":0}],"agents":2.5,"instances":1}`, "agents", "int"},
		{"syntax", `{"sizes":[`, "", "invalid config"},
		{"empty", ``, "", "invalid config"},
		{"wrong case", `{"sizes":[{"size":3,"data_ratio":1,"hole_ratio":0,"wait_ratio":0}],"Agents":2,"instances":1}`, "Agents", "case-sensitive"},
		{"wrong case in size", `{"sizes":[{"size":3,"data_ratio":1,"Hole_ratio":0,"wait_ratio":0}],"agents":2,"instances":1}`, "sizes[0].Hole_ratio", "case-sensitive"},
		{"null", `null`, "sizes", "at least one"},
		{"validation", `{"sizes":[{"size":3,"data_ratio":1,"hole_ratio":1.5,"wait_ratio":0}],"agents":2,"instances":1}`, "sizes[0].hole_ratio", "[0,1]"},
		{"missing agents", `{"sizes":[{"size":3,"data_ratio":1,"hole_ratio":0,"wait_ratio":0}],"instances":1}`, "agents", "[1,10]"},
		{"agents_max wrong case", `{"sizes":[{"size":3,"data_ratio":1,"hole_ratio":0,"wait_ratio":0}],"agents":2,"Agents_max":3,"instances":1}`, "Agents_max", "case-sensitive"},
		{"agents_max below agents", `{"sizes":[{"size":3,"data_ratio":1,"hole_ratio":0,"wait_ratio":0}],"agents":3,"agents_max":2,"instances":1}`, "agents_max", "[agents=3,10]"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.in))
			if err == nil {
				t.Fatal("want error")
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%v does not wrap ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("%v does not mention %q", err, tt.msg)
			}
			if tt.field != "" {
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("%v is not a *FieldError", err)
				}
				if fe.Field != tt.field {
					t.Errorf("field %q, want %q", fe.Field, tt.field)
				}
			}
		})
	}
	// Trailing whitespace is not trailing data.
	if _, err := ParseConfig(append(valid, " \n\t"...)); err != nil {
		t.Errorf("trailing whitespace: %v", err)
	}
}

func TestConfigHashGolden(t *testing.T) {
	if got := DefaultConfig().Hash(); got != cfgDefaultHash {
		t.Errorf("DefaultConfig().Hash() = %s, want %s: the canonical encoding changed", got, cfgDefaultHash)
	}
	if h := DefaultConfig().Hash(); len(h) != 16 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Errorf("hash %q is not 16 lower-case hex digits", h)
	}
}

func TestConfigHashSensitivity(t *testing.T) {
	base := DefaultConfig()
	h0 := base.Hash()
	if base.Clone().Hash() != h0 {
		t.Fatal("clone hashes differently")
	}
	edits := map[string]func(c *Config){
		"agents":           func(c *Config) { c.Agents++ },
		"agent range":      func(c *Config) { c.AgentsMax = 5 },
		"agent range 2..6": func(c *Config) { c.AgentsMax = 6 },
		"instances":        func(c *Config) { c.Instances++ },
		"size":             func(c *Config) { c.Sizes[3].Size = 30 },
		"data_ratio":       func(c *Config) { c.Sizes[3].DataRatio = math.Nextafter(c.Sizes[3].DataRatio, 1) },
		"hole_ratio":       func(c *Config) { c.Sizes[3].HoleRatio = math.Nextafter(c.Sizes[3].HoleRatio, 1) },
		"wait_ratio":       func(c *Config) { c.Sizes[3].WaitRatio = math.Nextafter(c.Sizes[3].WaitRatio, 0) },
		"drop size":        func(c *Config) { c.Sizes = c.Sizes[:len(c.Sizes)-1] },
		"add size":         func(c *Config) { c.Sizes = append(c.Sizes, SizeConfig{Size: 11}) },
		"swap order":       func(c *Config) { c.Sizes[0], c.Sizes[1] = c.Sizes[1], c.Sizes[0] },
		"swap hole/wait": func(c *Config) {
			c.Sizes[0].HoleRatio, c.Sizes[0].WaitRatio = c.Sizes[0].WaitRatio, c.Sizes[0].HoleRatio
		},
	}
	seen := map[string]string{h0: "base"}
	for name, edit := range edits {
		c := base.Clone()
		edit(&c)
		h := c.Hash()
		if other, dup := seen[h]; dup {
			t.Errorf("edit %q hashes like %q (%s)", name, other, h)
		}
		seen[h] = name
		if c.Diff(base) == "" {
			t.Errorf("edit %q: Diff is empty", name)
		}
	}
	if base.Hash() != h0 {
		t.Error("edits mutated the base config")
	}
	// -0 and 0 are the same value.
	a, b := base.Clone(), base.Clone()
	a.Sizes[0].HoleRatio, b.Sizes[0].HoleRatio = 0, math.Copysign(0, -1)
	if a.Hash() != b.Hash() || a.Diff(b) != "" {
		t.Error("-0 and 0 hash or diff differently")
	}
	// An agents_max that makes no range is no range.
	for _, m := range []int{0, base.Agents, base.Agents - 1} {
		c := base.Clone()
		c.AgentsMax = m
		if c.Hash() != h0 || c.Diff(base) != "" {
			t.Errorf("agents_max %d (agents %d) hashes or diffs unlike no range", m, base.Agents)
		}
	}
}

func TestConfigDiff(t *testing.T) {
	old := DefaultConfig()
	if d := old.Diff(old.Clone()); d != "" {
		t.Errorf("equal configs: Diff = %q", d)
	}
	cases := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"agents", func(c *Config) { c.Agents = 3 }, "agents 2 → 3"},
		{"agent range", func(c *Config) { c.AgentsMax = 5 }, "agents 2 → 2..5"},
		{"agents_max without a range", func(c *Config) { c.AgentsMax = 2 }, ""},
		{"instances", func(c *Config) { c.Instances = 512 }, "instances 4000 → 512"},
		{"hole ratio", func(c *Config) { c.Sizes[2].HoleRatio = 0.35 }, "size 5: hole_ratio 0.20 → 0.35"},
		{"fine change", func(c *Config) { c.Sizes[0].WaitRatio = 0.3001 }, "size 3: wait_ratio 0.3000 → 0.3001"},
		{"removed", func(c *Config) { c.Sizes = c.Sizes[1:] }, "size 3 removed"},
		{"added", func(c *Config) {
			c.Sizes = append(c.Sizes, SizeConfig{Size: 11, DataRatio: 0.1, HoleRatio: 0.2, WaitRatio: 0.3})
		}, "size 11 added: data_ratio 0.10, hole_ratio 0.20, wait_ratio 0.30"},
		{"several", func(c *Config) {
			c.Agents = 3
			c.Sizes = c.Sizes[1:]
			c.Sizes[0].DataRatio = 0.25
			c.Sizes[0].WaitRatio = 0.5
		}, "agents 2 → 3\nsize 3 removed\nsize 4: data_ratio 0.12 → 0.25\nsize 4: wait_ratio 0.30 → 0.50"},
		{"order", func(c *Config) { c.Sizes[0], c.Sizes[1] = c.Sizes[1], c.Sizes[0] },
			"size order [3 4 5 6 7 8 9 10] → [4 3 5 6 7 8 9 10]"},
		{"duplicate size", func(c *Config) { c.Sizes = append(c.Sizes, c.Sizes[0]) },
			"size 3#2 added: data_ratio 0.12, hole_ratio 0.20, wait_ratio 0.30"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := old.Clone()
			tt.edit(&c)
			if got := c.Diff(old); got != tt.want {
				t.Errorf("Diff:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// cfgRandomFloat draws awkward floats: in range, out of range, NaN, ±Inf, -0.
func cfgRandomFloat(r *rand.Rand) float64 {
	switch r.IntN(12) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1)
	case 2:
		return math.Inf(-1)
	case 3:
		return math.Copysign(0, -1)
	case 4:
		return -r.Float64() * 10
	case 5:
		return 1 + r.Float64()*100
	case 6:
		return math.MaxFloat64 * r.Float64()
	case 7:
		return 5e-324
	case 8:
		return 0
	}
	return r.Float64()
}

func cfgRandomConfig(r *rand.Rand) Config {
	c := Config{Agents: r.IntN(30) - 10, Instances: r.IntN(2*MaxConfigInstances) - MaxConfigInstances/2}
	n := r.IntN(12)
	for range n {
		c.Sizes = append(c.Sizes, SizeConfig{
			Size:      r.IntN(MaxSize+10) - 5,
			DataRatio: cfgRandomFloat(r),
			HoleRatio: cfgRandomFloat(r),
			WaitRatio: cfgRandomFloat(r),
		})
	}
	if r.IntN(2) == 0 {
		c.AgentsMax = r.IntN(30) - 10
	}
	return c
}

func TestConfigProjectProperty(t *testing.T) {
	r := cfgRand(t)
	for i := range 5000 {
		c := cfgRandomConfig(r)
		before := c.Clone()
		p := c.Project()
		if err := p.Validate(); err != nil {
			t.Fatalf("case %d: Project(%+v) = %+v fails Validate: %v", i, c, p, err)
		}
		if !cfgSame(c, before) {
			t.Fatalf("case %d: Project mutated its input:\n%s", i, c.Diff(before))
		}
		// Projecting again moves nothing but rounding in the data ratios.
		q := p.Project()
		if q.Agents != p.Agents || q.AgentsMax != p.AgentsMax || q.Instances != p.Instances || len(q.Sizes) != len(p.Sizes) {
			t.Fatalf("case %d: Project not idempotent:\n%s", i, q.Diff(p))
		}
		for j := range q.Sizes {
			a, b := p.Sizes[j], q.Sizes[j]
			if a.Size != b.Size || a.HoleRatio != b.HoleRatio || a.WaitRatio != b.WaitRatio || math.Abs(a.DataRatio-b.DataRatio) > 1e-12 {
				t.Fatalf("case %d: Project not idempotent:\n%s", i, q.Diff(p))
			}
		}
	}
}

func TestConfigProjectExamples(t *testing.T) {
	nan := math.NaN()
	c := Config{
		Sizes: []SizeConfig{
			{Size: 6, DataRatio: 2, HoleRatio: -0.5, WaitRatio: 7},
			{Size: 4, DataRatio: nan, HoleRatio: nan, WaitRatio: 0.4},
			{Size: 6, DataRatio: 9, HoleRatio: 0.9, WaitRatio: 0.9}, // duplicate: dropped
			{Size: 5, DataRatio: -1, HoleRatio: 0.25, WaitRatio: math.Inf(-1)},
			{Size: 8, DataRatio: 6, HoleRatio: math.Inf(1), WaitRatio: 0.1},
		},
		Agents:    2,
		Instances: 100,
	}
	want := Config{
		Sizes: []SizeConfig{
			{Size: 4, DataRatio: 0, HoleRatio: 0, WaitRatio: 0.4},
			{Size: 5, DataRatio: 0, HoleRatio: 0.25, WaitRatio: 0},
			{Size: 6, DataRatio: 0.25, HoleRatio: 0, WaitRatio: 1},
			{Size: 8, DataRatio: 0.75, HoleRatio: 1, WaitRatio: 0.1},
		},
		Agents:    2,
		Instances: 100,
	}
	if got := c.Project(); !cfgSame(got, want) {
		t.Errorf("Project:\n%s", got.Diff(want))
	}
	if len(c.Sizes) != 5 || c.Sizes[0].Size != 6 || c.Sizes[0].DataRatio != 2 {
		t.Errorf("Project mutated its input: %+v", c)
	}

	// All data ratios zero: uniform over the sizes that hold the agents.
	z := Config{Sizes: []SizeConfig{{Size: 3}, {Size: 4}, {Size: 5}, {Size: 6}}, Agents: 4, Instances: 10}
	wantZ := Config{Sizes: []SizeConfig{{Size: 3}, {Size: 4, DataRatio: 1.0 / 3}, {Size: 5, DataRatio: 1.0 / 3}, {Size: 6, DataRatio: 1.0 / 3}}, Agents: 4, Instances: 10}
	if got := z.Project(); !cfgSame(got, wantZ) {
		t.Errorf("Project (all zero):\n%s", got.Diff(wantZ))
	}

	// Too many agents for every size: clamp agents; clamp sizes and counts.
	a := Config{Sizes: []SizeConfig{{Size: 1, DataRatio: 1}, {Size: 99, DataRatio: 1}}, Agents: 50, Instances: -5}
	wantA := Config{Sizes: []SizeConfig{{Size: MinSize, DataRatio: 0.5}, {Size: MaxSize, DataRatio: 0.5}}, Agents: MaxAgents, Instances: 0}
	// Size 2 cannot hold 10 agents, so its share moves to size 32.
	wantA.Sizes[0].DataRatio, wantA.Sizes[1].DataRatio = 0, 1
	if got := a.Project(); !cfgSame(got, wantA) {
		t.Errorf("Project (clamps):\n%s", got.Diff(wantA))
	}

	// Empty sizes fall back to the default sizes.
	e := Config{Agents: 2, Instances: 7}.Project()
	if err := e.Validate(); err != nil || len(e.Sizes) != len(DefaultConfig().Sizes) {
		t.Errorf("Project (empty sizes) = %+v, %v", e, err)
	}

	// A valid config is a fixed point (up to renormalisation rounding).
	d := DefaultConfig()
	if got := d.Project(); got.Diff(d) != "" && !cfgNear(got, d, 1e-12) {
		t.Errorf("Project(DefaultConfig):\n%s", got.Diff(d))
	}
}

// cfgNear reports whether a and b are equal but for data ratios within tol.
func cfgNear(a, b Config, tol float64) bool {
	if a.Agents != b.Agents || a.Instances != b.Instances || len(a.Sizes) != len(b.Sizes) {
		return false
	}
	for i := range a.Sizes {
		x, y := a.Sizes[i], b.Sizes[i]
		if x.Size != y.Size || x.HoleRatio != y.HoleRatio || x.WaitRatio != y.WaitRatio || math.Abs(x.DataRatio-y.DataRatio) > tol {
			return false
		}
	}
	return true
}

func BenchmarkConfigHash(b *testing.B) {
	c := DefaultConfig()
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Hash()
	}
}

func BenchmarkConfigValidate(b *testing.B) {
	c := DefaultConfig()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkConfigProject(b *testing.B) {
	c := DefaultConfig()
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Project()
	}
}

func BenchmarkParseConfig(b *testing.B) {
	data, err := json.Marshal(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseConfig(data); err != nil {
			b.Fatal(err)
		}
	}
}

func TestConfigValidateNoAlloc(t *testing.T) {
	c := DefaultConfig()
	if n := testing.AllocsPerRun(100, func() { _ = c.Validate() }); n != 0 {
		t.Errorf("Validate of a valid config allocates %v times", n)
	}
}

// Project clamps agents_max to MaxAgents, keeps a valid range as it is and
// writes 0 for one that makes no range.
func TestConfigProjectAgentsMax(t *testing.T) {
	for _, tc := range []struct{ agents, max, want int }{
		{2, 0, 0}, {2, 5, 5}, {2, 2, 0}, {3, 1, 0}, {2, -4, 0}, {2, 99, MaxAgents}, {0, 4, 4}, {12, 12, 0},
	} {
		c := DefaultConfig()
		c.Agents, c.AgentsMax = tc.agents, tc.max
		p := c.Project()
		if p.AgentsMax != tc.want {
			t.Errorf("agents %d, agents_max %d: projected agents_max %d, want %d", tc.agents, tc.max, p.AgentsMax, tc.want)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("agents %d, agents_max %d: projection invalid: %v", tc.agents, tc.max, err)
		}
	}
}
