package movingai

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

func TestParseMap(t *testing.T) {
	t.Parallel()
	m, err := ParseMap([]byte("type octile\r\nwidth 3\r\nheight 2\r\nmap\r\n.G@\r\nOTS\r\n\r\n"), "a.map")
	if err != nil {
		t.Fatal(err)
	}
	want := &Map{Width: 3, Height: 2, Blocked: []bool{false, false, true, true, true, true}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got %+v, want %+v", m, want)
	}
	if got := string(m.Bytes()); got != "type octile\nheight 2\nwidth 3\nmap\n..@\n@@@\n" {
		t.Fatalf("Bytes:\n%s", got)
	}
	if !m.Free(1, 0) || m.Free(2, 0) || m.Free(-1, 0) || m.Free(3, 0) || m.Free(0, 2) {
		t.Fatal("Free is wrong")
	}
	// W is blocked too, and a file may end without a newline.
	if m, err := ParseMap([]byte("type octile\nheight 1\nwidth 2\nmap\nW."), "b.map"); err != nil || !m.Blocked[0] || m.Blocked[1] {
		t.Fatalf("%+v %v", m, err)
	}
}

func TestParseMapErrors(t *testing.T) {
	t.Parallel()
	const head = "type octile\nheight 2\nwidth 2\nmap\n"
	for _, c := range []struct {
		name, data string
		line       int
		reason     string
	}{
		{"empty", "", 1, `no "map" line`},
		{"type", "type square\nheight 2\nwidth 2\nmap\n..\n..\n", 1, `type "square": want octile`},
		{"no type", "height 2\nwidth 2\nmap\n..\n..\n", 3, `"type" line missing`},
		{"no width", "type octile\nheight 2\nmap\n..\n..\n", 3, `"width" line missing`},
		{"height text", "type octile\nheight two\nwidth 2\nmap\n", 2, `height "two": want an integer`},
		{"height 0", "type octile\nheight 0\nwidth 2\nmap\n", 2, "want an integer in [1,16384]"},
		{"width huge", "type octile\nheight 2\nwidth 99999\nmap\n", 3, "want an integer in [1,16384]"},
		{"twice", "type octile\nheight 2\nheight 2\n", 3, `a second "height" line`},
		{"type twice", "type octile\ntype octile\n", 2, `a second "type" line`},
		{"junk header", "type octile\nsize 2\n", 2, `"size 2": want`},
		{"short row", head + "..\n.\n", 6, "row 1 has 1 cells, want 2"},
		{"long row", head + "...\n..\n", 5, "row 0 has 3 cells, want 2"},
		{"bad cell", head + "..\n.x\n", 6, `column 1: cell 'x'`},
		{"missing rows", head + "..\n", 6, "the map ends after 1 of 2 rows"},
		{"trailing text", head + "..\n..\n\n..\n", 8, "text after the 2 rows"},
	} {
		_, err := ParseMap([]byte(c.data), "m.map")
		checkInputErr(t, c.name, err, ErrSyntax, "m.map", c.line, c.reason)
	}
}

func TestParseScen(t *testing.T) {
	t.Parallel()
	data := "version 1\r\n" +
		"0\tmaps/a b.map\t32\t32\t1\t2\t3\t4\t5.82842712\r\n" +
		"\n" +
		"2 a.map 8 9 7 8 0 0 11\n"
	rows, err := ParseScen([]byte(data), "s.scen")
	if err != nil {
		t.Fatal(err)
	}
	want := []ScenRow{
		{Line: 2, Bucket: 0, Map: "maps/a b.map", MapWidth: 32, MapHeight: 32, StartX: 1, StartY: 2, GoalX: 3, GoalY: 4, Optimal: 5.82842712},
		{Line: 4, Bucket: 2, Map: "a.map", MapWidth: 8, MapHeight: 9, StartX: 7, StartY: 8, GoalX: 0, GoalY: 0, Optimal: 11},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("got %+v\nwant %+v", rows, want)
	}
	back, err := ParseScen(FormatScen(rows), "t.scen")
	if err != nil {
		t.Fatal(err)
	}
	for i := range back {
		back[i].Line = want[i].Line
	}
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("FormatScen round trip: %+v", back)
	}
	if rows, err := ParseScen([]byte("version 1.0\n"), "s.scen"); err != nil || len(rows) != 0 {
		t.Fatalf("an empty version 1.0 scen: %v %v", rows, err)
	}
}

func TestParseScenErrors(t *testing.T) {
	t.Parallel()
	const row = "0\tm.map\t4\t4\t0\t0\t3\t3\t4.24264069\n"
	for _, c := range []struct {
		name, data string
		line       int
		reason     string
	}{
		{"empty", "", 1, "empty file"},
		{"no version", row, 1, `want "version 1"`},
		{"version 2", "version 2\n" + row, 1, `"version 2": want "version 1"`},
		{"fields", "version 1\n" + row + "0\tm.map\t4\t4\t0\t0\t3\t3\n", 3, "8 fields, want 9"},
		{"bucket", "version 1\nx\tm.map\t4\t4\t0\t0\t3\t3\t1\n", 2, `bucket "x": want an integer`},
		{"negative", "version 1\n0\tm.map\t4\t4\t-1\t0\t3\t3\t1\n", 2, `start x "-1": want an integer in [0,16384]`},
		{"width 0", "version 1\n0\tm.map\t0\t4\t0\t0\t0\t0\t1\n", 2, "map size 0x4"},
		{"x off map", "version 1\n0\tm.map\t4\t4\t0\t0\t4\t3\t1\n", 2, "x (start 0, goal 4) must be below the map width 4"},
		{"y off map", "version 1\n0\tm.map\t4\t4\t0\t5\t3\t3\t1\n", 2, "y (start 5, goal 3) must be below the map height 4"},
		{"nan", "version 1\n0\tm.map\t4\t4\t0\t0\t3\t3\tNaN\n", 2, `optimal length "NaN": want a finite number >= 0`},
		{"negative length", "version 1\n0\tm.map\t4\t4\t0\t0\t3\t3\t-2\n", 2, "finite number >= 0"},
	} {
		_, err := ParseScen([]byte(c.data), "s.scen")
		checkInputErr(t, c.name, err, ErrSyntax, "s.scen", c.line, c.reason)
	}
}

// checkInputErr checks that err is a *fielderr.Error at path:line (or
// about the flag path) wrapping
// sentinel, whose message holds reason.
func checkInputErr(t *testing.T, name string, err, sentinel error, path string, line int, reason string) {
	t.Helper()
	var ie *fielderr.Error
	switch {
	case !errors.As(err, &ie):
		t.Errorf("%s: got %v, want a *fielderr.Error", name, err)
	case !errors.Is(err, sentinel):
		t.Errorf("%s: %v does not wrap %v", name, err, sentinel)
	case ie.File+ie.Flag != path || ie.Line != line:
		t.Errorf("%s: at %s%s:%d, want %s:%d (%v)", name, ie.File, ie.Flag, ie.Line, path, line, err)
	case !strings.Contains(err.Error(), reason):
		t.Errorf("%s: %q does not say %q", name, err, reason)
	}
}
