package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/human"
)

// Chart is one inline SVG chart. The SVG carries data-chart (its ID) and
// data-bars or data-series, and its bars, series and axis labels have
// classes (bar, series, axis-label, axis-title, marker), so the browser
// test reads what the chart shows from the DOM.
type Chart struct {
	ID, Title string
	SVG       template.HTML
	// Note says what the chart cannot show ("no timed answers yet").
	Note string
}

// bar is one category of a bar chart.
type bar struct {
	Label string
	N     int
}

func sortBars(b []bar) {
	slices.SortFunc(b, func(x, y bar) int {
		if x.N != y.N {
			return y.N - x.N
		}
		return strings.Compare(x.Label, y.Label)
	})
}

// Sizes of a chart in SVG units; the page scales them to its width.
const (
	chartW, chartH         = 560, 220
	padL, padR, padT, padB = 56, 16, 14, 44
	plotW, plotH           = chartW - padL - padR, chartH - padT - padB
	labelW                 = 230
	barRowH                = 20
)

// svgBuilder writes SVG with every text escaped.
type svgBuilder struct{ strings.Builder }

func (s *svgBuilder) f(format string, args ...any) { fmt.Fprintf(&s.Builder, format, args...) }

func esc(s string) string { return template.HTMLEscapeString(s) }

// histChart draws a length histogram: one bar per bin, x labels at bin
// edges (every few on a log axis), y labels at zero and the fullest bin,
// and max_tokens marked with the share cut there.
func histChart(id, what string, h Histogram) Chart {
	c := Chart{ID: id, Title: what}
	if h.Total == 0 {
		c.Note = "no answers yet"
		return c
	}
	var s svgBuilder
	n := len(h.Counts)
	s.f(`<svg class="chart" data-chart="%s" data-bars="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`, esc(id), n, chartW, chartH, esc(what))
	peak := slices.Max(h.Counts)
	bw := float64(plotW) / float64(n)
	for i, cnt := range h.Counts {
		bh := float64(plotH) * float64(cnt) / float64(peak)
		s.f(`<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" data-lo="%d" data-hi="%d" data-n="%d"><title>%d–%d tokens: %d</title></rect>`,
			padL+float64(i)*bw+0.5, padT+plotH-bh, math.Max(bw-1, 0.5), bh, h.Edges[i], h.Edges[i+1]-1, cnt, h.Edges[i], h.Edges[i+1]-1, cnt)
	}
	axes(&s)
	every := max(1, (n+7)/8)
	for i := 0; i <= n; i += every {
		s.f(`<text class="axis-label x" x="%.1f" y="%d" text-anchor="middle">%s</text>`, padL+float64(i)*bw, padT+plotH+14, human.Int(h.Edges[i]))
	}
	yLabels(&s, float64(peak), "%.0f")
	scale := "linear scale"
	if h.Log {
		scale = "log scale"
	}
	s.f(`<text class="axis-title x" x="%d" y="%d" text-anchor="middle">%s (%s)</text>`, padL+plotW/2, chartH-6, esc(what), scale)
	s.f(`<text class="axis-title y" x="12" y="%d" text-anchor="middle" transform="rotate(-90 12 %d)">records</text>`, padT+plotH/2, padT+plotH/2)
	if h.MaxTokens > 0 {
		i := h.bin(h.MaxTokens)
		frac := float64(h.MaxTokens-h.Edges[i]) / float64(h.Edges[i+1]-h.Edges[i])
		if h.Log && h.Edges[i] > 0 {
			frac = math.Log(float64(h.MaxTokens)/float64(h.Edges[i])) / math.Log(float64(h.Edges[i+1])/float64(h.Edges[i]))
		}
		x := padL + (float64(i)+frac)*bw
		s.f(`<line class="marker" x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>`, x, x, padT, padT+plotH)
		s.f(`<text class="marker-label" x="%.1f" y="%d" text-anchor="end">max_tokens %d: %.1f%% cut</text>`, x-4, padT+10, h.MaxTokens, 100*h.CutShare())
	}
	s.f(`</svg>`)
	c.SVG = template.HTML(s.String())
	return c
}

func axes(s *svgBuilder) {
	s.f(`<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, padL, padL+plotW, padT+plotH, padT+plotH)
	s.f(`<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, padL, padL, padT, padT+plotH)
}

