package env

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/internal/testutil"
)

var rndSeed = flag.Uint64("renderseed", 0, "seed for the randomised rendering tests (0: a fixed default)")

// rndGrid builds holes from rows of '.' and 'H'.
func rndGrid(rows ...string) (w, h int, holes []bool) {
	for _, row := range rows {
		for _, ch := range row {
			holes = append(holes, ch == 'H')
		}
	}
	return len(rows[0]), len(rows), holes
}

// rndInstance4 is a 4×4 instance with two agents whose shortest paths cross.
//
//	. . . .
//	. H . H
//	. . . .
//	H . . .
func rndInstance4() *Instance {
	w, h, holes := rndGrid("....", ".H.H", "....", "H...")
	in := &Instance{Width: w, Height: h, Holes: holes, Agents: []Agent{
		{Start: Pos{0, 0}, Goal: Pos{2, 3}},
		{Start: Pos{2, 0}, Goal: Pos{0, 2}},
	}, SOC: 9, Makespan: 5, Seed: 7}
	in.ID = in.ComputeID()
	return in
}

// rndPlanOK is an optimal, conflict-free plan for rndInstance4.
func rndPlanOK() *Plan {
	return &Plan{Paths: [][]Pos{
		{{0, 0}, {0, 1}, {0, 2}, {1, 2}, {2, 2}, {2, 3}},
		{{2, 0}, {1, 0}, {0, 0}, {0, 1}, {0, 2}},
	}}
}

// rndPlanConflict collides at (1,0) at t=1.
func rndPlanConflict() *Plan {
	return &Plan{Paths: [][]Pos{
		{{0, 0}, {1, 0}, {2, 0}, {2, 1}, {2, 2}, {2, 3}},
		{{2, 0}, {1, 0}, {0, 0}, {0, 1}, {0, 2}},
	}}
}

// rndInstance5 is a 5×5 instance with three agents, for a plan that breaks
// every rule: a swap, a hole, a jump, leaving the grid, a wait.
func rndInstance5() *Instance {
	w, h, holes := rndGrid(".....", ".H...", ".....", "...H.", ".....")
	in := &Instance{Width: w, Height: h, Holes: holes, Agents: []Agent{
		{Start: Pos{2, 0}, Goal: Pos{2, 4}},
		{Start: Pos{2, 1}, Goal: Pos{0, 0}},
		{Start: Pos{4, 4}, Goal: Pos{4, 0}},
	}}
	in.ID = in.ComputeID()
	return in
}

func rndPlanBad() *Plan {
	return &Plan{Paths: [][]Pos{
		{{2, 0}, {2, 1}, {2, 1}, {2, 3}, {2, 4}}, // swaps with agent 1, then jumps
		{{2, 1}, {2, 0}, {1, 0}, {1, 1}, {0, 0}}, // steps on the hole (1,1)
		{{4, 4}, {4, 4}, {5, 4}, {4, 3}},         // waits, leaves the grid, ends off goal
	}}
}

// rndInstance12 checks two-digit labels.
func rndInstance12() *Instance {
	rows := make([]string, 12)
	for r := range rows {
		row := []byte(strings.Repeat(".", 12))
		row[(r*5+3)%12] = 'H'
		rows[r] = string(row)
	}
	w, h, holes := rndGrid(rows...)
	in := &Instance{Width: w, Height: h, Holes: holes, Agents: []Agent{
		{Start: Pos{0, 0}, Goal: Pos{11, 11}},
		{Start: Pos{11, 0}, Goal: Pos{0, 11}},
		{Start: Pos{5, 5}, Goal: Pos{11, 0}}, // goal under agent 1's start
	}}
	in.ID = in.ComputeID()
	return in
}

func TestRenderASCIIGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  string
	}{
		{"render_ascii_4x4.golden", RenderASCII(rndInstance4())},
		{"render_ascii_12x12.golden", RenderASCII(rndInstance12())},
		{"render_plan_ok.golden", RenderPlanASCII(rndInstance4(), rndPlanOK())},
		{"render_plan_conflict.golden", RenderPlanASCII(rndInstance4(), rndPlanConflict())},
		{"render_plan_bad.golden", RenderPlanASCII(rndInstance5(), rndPlanBad())},
	} {
		t.Run(tt.name, func(t *testing.T) { testutil.Golden(t, filepath.Join("testdata", tt.name), []byte(tt.got)) })
	}
}

// rndGridLines returns the grid rows of a rendering that starts at line
// `from` (the column-label line), stripped of labels and spaces.
func rndGridLines(t *testing.T, lines []string, from, n int) []string {
	t.Helper()
	var out []string
	for _, l := range lines[from+1 : from+1+n] {
		f := strings.Fields(l)
		out = append(out, strings.Join(f[1:], ""))
	}
	return out
}

func TestRenderASCIIContent(t *testing.T) {
	in := rndInstance4()
	lines := strings.Split(RenderASCII(in), "\n")
	if !strings.Contains(lines[0], in.ID) || !strings.Contains(lines[0], "optimal soc 9") {
		t.Errorf("header %q lacks id or optimum", lines[0])
	}
	if got := strings.Fields(lines[1]); strings.Join(got, " ") != "0 1 2 3" {
		t.Errorf("column labels %q", lines[1])
	}
	want := []string{"0.b.", ".H.H", "1..a", "H..."}
	got := rndGridLines(t, lines, 1, 4)
	if strings.Join(got, "/") != strings.Join(want, "/") {
		t.Errorf("grid %q, want %q", got, want)
	}
	if !strings.Contains(RenderASCII(in), "legend:") {
		t.Error("no legend")
	}

	big := RenderASCII(rndInstance12())
	bl := strings.Split(big, "\n")
	if f := strings.Fields(bl[1]); len(f) != 12 || f[11] != "11" {
		t.Errorf("12-wide column labels %q", bl[1])
	}
	rows := rndGridLines(t, bl, 1, 12)
	if rows[11][0] != '1' || rows[5][5] != '2' || rows[0][11] != 'b' || rows[11][11] != 'a' {
		t.Errorf("12x12 markers wrong:\n%s", big)
	}
}

// rndFrameAt returns the grid rows of frame t in a plan rendering.
func rndFrameAt(t *testing.T, s string, tm, n int) ([]string, string) {
	t.Helper()
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l == "t="+strconv.Itoa(tm) {
			rows := rndGridLines(t, lines, i+1, n)
			var ev []string
			for _, e := range lines[i+2+n:] {
				if !strings.HasPrefix(e, "  ") {
					break
				}
				ev = append(ev, strings.TrimSpace(e))
			}
			return rows, strings.Join(ev, "\n")
		}
	}
	t.Fatalf("no frame t=%d in\n%s", tm, s)
	return nil, ""
}

