package movingai

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParseMap: ParseMap never panics; a map it accepts has a grid of
// height×width cells and writes (Bytes) a file that parses to the same map.
func FuzzParseMap(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", randMap)); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		"", "map\n", "type octile\nheight 1\nwidth 1\nmap\n.\n",
		"type octile\r\nwidth 3\r\nheight 2\r\nmap\r\n.G@\r\nOTS\r\n\r\n",
		"type octile\nheight 2\nwidth 2\nmap\n..\n.\n",
		"type octile\nheight 16384\nwidth 16384\nmap\n",
		"type octile\nheight 1\nwidth 2\nmap\nW.",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMap(data, "f.map")
		if err != nil {
			return
		}
		if len(m.Blocked) != m.Width*m.Height || m.Width < 1 || m.Height < 1 {
			t.Fatalf("%dx%d map with %d cells", m.Width, m.Height, len(m.Blocked))
		}
		m2, err := ParseMap(m.Bytes(), "g.map")
		if err != nil {
			t.Fatalf("Bytes does not parse: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatal("Bytes round trip changed the map")
		}
	})
}

// FuzzParseScen: ParseScen never panics; rows it accepts lie on their map
// and FormatScen writes a file that parses to the same rows.
func FuzzParseScen(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", randScen)); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		"", "version 1\n", "version 1.0\r\n0 a.map 4 4 0 0 3 3 4.24264069\r\n",
		"version 1\n0\tmaps/a b.map\t32\t32\t1\t2\t3\t4\t5.82842712\n\n2 a.map 8 9 7 8 0 0 11\n",
		"version 1\n0\t\t4\t4\t0\t0\t3\t3\t1e308\n",
		"version 1\n0\tm\t4\t4\t0\t0\t3\t3\t-0\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ParseScen(data, "f.scen")
		if err != nil {
			return
		}
		for _, r := range rows {
			if r.StartX >= r.MapWidth || r.GoalX >= r.MapWidth || r.StartY >= r.MapHeight || r.GoalY >= r.MapHeight || r.Optimal < 0 || r.Line < 2 {
				t.Fatalf("accepted a row off its map: %+v", r)
			}
		}
		back, err := ParseScen(FormatScen(rows), "g.scen")
		if err != nil {
			t.Fatalf("FormatScen does not parse: %v", err)
		}
		if len(back) != len(rows) {
			t.Fatalf("%d rows back, want %d", len(back), len(rows))
		}
		for i := range back {
			back[i].Line = rows[i].Line
		}
		if !reflect.DeepEqual(back, rows) {
			t.Fatalf("FormatScen round trip:\n%+v\n%+v", back, rows)
		}
	})
}
