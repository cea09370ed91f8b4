package movingai

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/internal/limits"
)

// ScenRow is one line of a .scen file: one agent's start and goal on a map.
// X is the column (0 at the left) and Y the row (0 at the top).
type ScenRow struct {
	// Line is the 1-based line of the row in its file (0 for a row built in
	// code); errors about the row name it.
	Line   int
	Bucket int
	// Map is the map file the row names (kept as written, not checked).
	Map                          string
	MapWidth, MapHeight          int
	StartX, StartY, GoalX, GoalY int
	// Optimal is the row's shortest length on the map with octile moves
	// (8-connected, diagonals cost √2). With t2t's 4-connected moves it is
	// only a lower bound, never a cost.
	Optimal float64
}

// ReadScen reads and parses the .scen file at path (at most MaxFileBytes).
func ReadScen(path string) ([]ScenRow, error) {
	b, err := limits.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fileErr(path, err)
	}
	return ParseScen(b, path)
}

// ParseScen parses a .scen file: the line "version 1" (or "version 1.0"),
// then one row per non-blank line with nine tab-separated fields (bucket,
// map file, map width, map height, start x, start y, goal x, goal y,
// optimal length; whitespace-separated when the line has no nine tab
// fields). Lines may end in CRLF. name names the file in errors, which are
// *fielderr.Error with the 1-based line.
func ParseScen(data []byte, name string) ([]ScenRow, error) {
	lines := splitLines(data)
	if len(lines) == 0 {
		return nil, inputErr(name, 1, ErrSyntax, "empty file: want \"version 1\"")
	}
	if f := strings.Fields(string(lines[0])); len(f) != 2 || f[0] != "version" || (f[1] != "1" && f[1] != "1.0") {
		return nil, inputErr(name, 1, ErrSyntax, "%q: want \"version 1\"", clip(lines[0]))
	}
	var rows []ScenRow
	for i := 1; i < len(lines); i++ {
		if len(bytes.TrimSpace(lines[i])) == 0 {
			continue
		}
		r, err := parseScenRow(string(lines[i]), name, i+1)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// scenFields names the nine columns of a scen row, for errors.
var scenFields = [9]string{"bucket", "map", "map width", "map height", "start x", "start y", "goal x", "goal y", "optimal length"}

// parseScenRow parses one scen row at line ln of file name.
func parseScenRow(line, name string, ln int) (ScenRow, error) {
	f := strings.Split(line, "\t")
	if len(f) != len(scenFields) {
		f = strings.Fields(line)
	}
	if len(f) != len(scenFields) {
		return ScenRow{}, inputErr(name, ln, ErrSyntax, "%d fields, want 9: bucket, map, width, height, start x, start y, goal x, goal y, optimal length", len(f))
	}
	r := ScenRow{Line: ln, Map: strings.TrimSpace(f[1])}
	ints := [...]*int{&r.Bucket, nil, &r.MapWidth, &r.MapHeight, &r.StartX, &r.StartY, &r.GoalX, &r.GoalY}
	for i, dst := range ints {
		if dst == nil {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSpace(f[i]))
		if err != nil || v < 0 || v > MaxSide {
			return ScenRow{}, inputErr(name, ln, ErrSyntax, "%s %q: want an integer in [0,%d]", scenFields[i], f[i], MaxSide)
		}
		*dst = v
	}
	opt, err := strconv.ParseFloat(strings.TrimSpace(f[8]), 64)
	if err != nil || math.IsNaN(opt) || math.IsInf(opt, 0) || opt < 0 {
		return ScenRow{}, inputErr(name, ln, ErrSyntax, "optimal length %q: want a finite number >= 0", f[8])
	}
	r.Optimal = opt
	switch {
	case r.MapWidth < 1 || r.MapHeight < 1:
		return ScenRow{}, inputErr(name, ln, ErrSyntax, "map size %dx%d: want at least 1x1", r.MapWidth, r.MapHeight)
	case r.StartX >= r.MapWidth || r.GoalX >= r.MapWidth:
		return ScenRow{}, inputErr(name, ln, ErrSyntax, "x (start %d, goal %d) must be below the map width %d", r.StartX, r.GoalX, r.MapWidth)
	case r.StartY >= r.MapHeight || r.GoalY >= r.MapHeight:
		return ScenRow{}, inputErr(name, ln, ErrSyntax, "y (start %d, goal %d) must be below the map height %d", r.StartY, r.GoalY, r.MapHeight)
	}
	return r, nil
}

// FormatScen writes rows as a .scen file ("version 1", then one
// tab-separated row per line; Line is not written).
func FormatScen(rows []ScenRow) []byte {
	var b bytes.Buffer
	b.WriteString("version 1\n")
	for _, r := range rows {
		b.WriteString(strconv.Itoa(r.Bucket))
		b.WriteByte('\t')
		b.WriteString(r.Map)
		for _, v := range [...]int{r.MapWidth, r.MapHeight, r.StartX, r.StartY, r.GoalX, r.GoalY} {
			b.WriteByte('\t')
			b.WriteString(strconv.Itoa(v))
		}
		b.WriteByte('\t')
		b.WriteString(strconv.FormatFloat(r.Optimal, 'f', -1, 64))
		b.WriteByte('\n')
	}
	return b.Bytes()
}