func TestRenderPlanASCIIFrames(t *testing.T) {
	ok := RenderPlanASCII(rndInstance4(), rndPlanOK())
	if strings.Contains(ok, "conflict:") || strings.Count(ok, "t=") != 6 {
		t.Errorf("valid plan rendering wrong:\n%s", ok)
	}
	if !strings.Contains(ok, "soc 9, makespan 5 (optimal soc 9, gap +0)") {
		t.Errorf("costs missing:\n%s", ok)
	}
	rows, ev := rndFrameAt(t, ok, 2, 4)
	if want := "1.0./.H.H/...a/H..."; strings.Join(rows, "/") != want || ev != "" {
		t.Errorf("t=2 frame %q events %q, want %q", rows, ev, want)
	}

	bad := RenderPlanASCII(rndInstance4(), rndPlanConflict())
	rows, ev = rndFrameAt(t, bad, 1, 4)
	if want := "..b./XH.H/...a/H..."; strings.Join(rows, "/") != want {
		t.Errorf("t=1 frame %q, want %q", rows, want)
	}
	if ev != "conflict: agents 0 and 1 both at (1,0)" {
		t.Errorf("t=1 events %q", ev)
	}

	worse := RenderPlanASCII(rndInstance5(), rndPlanBad())
	for tm, want := range map[int][]string{
		1: {"conflict: agents 0 and 1 swap (2,1) ↔ (2,0)"},
		3: {"agent 0 jumps (2,1) → (2,3)", "agent 1 on a hole at (1,1)"},
		2: {"agent 2 out of bounds at (5,4)"},
	} {
		_, ev := rndFrameAt(t, worse, tm, 5)
		for _, w := range want {
			if !strings.Contains(ev, w) {
				t.Errorf("t=%d events %q lack %q", tm, ev, w)
			}
		}
	}
	rows, _ = rndFrameAt(t, worse, 1, 5)
	if rows[2][:2] != "XX" {
		t.Errorf("swap cells not marked: %q", rows)
	}
	for _, w := range []string{"moves RIGHT WAIT JUMP RIGHT", "ends at (4,3), not on goal (4,0)"} {
		if !strings.Contains(worse, w) {
			t.Errorf("listing lacks %q:\n%s", w, worse)
		}
	}
}

// rndXMLCheck parses b fully and returns the elements seen, each with its
// attributes.
func rndXMLCheck(t *testing.T, b []byte) []xml.StartElement {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	var els []xml.StartElement
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("invalid XML: %v\n%s", err, b)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 && e.Name.Local != "svg" {
				t.Fatalf("root element %q", e.Name.Local)
			}
			depth++
			els = append(els, e.Copy())
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 || len(els) == 0 {
		t.Fatal("unbalanced or empty document")
	}
	return els
}

func rndAttr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func TestRenderSVG(t *testing.T) {
	in := rndInstance4()
	conf := []Pos{{1, 0}}
	b := RenderSVG(in, rndPlanConflict(), conf)
	testutil.Golden(t, filepath.Join("testdata", "render_conflict.golden.svg"), b)
	els := rndXMLCheck(t, b)
	if ns := els[0].Name.Space; ns != "http://www.w3.org/2000/svg" {
		t.Errorf("namespace %q", ns)
	}
	count := map[string]int{}
	for _, e := range els {
		switch e.Name.Local {
		case "rect":
			count["fill "+rndAttr(e, "fill")]++
		case "polyline":
			count["polyline"]++
		case "polygon":
			count["polygon"]++
		case "marker":
			count["marker"]++
		}
	}
	if got := count["fill "+rndHex(rndRGB(rndHoleCol))]; got != in.NumHoles()+1 { // +1: legend swatch
		t.Errorf("%d hole rects, want %d", got, in.NumHoles()+1)
	}
	if got := count["fill "+rndHex(rndRGB(rndFrozen))]; got != 16-in.NumHoles()+1 {
		t.Errorf("%d frozen rects, want %d", got, 16-in.NumHoles()+1)
	}
	if count["polyline"] != 2 || count["marker"] != 2 || count["polygon"] != 4 { // 2 goal stars + 2 legend stars
		t.Errorf("element counts %v", count)
	}
	if !bytes.Contains(b, []byte("<title>conflict at (1,0)</title>")) {
		t.Error("conflict cell not drawn")
	}
	// The agents' colours appear.
	for i := range in.Agents {
		if !bytes.Contains(b, []byte(rndHex(rndColour(i)))) {
			t.Errorf("colour of agent %d missing", i)
		}
	}

	// Instance only; odd ids are escaped; wild plans stay valid XML.
	in2 := rndInstance5()
	in2.ID = `<&"id">`
	testutil.Golden(t, filepath.Join("testdata", "render_instance.golden.svg"), RenderSVG(rndInstance4(), nil, nil))
	rndXMLCheck(t, RenderSVG(in2, rndPlanBad(), []Pos{{2, 0}, {2, 1}, {-3, 9}}))
	if bytes.Contains(RenderSVG(rndInstance4(), nil, nil), []byte("polyline")) {
		t.Error("nil plan drew a path")
	}
}

func rndDecodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return img
}

func rndRGBAAt(img image.Image, p image.Point) color.RGBA {
	return color.RGBAModel.Convert(img.At(p.X, p.Y)).(color.RGBA)
}

func TestRenderPNG(t *testing.T) {
	in := rndInstance4()
	plan := rndPlanConflict()
	for _, cellPx := range []int{PNGMinCellPx, 5, 8, 24, 48} {
		b, err := RenderPNG(in, plan, []Pos{{1, 0}}, cellPx)
		if err != nil {
			t.Fatal(err)
		}
		img := rndDecodePNG(t, b)
		l := NewPNGLayout(in.Width, in.Height, cellPx)
		m := cellPx / 4
		off := 0 // first pixel inside a cell, past its grid line
		if cellPx >= 8 {
			off = 1
		}
		if got, want := img.Bounds().Size(), image.Pt(4*cellPx+2*m, 4*cellPx+3*m+cellPx/2); got != want || want != image.Pt(l.Width, l.Height) {
			t.Fatalf("cellPx %d: size %v, want %v (layout %dx%d)", cellPx, got, want, l.Width, l.Height)
		}
		checks := []struct {
			what string
			at   image.Point
			want color.RGBA
		}{
			{"hole (1,1)", l.CellCentre(Pos{1, 1}), rndRGB(rndHoleCol)},
			{"hole (3,0)", l.CellCentre(Pos{3, 0}), rndRGB(rndHoleCol)},
			{"frozen (3,3)", l.CellCentre(Pos{3, 3}), rndRGB(rndFrozen)},
			{"agent 0 path (2,1)", l.CellCentre(Pos{2, 1}), rndColour(0)},
			{"agent 0 path (2,2)", l.CellCentre(Pos{2, 2}), rndColour(0)},
			{"agent 1 path (0,1)", l.CellCentre(Pos{0, 1}), rndColour(1)},
			{"agent 0 start (0,0)", l.CellCentre(Pos{0, 0}), rndColour(0)},
			{"conflict (1,0) corner", image.Pt(m+off, m+cellPx+off), rndRGB(rndConflict)},
			{"margin", image.Pt(0, 0), color.RGBA{0xff, 0xff, 0xff, 0xff}},
			{"legend agent 1", image.Pt(m+(cellPx/2+m)+cellPx/4, m*2+4*cellPx+cellPx/4), rndColour(1)},
		}
		for _, c := range checks {
			if got := rndRGBAAt(img, c.at); got != c.want {
				t.Errorf("cellPx %d: %s at %v = %v, want %v", cellPx, c.what, c.at, got, c.want)
			}
		}
		if cellPx == 48 {
			rndGoldenPNG(t, "render_conflict.golden.png", b)
		}
	}
}

// rndGoldenPNG compares the decoded pixels of got with those of
// testdata/name (decoded, so a change in the PNG compressor does not
// matter), or rewrites the file under -update.
func rndGoldenPNG(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.GoldenCompare(t, filepath.Join("testdata", name), got, func(want []byte) {
		t.Helper()
		a, b := rndDecodePNG(t, got), rndDecodePNG(t, want)
		if a.Bounds() != b.Bounds() {
			t.Fatalf("%s: bounds %v, golden %v", name, a.Bounds(), b.Bounds())
		}
		diff := 0
		for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
			for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
				if rndRGBAAt(a, image.Pt(x, y)) != rndRGBAAt(b, image.Pt(x, y)) {
					diff++
				}
			}
		}
		if diff > 0 {
			t.Errorf("%s: %d pixels differ from the golden image (rerun with -update if intended)", name, diff)
		}
	})
}