// yLabels labels the y axis at 0, half and top.
func yLabels(s *svgBuilder, top float64, format string) {
	for _, f := range []float64{0, 0.5, 1} {
		y := padT + plotH - f*plotH
		s.f(`<text class="axis-label y" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, y+4, esc(axisLabel(top*f, format)))
	}
}

// barChart draws categories as horizontal bars, largest first, each with
// its label and count.
func barChart(id, what string, bars []bar) Chart {
	c := Chart{ID: id, Title: what}
	total := 0
	for _, b := range bars {
		total += b.N
	}
	if total == 0 {
		c.Note = "nothing yet"
		return c
	}
	var s svgBuilder
	h := padT + len(bars)*barRowH + 8
	s.f(`<svg class="chart" data-chart="%s" data-bars="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`, esc(id), len(bars), chartW, h, esc(what))
	peak := 0
	for _, b := range bars {
		peak = max(peak, b.N)
	}
	w := float64(chartW - labelW - 96)
	for i, b := range bars {
		y := padT + i*barRowH
		bw := math.Max(w*float64(b.N)/float64(peak), 1)
		s.f(`<text class="axis-label" x="%d" y="%d" text-anchor="end">%s</text>`, labelW-6, y+13, esc(ellipsis(b.Label, 40)))
		s.f(`<rect class="bar" x="%d" y="%d" width="%.1f" height="%d" data-label="%s" data-n="%d"><title>%s: %d</title></rect>`,
			labelW, y+2, bw, barRowH-5, esc(b.Label), b.N, esc(b.Label), b.N)
		s.f(`<text class="value" x="%.1f" y="%d">%d (%.1f%%)</text>`, float64(labelW)+bw+4, y+13, b.N, 100*float64(b.N)/float64(total))
	}
	s.f(`</svg>`)
	c.SVG = template.HTML(s.String())
	return c
}

// series is one line of a chart over time.
type series struct {
	Name   string
	Points []float64
	// Dashed draws a reference (an estimate) rather than a measure.
	Dashed bool
}

// palette colours series in order.
var palette = []string{"#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563", "#ca8a04"}

// lineChart draws series over time bins of width seconds from start,
// with time labels (elapsed) on the x axis and a legend.
func lineChart(id, what, unit string, bins int, width float64, ss []series) Chart {
	c := Chart{ID: id, Title: what}
	if bins == 0 || len(ss) == 0 {
		c.Note = "no timed answers yet"
		return c
	}
	var s svgBuilder
	legendH := 16 * ((len(ss) + 1) / 2)
	s.f(`<svg class="chart" data-chart="%s" data-series="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`, esc(id), len(ss), chartW, chartH+legendH, esc(what))
	top := 0.0
	for _, sr := range ss {
		for _, v := range sr.Points {
			top = math.Max(top, v)
		}
	}
	if top == 0 {
		top = 1
	}
	axes(&s)
	x := func(i int) float64 {
		if bins == 1 {
			return padL + plotW/2
		}
		return padL + float64(i)*plotW/float64(bins-1)
	}
	for k, sr := range ss {
		var pts []string
		for i, v := range sr.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), padT+plotH-plotH*v/top))
		}
		dash := ""
		if sr.Dashed {
			dash = ` stroke-dasharray="5 4"`
		}
		s.f(`<polyline class="series" data-series="%s" points="%s" stroke="%s"%s fill="none"><title>%s</title></polyline>`,
			esc(sr.Name), strings.Join(pts, " "), palette[k%len(palette)], dash, esc(sr.Name))
		if bins < 3 {
			// A line of one or two points is hard to see.
			for _, p := range pts {
				xy := strings.Split(p, ",")
				s.f(`<circle cx="%s" cy="%s" r="3" fill="%s"/>`, xy[0], xy[1], palette[k%len(palette)])
			}
		}
		lx, ly := padL+(k%2)*plotW/2, chartH+4+16*(k/2)
		s.f(`<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text class="legend" x="%d" y="%d">%s</text>`,
			lx, ly, palette[k%len(palette)], lx+14, ly+9, esc(ellipsis(sr.Name, 38)))
	}
	for _, f := range []float64{0, 0.25, 0.5, 0.75, 1} {
		i := int(math.Round(f * float64(bins-1)))
		s.f(`<text class="axis-label x" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x(i), padT+plotH+14, elapsed(float64(i)*width))
	}
	yLabels(&s, top, "%.3g")
	s.f(`<text class="axis-title x" x="%d" y="%d" text-anchor="middle">time since the first request</text>`, padL+plotW/2, chartH-6)
	s.f(`<text class="axis-title y" x="12" y="%d" text-anchor="middle" transform="rotate(-90 12 %d)">%s</text>`, padT+plotH/2, padT+plotH/2, esc(unit))
	s.f(`</svg>`)
	c.SVG = template.HTML(s.String())
	return c
}

// elapsed writes seconds as 45s, 12m30s or 3h05m.
func elapsed(sec float64) string {
	d := int(math.Round(sec))
	switch {
	case d < 60:
		return fmt.Sprintf("%ds", d)
	case d < 3600:
		return fmt.Sprintf("%dm%02ds", d/60, d%60)
	}
	return fmt.Sprintf("%dh%02dm", d/3600, d%3600/60)
}

func ellipsis(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// axisLabel writes a value axis's tick: compact from 1,000 up, else in the
// chart's own format (a share's 0.25).
func axisLabel(v float64, format string) string {
	if v >= 1000 {
		return human.Count(v)
	}
	return fmt.Sprintf(format, v)
}

// barSeries is one series of a grouped bar chart: a bar per category.
type barSeries struct {
	Name string
	Bars []groupedBar
}

// groupedBar is one bar of a grouped bar chart. Tokens and Verify are the
// counts its ratio Value is taken of, carried on the bar so that a reader
// of the page can check that a breakdown adds up to its total.
type groupedBar struct {
	Value          float64
	Tokens, Verify int
}

// groupedChart draws a group of vertical bars per category, a bar per
// series in the palette's colours, with a legend of the series.
func groupedChart(id, what, xTitle, yTitle string, cats []string, ss []barSeries) Chart {
	c := Chart{ID: id, Title: what}
	top := 0.0
	for _, sr := range ss {
		for _, b := range sr.Bars {
			top = math.Max(top, b.Value)
		}
	}
	if len(cats) == 0 || top == 0 {
		c.Note = "no drafter measured yet"
		return c
	}
	var s svgBuilder
	legendH := 16 * ((len(ss) + 1) / 2)
	s.f(`<svg class="chart" data-chart="%s" data-bars="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`, esc(id), len(cats)*len(ss), chartW, chartH+legendH, esc(what))
	gw := float64(plotW) / float64(len(cats))
	bw := gw * 0.8 / float64(len(ss))
	for i, cat := range cats {
		x0 := padL + float64(i)*gw + gw*0.1
		for k, sr := range ss {
			b := sr.Bars[i]
			bh := float64(plotH) * b.Value / top
			s.f(`<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" style="fill:%s" data-label="%s" data-series="%s" data-value="%.4f" data-tokens="%d" data-verify="%d"><title>%s, %s: %.2f</title></rect>`,
				x0+float64(k)*bw, padT+plotH-bh, math.Max(bw-1, 0.5), bh, palette[k%len(palette)], palette[k%len(palette)],
				esc(cat), esc(sr.Name), b.Value, b.Tokens, b.Verify, esc(sr.Name), esc(cat), b.Value)
		}
		s.f(`<text class="axis-label x" x="%.1f" y="%d" text-anchor="middle">%s</text>`, padL+(float64(i)+0.5)*gw, padT+plotH+14, esc(ellipsis(cat, int(gw/6)+1)))
	}
	axes(&s)
	yLabels(&s, top, "%.2f")
	s.f(`<text class="axis-title x" x="%d" y="%d" text-anchor="middle">%s</text>`, padL+plotW/2, chartH-6, esc(xTitle))
	s.f(`<text class="axis-title y" x="12" y="%d" text-anchor="middle" transform="rotate(-90 12 %d)">%s</text>`, padT+plotH/2, padT+plotH/2, esc(yTitle))
	for k, sr := range ss {
		lx, ly := padL+(k%2)*plotW/2, chartH+4+16*(k/2)
		s.f(`<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text class="legend" x="%d" y="%d">%s</text>`,
			lx, ly, palette[k%len(palette)], lx+14, ly+9, esc(ellipsis(sr.Name, 38)))
	}
	s.f(`</svg>`)
	c.SVG = template.HTML(s.String())
	return c
}
