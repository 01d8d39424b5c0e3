package churn

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"strconv"
)

// The plot is drawn with the standard library alone: lines, shaded bands and a 3x5 pixel
// font for the tick labels and the axis names, so that `make bench` needs no plotting tool.

const (
	plotW, plotH                         = 960, 540
	marginL, marginR, marginT, marginB   = 90, 30, 40, 60
	fontScale                            = 2
	glyphW, glyphH                       = 3, 5
	yTicks, xTicks                       = 5, 6
	bandSecondTenth, bandLastTenth       = 1, 9
	rssHeadroom                          = 0.02 // of the RSS range, above and below
	deliveredAlpha, bandAlpha, gridAlpha = 255, 255, 255
)

var (
	white = color.RGBA{255, 255, 255, 255}
	black = color.RGBA{0, 0, 0, 255}
	grid  = color.RGBA{225, 225, 225, gridAlpha}
	band  = color.RGBA{255, 236, 200, bandAlpha}
	blue  = color.RGBA{31, 90, 200, 255}
	grey  = color.RGBA{150, 150, 150, deliveredAlpha}
	green = color.RGBA{30, 150, 60, 255}
)

// canvas is an RGBA image with the plot area's mapping.
type canvas struct {
	img                    *image.RGBA
	x0, x1, y0, y1         float64 // data range
	left, right, top, bott int     // plot area in pixels
}

func (c *canvas) px(x, y float64) (int, int) {
	fx := (x - c.x0) / (c.x1 - c.x0)
	fy := (y - c.y0) / (c.y1 - c.y0)
	return c.left + int(math.Round(fx*float64(c.right-c.left))), c.bott - int(math.Round(fy*float64(c.bott-c.top)))
}

func (c *canvas) fill(x0, y0, x1, y1 int, col color.RGBA) {
	for y := max(y0, 0); y < min(y1, plotH); y++ {
		for x := max(x0, 0); x < min(x1, plotW); x++ {
			c.img.SetRGBA(x, y, col)
		}
	}
}