func TestRenderPNGErrors(t *testing.T) {
	in := rndInstance4()
	for _, cellPx := range []int{PNGMinCellPx - 1, 0, -5, PNGMaxCellPx + 1} {
		_, err := RenderPNG(in, nil, nil, cellPx)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "cellPx" {
			t.Errorf("cellPx %d: err %v", cellPx, err)
		}
	}
	bad := in.Clone()
	bad.Holes = bad.Holes[:5]
	if _, err := RenderPNG(bad, nil, nil, 8); err == nil {
		t.Error("short grid accepted")
	}
	bad = in.Clone()
	bad.Width = 0
	if _, err := RenderPNG(bad, nil, nil, 8); err == nil {
		t.Error("zero width accepted")
	}
}

// TestRenderRandomNoPanic renders random (often invalid) plans in every
// format: nothing panics, the SVG is valid XML, the PNG decodes.
func TestRenderRandomNoPanic(t *testing.T) {
	seed := *rndSeed
	if seed == 0 {
		seed = 424242
	}
	t.Logf("seed %d (replay with -renderseed=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0x726e64))
	for range 60 {
		n := 2 + r.IntN(9)
		in := &Instance{Width: n, Height: n, Holes: make([]bool, n*n)}
		for i := range in.Holes {
			in.Holes[i] = r.IntN(4) == 0
		}
		for range r.IntN(4) {
			in.Agents = append(in.Agents, Agent{Start: Pos{r.IntN(n + 2), r.IntN(n)}, Goal: Pos{r.IntN(n), r.IntN(n+2) - 1}})
		}
		p := &Plan{}
		for range r.IntN(5) {
			var path []Pos
			for range r.IntN(8) {
				path = append(path, Pos{r.IntN(n+4) - 2, r.IntN(n+4) - 2})
			}
			p.Paths = append(p.Paths, path)
		}
		conf := []Pos{{r.IntN(n + 2), r.IntN(n + 2)}}
		_ = RenderASCII(in)
		_ = RenderPlanASCII(in, p)
		rndXMLCheck(t, RenderSVG(in, p, conf))
		b, err := RenderPNG(in, p, conf, 4+r.IntN(20))
		if err != nil {
			t.Fatal(err)
		}
		rndDecodePNG(t, b)
	}
}

func TestRenderPlanASCIINil(t *testing.T) {
	s := RenderPlanASCII(rndInstance4(), nil)
	if !strings.HasPrefix(s, RenderASCII(rndInstance4())) || !strings.Contains(s, "no paths") {
		t.Errorf("nil plan:\n%s", s)
	}
}

func TestRenderDoesNotMutate(t *testing.T) {
	in, p := rndInstance4(), rndPlanConflict()
	id, paths := in.ComputeID(), RenderPlanASCII(in, p)
	_ = RenderSVG(in, p, []Pos{{1, 0}})
	if _, err := RenderPNG(in, p, []Pos{{1, 0}}, 16); err != nil {
		t.Fatal(err)
	}
	if in.ComputeID() != id || RenderPlanASCII(in, p) != paths {
		t.Error("rendering changed its inputs")
	}
}

func BenchmarkRenderPlanASCII(b *testing.B) {
	in, p := rndInstance4(), rndPlanOK()
	b.ReportAllocs()
	for b.Loop() {
		_ = RenderPlanASCII(in, p)
	}
}

func BenchmarkRenderSVG(b *testing.B) {
	in, p := rndInstance4(), rndPlanConflict()
	b.ReportAllocs()
	for b.Loop() {
		_ = RenderSVG(in, p, []Pos{{1, 0}})
	}
}

func BenchmarkRenderPNG(b *testing.B) {
	in, p := rndInstance4(), rndPlanConflict()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RenderPNG(in, p, []Pos{{1, 0}}, 32); err != nil {
			b.Fatal(err)
		}
	}
}
