package movingai

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/t2t-lab/t2t/internal/testutil"
)

// The testdata pair rand-32-20.map/.scen is our own: a 32×32 grid with 20%
// of its cells blocked at random and 100 scen rows between cells of its
// largest 4-connected region, with distinct starts and distinct goals over
// the whole file (so any consecutive group of rows is a valid instance)
// and octile optimal lengths as MovingAI computes them. TestTestdata
// checks that the files are what genRandom writes; -update rewrites them.
const (
	randSide, randRows = 32, 100
	randBlocked        = 0.2
	randSeed           = 2026
	randMap            = "rand-32-20.map"
	randScen           = "rand-32-20.scen"
)

// genRandom draws a side×side map with about blocked of its cells blocked
// and rows scen rows of distinct starts and distinct goals in the map's
// largest 4-connected region, from seed.
func genRandom(side int, blocked float64, rows int, seed uint64, mapName string) (*Map, []ScenRow) {
	r := rand.New(rand.NewPCG(seed, 0x6d6169))
	m := &Map{Width: side, Height: side, Blocked: make([]bool, side*side)}
	for i := range m.Blocked {
		m.Blocked[i] = r.Float64() < blocked
	}
	region := largestRegion(m)
	usedStart, usedGoal := map[int]bool{}, map[int]bool{}
	pick := func(used map[int]bool) int {
		for {
			if c := region[r.IntN(len(region))]; !used[c] {
				used[c] = true
				return c
			}
		}
	}
	out := make([]ScenRow, rows)
	for i := range out {
		s, g := pick(usedStart), pick(usedGoal)
		opt := octile(m, s)[g]
		out[i] = ScenRow{Bucket: int(opt / 4), Map: mapName, MapWidth: side, MapHeight: side,
			StartX: s % side, StartY: s / side, GoalX: g % side, GoalY: g / side,
			Optimal: math.Round(opt*1e8) / 1e8}
	}
	return m, out
}

// neighbours4 lists the free 4-neighbours of cell c.
func neighbours4(m *Map, c int) []int {
	x, y := c%m.Width, c/m.Width
	var out []int
	for _, d := range [4][2]int{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
		if m.Free(x+d[0], y+d[1]) {
			out = append(out, (y+d[1])*m.Width+x+d[0])
		}
	}
	return out
}

// largestRegion returns the cells of m's largest 4-connected free region.
func largestRegion(m *Map) []int {
	seen := make([]bool, len(m.Blocked))
	var best []int
	for c := range m.Blocked {
		if m.Blocked[c] || seen[c] {
			continue
		}
		region := []int{c}
		seen[c] = true
		for i := 0; i < len(region); i++ {
			for _, n := range neighbours4(m, region[i]) {
				if !seen[n] {
					seen[n] = true
					region = append(region, n)
				}
			}
		}
		if len(region) > len(best) {
			best = region
		}
	}
	return best
}

// octile returns the octile distance from src to every cell of m
// (+Inf where unreachable): 8-connected moves, √2 for a diagonal, and no
// diagonal that cuts a blocked corner, as MovingAI's scen lengths are.
func octile(m *Map, src int) []float64 {
	d := make([]float64, len(m.Blocked))
	for i := range d {
		d[i] = math.Inf(1)
	}
	d[src] = 0
	q := &octQueue{{src, 0}}
	for q.Len() > 0 {
		it := heap.Pop(q).(octItem)
		if it.d > d[it.c] {
			continue
		}
		x, y := it.c%m.Width, it.c/m.Width
		for dx := -1; dx <= 1; dx++ {
			for dy := -1; dy <= 1; dy++ {
				if (dx == 0 && dy == 0) || !m.Free(x+dx, y+dy) || !m.Free(x+dx, y) || !m.Free(x, y+dy) {
					continue
				}
				step := 1.0
				if dx != 0 && dy != 0 {
					step = math.Sqrt2
				}
				if n := (y+dy)*m.Width + x + dx; it.d+step < d[n] {
					d[n] = it.d + step
					heap.Push(q, octItem{n, d[n]})
				}
			}
		}
	}
	return d
}

type octItem struct {
	c int
	d float64
}

type octQueue []octItem

func (q octQueue) Len() int           { return len(q) }
func (q octQueue) Less(i, j int) bool { return q[i].d < q[j].d }
func (q octQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *octQueue) Push(x any)        { *q = append(*q, x.(octItem)) }
func (q *octQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// TestTestdata checks that the committed random pair is genRandom's output
// (rerun with -update to rewrite it) and that it parses back the same.
func TestTestdata(t *testing.T) {
	m, rows := genRandom(randSide, randBlocked, randRows, randSeed, randMap)
	mapData, scenData := m.Bytes(), FormatScen(rows)
	testutil.Golden(t, filepath.Join("testdata", randMap), mapData)
	testutil.Golden(t, filepath.Join("testdata", randScen), scenData)
	m2, rows2 := readRandom(t)
	if !reflect.DeepEqual(m2, m) {
		t.Fatal("the map does not parse back the same")
	}
	for i := range rows2 {
		rows2[i].Line = 0
	}
	if !reflect.DeepEqual(rows2, rows) {
		t.Fatal("the scen does not parse back the same")
	}
}

// readRandom reads the committed random pair.
func readRandom(t testing.TB) (*Map, []ScenRow) {
	t.Helper()
	m, err := ReadMap(filepath.Join("testdata", randMap))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ReadScen(filepath.Join("testdata", randScen))
	if err != nil {
		t.Fatal(err)
	}
	return m, rows
}
