package env

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
)

// PNG cell size bounds for RenderPNG.
const (
	PNGMinCellPx = 4
	PNGMaxCellPx = 256
)

// PNGLayout gives the pixel geometry of RenderPNG's image for a grid of
// width×height cells: a margin of Margin = cellPx/4 pixels around the grid,
// whose top-left cell starts at (Margin, Margin); under the grid a legend
// strip with one Swatch×Swatch square per agent in its colour, agent 0
// leftmost, Swatch = cellPx/2, spaced Margin apart, then a bottom margin.
// The image is Width = width*cellPx + 2*Margin pixels wide and Height =
// height*cellPx + 3*Margin + Swatch tall.
type PNGLayout struct {
	CellPx, Margin, Swatch int
	Width, Height          int
}

// NewPNGLayout returns the layout RenderPNG uses.
func NewPNGLayout(width, height, cellPx int) PNGLayout {
	m, s := cellPx/4, cellPx/2
	return PNGLayout{
		CellPx: cellPx, Margin: m, Swatch: s,
		Width:  width*cellPx + 2*m,
		Height: height*cellPx + 3*m + s,
	}
}

// CellCentre returns the pixel at the centre of cell p.
func (l PNGLayout) CellCentre(p Pos) image.Point {
	return image.Pt(l.Margin+p.C*l.CellPx+l.CellPx/2, l.Margin+p.R*l.CellPx+l.CellPx/2)
}

// RenderPNG draws the instance, and the plan and conflict cells when given
// (p and conflicts may be nil), as a PNG image laid out as NewPNGLayout
// describes, with shapes only (no text): frozen cells light blue, holes
// dark, 1-pixel grid lines (when cellPx >= 8), conflict cells filled red,
// and per agent in its colour (rndColour) its goal as a square outline, its
// path as a thick line through the cell centres with a dot on each cell,
// and its start as a filled disc. Agents are drawn in order, so a later
// agent covers an earlier one on a shared cell; to keep both visible, agent
// i of k paths is shifted by (2i-k+1)/2 line widths right and down (line
// width cellPx/8, shift at most cellPx/4). With up to three paths the dot
// still covers the cell's centre pixel. Positions off the grid are
// drawn on the ring of cells just outside it (clipped by the image).
//
// It fails with a *FieldError when cellPx is outside [PNGMinCellPx,
// PNGMaxCellPx] or the instance's grid is malformed.
func RenderPNG(in *Instance, p *Plan, conflicts []Pos, cellPx int) ([]byte, error) {
	if cellPx < PNGMinCellPx || cellPx > PNGMaxCellPx {
		return nil, &FieldError{Field: "cellPx", Value: cellPx, Reason: fmt.Sprintf("must be in [%d,%d]", PNGMinCellPx, PNGMaxCellPx)}
	}
	if in.Width < 1 || in.Width > MaxSize || in.Height < 1 || in.Height > MaxSize {
		return nil, &FieldError{Field: "width", Value: fmt.Sprintf("%dx%d", in.Width, in.Height), Reason: fmt.Sprintf("sides must be in [1,%d]", MaxSize)}
	}
	if len(in.Holes) != in.Width*in.Height {
		return nil, &FieldError{Field: "grid", Value: len(in.Holes), Reason: fmt.Sprintf("want %d cells", in.Width*in.Height)}
	}
	l := NewPNGLayout(in.Width, in.Height, cellPx)
	c := &pngCanvas{img: image.NewRGBA(image.Rect(0, 0, l.Width, l.Height)), l: l, in: in, cellPx: cellPx}
	c.fill(c.img.Bounds(), color.RGBA{0xff, 0xff, 0xff, 0xff})
	c.grid(conflicts)
	c.goals()
	if p != nil {
		c.paths(p)
	}
	// Starts: filled discs.
	for i, a := range in.Agents {
		pngDisc(c.img, l.CellCentre(rndClampPos(in, a.Start)), float64(cellPx)*0.28, rndColour(i))
	}
	// Legend: one swatch per agent.
	n := len(in.Agents)
	if p != nil {
		n = max(n, len(p.Paths))
	}
	y := l.Margin*2 + in.Height*cellPx
	for i := range n {
		x := l.Margin + i*(l.Swatch+l.Margin)
		c.fill(image.Rect(x, y, x+l.Swatch, y+l.Swatch), rndColour(i))
	}

	var buf bytes.Buffer
	if err := png.Encode(&buf, c.img); err != nil {
		return nil, fmt.Errorf("env: encode png: %w", err)
	}
	return buf.Bytes(), nil
}

// pngCanvas is the image RenderPNG draws on with its layout.
type pngCanvas struct {
	img    *image.RGBA
	l      PNGLayout
	in     *Instance
	cellPx int
}