// line draws a line two pixels wide.
func (c *canvas) line(x0, y0, x1, y1 int, col color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		c.fill(x0, y0, x0+2, y0+2, col)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(a int) int { return max(a, -a) }

func sign(a int) int {
	switch {
	case a > 0:
		return 1
	case a < 0:
		return -1
	}
	return 0
}

// text writes s with its top left corner at x, y.
func (c *canvas) text(x, y int, s string, col color.RGBA) {
	for _, r := range s {
		g := glyphs[r]
		for row := range glyphH {
			for bit := range glyphW {
				if g[row]&(1<<(glyphW-1-bit)) != 0 {
					c.fill(x+bit*fontScale, y+row*fontScale, x+(bit+1)*fontScale, y+(row+1)*fontScale, col)
				}
			}
		}
		x += (glyphW + 1) * fontScale
	}
}

func textWidth(s string) int { return len(s) * (glyphW + 1) * fontScale }

// plot draws RSS against simulated hours, with the compared tenths shaded and the delivered
// metrics scaled to the plot's height.
func (r *report) plot() ([]byte, error) {
	c := &canvas{img: image.NewRGBA(image.Rect(0, 0, plotW, plotH)),
		left: marginL, right: plotW - marginR, top: marginT, bott: plotH - marginB}
	c.fill(0, 0, plotW, plotH, white)
	s := r.Samples
	if len(s) < 2 {
		return encode(c.img)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range s {
		mib := float64(p.RSSKiB) / 1024
		lo, hi = math.Min(lo, mib), math.Max(hi, mib)
	}
	for _, h := range r.Heap {
		lo = math.Min(lo, float64(h.HeapInUseKiB)/1024)
	}
	pad := math.Max((hi-lo)*rssHeadroom*5, 1)
	c.x0, c.x1 = 0, s[len(s)-1].SimH
	c.y0, c.y1 = math.Max(0, math.Floor(lo-pad)), math.Ceil(hi+pad)
	for _, tenth := range []int{bandSecondTenth, bandLastTenth} {
		a, b := s[len(s)*tenth/10].SimH, s[min(len(s)*(tenth+1)/10, len(s)-1)].SimH
		xa, _ := c.px(a, c.y0)
		xb, _ := c.px(b, c.y0)
		c.fill(xa, c.top, xb, c.bott, band)
	}
	c.axes()
	last := s[len(s)-1].Delivered
	for i := 1; i < len(s); i++ {
		if last > 0 {
			xa, ya := c.px(s[i-1].SimH, c.y0+(c.y1-c.y0)*float64(s[i-1].Delivered)/float64(last))
			xb, yb := c.px(s[i].SimH, c.y0+(c.y1-c.y0)*float64(s[i].Delivered)/float64(last))
			c.line(xa, ya, xb, yb, grey)
		}
		xa, ya := c.px(s[i-1].SimH, float64(s[i-1].RSSKiB)/1024)
		xb, yb := c.px(s[i].SimH, float64(s[i].RSSKiB)/1024)
		c.line(xa, ya, xb, yb, blue)
	}
	// The heap is read every few seconds of wall time, which the compression turns into
	// simulated hours.
	for i := 1; i < len(r.Heap); i++ {
		h0, h1 := r.Heap[i-1], r.Heap[i]
		xa, ya := c.px(h0.WallS*r.Compression/3600, float64(h0.HeapInUseKiB)/1024)
		xb, yb := c.px(h1.WallS*r.Compression/3600, float64(h1.HeapInUseKiB)/1024)
		c.line(xa, ya, xb, yb, green)
	}
	return encode(c.img)
}

// axes draws the frame, the grid and the tick labels: MiB up the side, simulated hours along
// the bottom.
func (c *canvas) axes() {
	for i := 0; i <= yTicks; i++ {
		v := c.y0 + (c.y1-c.y0)*float64(i)/yTicks
		_, y := c.px(c.x0, v)
		c.fill(c.left, y, c.right, y+1, grid)
		label := strconv.FormatFloat(v, 'f', 1, 64)
		c.text(c.left-8-textWidth(label), y-glyphH*fontScale/2, label, black)
	}
	for i := 0; i <= xTicks; i++ {
		v := c.x0 + (c.x1-c.x0)*float64(i)/xTicks
		x, _ := c.px(v, c.y0)
		c.fill(x, c.top, x+1, c.bott, grid)
		label := strconv.FormatFloat(v, 'f', 0, 64)
		c.text(x-textWidth(label)/2, c.bott+10, label, black)
	}
	c.fill(c.left, c.top, c.left+2, c.bott, black)
	c.fill(c.left, c.bott, c.right, c.bott+2, black)
	c.text(c.left, c.top-14-glyphH*fontScale, "AGENT RSS MIB", blue)
	c.text(c.left+textWidth("AGENT RSS MIB   "), c.top-14-glyphH*fontScale, "GO HEAP IN USE MIB", green)
	c.text(c.right-textWidth("DELIVERED"), c.top-14-glyphH*fontScale, "DELIVERED", grey)
	c.text((c.left+c.right-textWidth("SIMULATED HOURS"))/2, plotH-glyphH*fontScale-12, "SIMULATED HOURS", black)
}

func encode(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	err := png.Encode(&b, img)
	return b.Bytes(), err
}

// glyphs are 3x5 pixel letters, one row per entry, the leftmost pixel the highest bit.
var glyphs = map[rune][glyphH]uint8{
	'0': {7, 5, 5, 5, 7}, '1': {2, 6, 2, 2, 7}, '2': {7, 1, 7, 4, 7}, '3': {7, 1, 7, 1, 7},
	'4': {5, 5, 7, 1, 1}, '5': {7, 4, 7, 1, 7}, '6': {7, 4, 7, 5, 7}, '7': {7, 1, 1, 1, 1},
	'8': {7, 5, 7, 5, 7}, '9': {7, 5, 7, 1, 7}, '.': {0, 0, 0, 0, 2}, ' ': {},
	'A': {2, 5, 7, 5, 5}, 'B': {6, 5, 6, 5, 6}, 'D': {6, 5, 5, 5, 6}, 'E': {7, 4, 6, 4, 7},
	'G': {7, 4, 5, 5, 7}, 'H': {5, 5, 7, 5, 5}, 'I': {7, 2, 2, 2, 7}, 'L': {4, 4, 4, 4, 7},
	'M': {5, 7, 7, 5, 5}, 'N': {6, 5, 5, 5, 5}, 'O': {7, 5, 5, 5, 7}, 'P': {6, 5, 6, 4, 4}, 'R': {6, 5, 6, 5, 5},
	'S': {7, 4, 7, 1, 7}, 'T': {7, 2, 2, 2, 2}, 'U': {5, 5, 5, 5, 7}, 'V': {5, 5, 5, 5, 2},
}
