package movingai

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/internal/limits"
)

// MaxFileBytes bounds a .map or .scen file: 16 MiB holds a 4096×4096 map
// (the largest MovingAI maps are 1024×1024, about 1 MiB) and any scen.
const MaxFileBytes = limits.Plan

// MaxSide bounds a map's height and width as the header gives them, before
// any row is read, so a header cannot ask for a huge grid.
const MaxSide = 1 << 14

// Map is a parsed MovingAI .map grid. Blocked is row-major, len
// Width*Height: row y (0 at the top) and column x (0 at the left) is
// Blocked[y*Width+x].
type Map struct {
	Width, Height int
	Blocked       []bool
}

// Free reports whether column x, row y is on the grid and not blocked.
func (m *Map) Free(x, y int) bool {
	return x >= 0 && y >= 0 && x < m.Width && y < m.Height && !m.Blocked[y*m.Width+x]
}

// cellBlocked maps a map character to blocked (true) or free (false); ok is
// false for a character the format does not have. '.' and 'G' are free;
// '@' and 'O' (out of bounds), 'T' (trees), 'S' (swamp) and 'W' (water) are
// blocked: t2t has no terrain that only some moves may enter.
func cellBlocked(c byte) (blocked, ok bool) {
	switch c {
	case '.', 'G':
		return false, true
	case '@', 'O', 'T', 'S', 'W':
		return true, true
	}
	return false, false
}

// ReadMap reads and parses the .map file at path (at most MaxFileBytes).
func ReadMap(path string) (*Map, error) {
	b, err := limits.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fileErr(path, err)
	}
	return ParseMap(b, path)
}

// ParseMap parses a .map file: the header lines "type octile", "height N"
// and "width N" (each once, height and width in either order), the line
// "map", then exactly height rows of width cells. Lines may end in CRLF;
// blank lines after the grid are ignored. name names the file in errors,
// which are *fielderr.Error with the 1-based line.
func ParseMap(data []byte, name string) (*Map, error) {
	lines := splitLines(data)
	h, w, n, err := parseMapHeader(lines, name)
	if err != nil {
		return nil, err
	}
	// The header alone does not size the grid: the rows must be there.
	m := &Map{Width: w, Height: h, Blocked: make([]bool, 0, min(w*h, len(data)))}
	for y := 0; y < h; y++ {
		ln := n + 1 + y
		if ln > len(lines) {
			return nil, inputErr(name, ln, ErrSyntax, "the map ends after %d of %d rows", y, h)
		}
		row := lines[ln-1]
		if len(row) != w {
			return nil, inputErr(name, ln, ErrSyntax, "row %d has %d cells, want %d (width)", y, len(row), w)
		}
		for x := 0; x < w; x++ {
			blocked, ok := cellBlocked(row[x])
			if !ok {
				return nil, inputErr(name, ln, ErrSyntax, "column %d: cell %q is none of . G @ O T S W", x, row[x])
			}
			m.Blocked = append(m.Blocked, blocked)
		}
	}
	for ln := n + h + 1; ln <= len(lines); ln++ {
		if len(bytes.TrimSpace(lines[ln-1])) != 0 {
			return nil, inputErr(name, ln, ErrSyntax, "text after the %d rows of the map", h)
		}
	}
	return m, nil
}

// parseMapHeader reads the header up to the "map" line and returns the
// height, the width and the line number of "map".
func parseMapHeader(lines [][]byte, name string) (h, w, mapLine int, err error) {
	h, w = -1, -1
	typ := -1 // 1 once the "type octile" line is read
	for i, raw := range lines {
		ln := i + 1
		f := strings.Fields(string(raw))
		switch {
		case len(f) == 1 && f[0] == "map":
			for _, d := range [...]struct {
				key string
				v   int
			}{{"type", typ}, {"height", h}, {"width", w}} {
				if d.v < 0 {
					return 0, 0, 0, inputErr(name, ln, ErrSyntax, "%q line missing before \"map\"", d.key)
				}
			}
			return h, w, ln, nil
		case len(f) == 2 && f[0] == "type":
			if typ > 0 {
				return 0, 0, 0, inputErr(name, ln, ErrSyntax, "a second \"type\" line")
			}
			if f[1] != "octile" {
				return 0, 0, 0, inputErr(name, ln, ErrSyntax, "type %q: want octile", f[1])
			}
			typ = 1
		case len(f) == 2 && (f[0] == "height" || f[0] == "width"):
			v, err := strconv.Atoi(f[1])
			if err != nil || v < 1 || v > MaxSide {
				return 0, 0, 0, inputErr(name, ln, ErrSyntax, "%s %q: want an integer in [1,%d]", f[0], f[1], MaxSide)
			}
			dst := &h
			if f[0] == "width" {
				dst = &w
			}
			if *dst >= 0 {
				return 0, 0, 0, inputErr(name, ln, ErrSyntax, "a second %q line", f[0])
			}
			*dst = v
		default:
			return 0, 0, 0, inputErr(name, ln, ErrSyntax, "%q: want \"type octile\", \"height N\", \"width N\" or \"map\"", clip(raw))
		}
	}
	return 0, 0, 0, inputErr(name, len(lines)+1, ErrSyntax, "no \"map\" line")
}

// Bytes writes m as a .map file: '.' free, '@' blocked.
func (m *Map) Bytes() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "type octile\nheight %d\nwidth %d\nmap\n", m.Height, m.Width)
	for y := 0; y < m.Height; y++ {
		for _, blocked := range m.Blocked[y*m.Width : (y+1)*m.Width] {
			if blocked {
				b.WriteByte('@')
			} else {
				b.WriteByte('.')
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// splitLines splits data into lines without their "\n" or "\r\n"; a final
// line without a newline counts, an empty tail after the last newline does
// not.
func splitLines(data []byte) [][]byte {
	lines := bytes.Split(data, []byte{'\n'})
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = bytes.TrimSuffix(l, []byte{'\r'})
	}
	return lines
}

// clip shortens a bad line for an error message.
func clip(b []byte) string {
	const n = 40
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