// fill paints rectangle r in colour c.
func (c *pngCanvas) fill(r image.Rectangle, col color.RGBA) {
	draw.Draw(c.img, r, &image.Uniform{C: col}, image.Point{}, draw.Src)
}

// cellRect is the pixel rectangle of cell q.
func (c *pngCanvas) cellRect(q Pos) image.Rectangle {
	x, y := c.l.Margin+q.C*c.cellPx, c.l.Margin+q.R*c.cellPx
	return image.Rect(x, y, x+c.cellPx, y+c.cellPx)
}

// stamp fills a square of side s centred on (x, y).
func (c *pngCanvas) stamp(x, y, s int, col color.RGBA) {
	c.fill(image.Rect(x-s/2, y-s/2, x-s/2+s, y-s/2+s), col)
}

// grid paints the cells, the grid lines when cells are 8 pixels or more,
// and the conflict cells.
func (c *pngCanvas) grid(conflicts []Pos) {
	in, l, cellPx := c.in, c.l, c.cellPx
	grid := cellPx >= 8
	for r := range in.Height {
		for col := range in.Width {
			q := Pos{r, col}
			rgb := rndRGB(rndFrozen)
			if in.Hole(q) {
				rgb = rndRGB(rndHoleCol)
			}
			cr := c.cellRect(q)
			if grid {
				c.fill(cr, rndRGB(rndGridLine))
				cr = image.Rect(cr.Min.X+1, cr.Min.Y+1, cr.Max.X, cr.Max.Y)
			}
			c.fill(cr, rgb)
		}
	}
	if grid { // close the right and bottom edges
		c.fill(image.Rect(l.Margin+in.Width*cellPx, l.Margin, l.Margin+in.Width*cellPx+1, l.Margin+in.Height*cellPx+1), rndRGB(rndGridLine))
		c.fill(image.Rect(l.Margin, l.Margin+in.Height*cellPx, l.Margin+in.Width*cellPx+1, l.Margin+in.Height*cellPx+1), rndRGB(rndGridLine))
	}
	for _, q := range conflicts {
		if !in.InBounds(q) {
			continue
		}
		cr := c.cellRect(q)
		if grid {
			cr = image.Rect(cr.Min.X+1, cr.Min.Y+1, cr.Max.X, cr.Max.Y)
		}
		c.fill(cr, rndRGB(rndConflict))
	}
}

// goals draws each agent's goal as a square outline in its colour.
func (c *pngCanvas) goals() {
	for i, a := range c.in.Agents {
		cr := c.cellRect(rndClampPos(c.in, a.Goal))
		in0 := max(1, c.cellPx/8)
		th := max(1, c.cellPx/12)
		sq := image.Rect(cr.Min.X+in0, cr.Min.Y+in0, cr.Max.X-in0+1, cr.Max.Y-in0+1)
		col := rndColour(i)
		c.fill(image.Rect(sq.Min.X, sq.Min.Y, sq.Max.X, sq.Min.Y+th), col)
		c.fill(image.Rect(sq.Min.X, sq.Max.Y-th, sq.Max.X, sq.Max.Y), col)
		c.fill(image.Rect(sq.Min.X, sq.Min.Y, sq.Min.X+th, sq.Max.Y), col)
		c.fill(image.Rect(sq.Max.X-th, sq.Min.Y, sq.Max.X, sq.Max.Y), col)
	}
}

// paths draws each path as thick lines between cell centres with a dot on
// each cell, offset a little per agent so that shared cells show both.
func (c *pngCanvas) paths(p *Plan) {
	lt := max(1, c.cellPx/8) // path line thickness
	k := len(p.Paths)
	for i, path := range p.Paths {
		col := rndColour(i)
		off := min(max((2*i-(k-1))*lt/2, -c.cellPx/4), c.cellPx/4)
		at := func(q Pos) image.Point { return c.l.CellCentre(rndClampPos(c.in, q)).Add(image.Pt(off, off)) }
		for t, q := range path {
			pt := at(q)
			if t > 0 {
				a := at(path[t-1])
				dx, dy := pt.X-a.X, pt.Y-a.Y
				n := max(pngAbs(dx), pngAbs(dy))
				for s := 0; s <= n; s++ {
					c.stamp(a.X+dx*s/max(n, 1), a.Y+dy*s/max(n, 1), lt, col)
				}
			}
			c.stamp(pt.X, pt.Y, max(3*lt, 2), col)
		}
	}
}

func pngAbs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// pngDisc fills the disc of radius r centred on pixel c.
func pngDisc(img *image.RGBA, c image.Point, r float64, col color.RGBA) {
	ri := int(r) + 1
	for y := c.Y - ri; y <= c.Y+ri; y++ {
		for x := c.X - ri; x <= c.X+ri; x++ {
			dx, dy := float64(x-c.X), float64(y-c.Y)
			if dx*dx+dy*dy <= r*r {
				img.SetRGBA(x, y, col)
			}
		}
	}
}
