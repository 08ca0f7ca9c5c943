package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The chart's layout, in pixels. The width is fixed; the height follows
// from the number of rows and panels.
const (
	chartWidth  = 960
	chartMargin = 16
	chartRowH   = 18  // one row of a panel
	chartBarH   = 12  // a bar, centred in its row
	chartHeadH  = 24  // a panel's heading, above its rows
	chartScaleH = 16  // a panel's scale, under its rows
	chartGap    = 18  // between panels
	chartValueW = 84  // room right of the longest bar for its value
	chartCharW  = 7.2 // one character of the 12 px monospace labels, about
	chartLineH  = 16  // a line of the title block, the legend and the notes
)

// chartColors are the bars' colours, one per workbench size in the order
// the sizes first appear in the table.
var chartColors = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#9c755f", "#edc948"}

// chartMetric is one panel: a figure of every row, drawn as bars.
type chartMetric struct {
	id, title, note string
	value           func(Row) int64
	format          func(int64) string
	// unit is what the scale's steps are whole multiples of, for a
	// largest value of max.
	unit func(max int64) int64
}

// chartMetrics are the panels WriteSVG draws for t: wall time, CPU time
// (when some row has it), requests, bytes written and fsyncs (when some
// row has them).
func (t *Table) chartMetrics() []chartMetric {
	durFormat := func(v int64) string { return dur(time.Duration(v)) }
	count := func(v int64) string { return strconv.FormatInt(v, 10) }
	one := func(int64) int64 { return 1 }
	micro := func(int64) int64 { return int64(time.Microsecond) }
	bytesUnit := func(max int64) int64 {
		switch {
		case max < 10<<10:
			return 1
		case max < 10<<20:
			return 1 << 10
		default:
			return 1 << 20
		}
	}
	cpuNote := "the process's CPU time during the scenario, where measured"
	requestsNote := "bucket requests of the measured replica (of all replicas for throughput-8)"
	if t.Config.Served {
		cpuNote = "the servers' CPU time during the scenario"
		requestsNote = "requests through the proxy"
	}
	ms := []chartMetric{{
		id: "wall", title: "Wall time", note: "elapsed, with the emulated latency",
		value: func(r Row) int64 { return int64(r.Wall) }, format: durFormat, unit: micro,
	}}
	if slices.ContainsFunc(t.Rows, func(r Row) bool { return r.CPU > 0 }) {
		ms = append(ms, chartMetric{
			id: "cpu", title: "CPU time", note: cpuNote,
			value: func(r Row) int64 { return int64(r.CPU) }, format: durFormat, unit: micro,
		})
	}
	ms = append(ms, chartMetric{
		id: "requests", title: "Requests", note: requestsNote,
		value: func(r Row) int64 { return r.Requests }, format: count, unit: one,
	}, chartMetric{
		id: "written", title: "Bytes written", note: "K = KiB, M = MiB",
		value: func(r Row) int64 { return r.BytesWritten }, format: size, unit: bytesUnit,
	})
	if slices.ContainsFunc(t.Rows, func(r Row) bool { return r.Fsyncs > 0 }) {
		ms = append(ms, chartMetric{
			id: "fsyncs", title: "Fsyncs", note: "of the local-file bucket: files, directories and file systems",
			value: func(r Row) int64 { return r.Fsyncs }, format: count, unit: one,
		})
	}
	return ms
}

// WriteSVG draws the table as an SVG 1.1 chart: one panel of horizontal
// bars per figure (see chartMetrics), a bar per row labelled
// "scenario @ files", on a linear scale from zero whose longest bar is
// the panel's full width, with the row's value at the bar's end in the
// units WriteText prints. Extrapolated rows are marked * and hatched; a
// row whose figure is zero (not measured) shows "-" and no bar. The
// document stands alone (no script, stylesheet or external font) and
// the same table always gives the same bytes.
func (t *Table) WriteSVG(w io.Writer) error {
	var c chart
	c.draw(t)
	_, err := w.Write(c.buf.Bytes())
	return err
}

// chart is an SVG document being written.
type chart struct {
	buf bytes.Buffer
}

func (c *chart) printf(format string, args ...any) { fmt.Fprintf(&c.buf, format, args...) }

// esc is s escaped as XML text or as an attribute's value.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// px is a coordinate, to a hundredth of a pixel.
func px(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// chartLabel is a row's label: "scenario @ files", the scenario marked *
// when the row is extrapolated.
func chartLabel(r Row) string {
	name := r.Scenario
	if r.Extrapolated {
		name += "*"
	}
	return fmt.Sprintf("%s @ %d", name, r.Files)
}

// chartConfig is the line under the title: how the run was made.
func (t *Table) chartConfig() string {
	mode, store := "in process", "store in memory"
	switch {
	case t.Config.Served:
		mode, store = "served by cairn serve processes", "store in a GCS emulator behind a proxy adding the rtt and write rate"
	case t.Config.Files:
		store = "store in a local-file bucket"
	}
	parts := []string{mode, store, "rtt " + t.Config.RTT.String()}
	if t.Config.WriteRate > 0 {
		parts = append(parts, fmt.Sprintf("write rate %g/s per object", t.Config.WriteRate))
	} else {
		parts = append(parts, "no write limit")
	}
	if slices.ContainsFunc(t.Rows, func(r Row) bool { return strings.HasPrefix(r.Scenario, "throughput") }) {
		parts = append(parts, fmt.Sprintf("throughput offered %g/s for %s", t.Config.Rate, t.Config.Duration))
	}
	if t.Config.Random {
		parts = append(parts, "bodies of random text")
	}
	return strings.Join(parts, ", ")
}

// scaleStep is the distance between a panel's gridlines for a largest
// value of largest: 1, 2 or 5 times a power of ten of unit, at least a
// fifth of largest, so that a panel has at most five lines beside zero.
func scaleStep(largest, unit int64) int64 {
	if unit < 1 {
		unit = 1
	}
	want := (largest/unit + 4) / 5 // a fifth of largest, in units, rounded up
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if m*p >= want || p > math.MaxInt64/100 {
				return m * p * unit
			}
		}
	}
}

// draw writes the whole document: the title block and legend, a panel
// per metric, and the notes with the seeding lines.
func (c *chart) draw(t *Table) {
	metrics := t.chartMetrics()
	labels := make([]string, len(t.Rows))
	labelRunes := 0
	for i, r := range t.Rows {
		labels[i] = chartLabel(r)
		labelRunes = max(labelRunes, utf8.RuneCountInString(labels[i]))
	}
	// Each workbench size has a colour, in the order sizes first appear.
	var sizes []int
	extrapolated := false
	for _, r := range t.Rows {
		if !slices.Contains(sizes, r.Files) {
			sizes = append(sizes, r.Files)
		}
		extrapolated = extrapolated || r.Extrapolated
	}
	color := func(files int) int { return slices.Index(sizes, files) % len(chartColors) }

	labelW := min(max(float64(labelRunes)*chartCharW+8, 100), 380)
	plotX := chartMargin + labelW + 8
	plotW := chartWidth - plotX - chartValueW - chartMargin

	// The legend: a swatch per size, then the hatching of extrapolated
	// rows, wrapped to the width.
	type swatch struct {
		x, y  float64
		fill  string
		label string
	}
	var legend []swatch
	legendY := float64(chartMargin + 3*chartLineH + 6)
	x := float64(chartMargin)
	add := func(fill, label string) {
		w := 18 + float64(utf8.RuneCountInString(label))*6.6 + 16
		if x > chartMargin && x+w > chartWidth-chartMargin {
			x, legendY = chartMargin, legendY+chartLineH
		}
		legend = append(legend, swatch{x, legendY, fill, label})
		x += w
	}
	for i, n := range sizes {
		add(chartColors[i%len(chartColors)], fmt.Sprintf("%d files", n))
	}
	if extrapolated {
		add("url(#hatch-legend)", "extrapolated, not measured")
	}

	top := legendY + chartLineH + 6
	panelH := float64(chartHeadH + len(t.Rows)*chartRowH + chartScaleH + chartGap)
	notes := []string{"* extrapolated, not measured (hatched); - zero or not measured; sizes in bytes, K = KiB, M = MiB"}
	for _, s := range t.Seeding {
		notes = append(notes, fmt.Sprintf("seeded %d files in %s without latency: %s written, store %s in %d objects",
			s.Files, dur(s.Wall), size(s.BytesWritten), size(s.StoreBytes), s.Objects))
	}
	height := math.Ceil(top + float64(len(metrics))*panelH + float64(len(notes)*chartLineH) + chartMargin)

	title := "cairn bench: " + t.chartConfig()
	c.printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
	c.printf("<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%s\" viewBox=\"0 0 %d %s\" font-family=\"sans-serif\" font-size=\"12\">\n",
		chartWidth, px(height), chartWidth, px(height))
	c.printf("<title>%s</title>\n", esc(title))
	c.printf("<defs>\n")
	for i := range sizes {
		if i >= len(chartColors) {
			break
		}
		c.hatch(fmt.Sprintf("hatch-%d", i), chartColors[i])
	}
	c.hatch("hatch-legend", "#777777")
	c.printf("</defs>\n")
	c.printf("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%s\" fill=\"#ffffff\"/>\n", chartWidth, px(height))
	c.printf("<text x=\"%d\" y=\"%d\" font-size=\"18\" font-weight=\"bold\">cairn bench</text>\n", chartMargin, chartMargin+chartLineH)
	c.printf("<text x=\"%d\" y=\"%d\" fill=\"#444444\">%s</text>\n", chartMargin, chartMargin+2*chartLineH+2, esc(t.chartConfig()))
	for _, s := range legend {
		c.printf("<rect x=\"%s\" y=\"%s\" width=\"12\" height=\"12\" fill=\"%s\" stroke=\"#777777\" stroke-width=\"0.5\"/>\n", px(s.x), px(s.y-10), s.fill)
		c.printf("<text x=\"%s\" y=\"%s\">%s</text>\n", px(s.x+18), px(s.y), esc(s.label))
	}

	for _, m := range metrics {
		c.panel(m, t.Rows, labels, color, top, plotX, plotW)
		top += panelH
	}

	for i, n := range notes {
		c.printf("<text x=\"%d\" y=\"%s\" font-size=\"11\" fill=\"#444444\">%s</text>\n", chartMargin, px(top+float64(i*chartLineH)), esc(n))
	}
	c.printf("</svg>\n")
}

// hatch defines a pattern of diagonal stripes of color on white.
func (c *chart) hatch(id, color string) {
	c.printf("<pattern id=\"%s\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" patternTransform=\"rotate(45)\">"+
		"<rect x=\"0\" y=\"0\" width=\"6\" height=\"6\" fill=\"#ffffff\"/><rect x=\"0\" y=\"0\" width=\"3\" height=\"6\" fill=\"%s\" fill-opacity=\"0.7\"/></pattern>\n",
		id, color)
}

// panel draws metric m of every row, its heading at top: a grey plot
// area of width plotW from plotX, gridlines at the scale's steps, and a
// group per row with its label, its bar (none when the value is zero)
// and its value.
func (c *chart) panel(m chartMetric, rows []Row, labels []string, color func(int) int, top, plotX, plotW float64) {
	var largest int64
	for _, r := range rows {
		largest = max(largest, m.value(r))
	}
	c.printf("<g id=\"panel-%s\">\n", m.id)
	c.printf("<text x=\"%d\" y=\"%s\"><tspan font-size=\"14\" font-weight=\"bold\">%s</tspan><tspan fill=\"#666666\" dx=\"8\">%s</tspan></text>\n",
		chartMargin, px(top+16), esc(m.title), esc(m.note))
	areaY := top + chartHeadH
	areaH := float64(len(rows) * chartRowH)
	c.printf("<rect id=\"area-%s\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"#f5f5f5\"/>\n",
		m.id, px(plotX), px(areaY), px(plotW), px(areaH))
	scaleY := areaY + areaH + 12
	c.printf("<text x=\"%s\" y=\"%s\" font-size=\"10\" fill=\"#666666\" text-anchor=\"middle\">0</text>\n", px(plotX), px(scaleY))
	if largest > 0 {
		step := scaleStep(largest, m.unit(largest))
		for v := step; v > 0 && v <= largest; v += step {
			gx := plotX + float64(v)/float64(largest)*plotW
			c.printf("<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#d0d0d0\" stroke-width=\"1\"/>\n", px(gx), px(areaY), px(gx), px(areaY+areaH))
			c.printf("<text x=\"%s\" y=\"%s\" font-size=\"10\" fill=\"#666666\" text-anchor=\"middle\">%s</text>\n", px(gx), px(scaleY), esc(m.format(v)))
		}
	}
	for i, r := range rows {
		y := areaY + float64(i*chartRowH)
		baseline := y + chartRowH/2 + 4
		v := m.value(r)
		labelFill := "#222222"
		if r.Extrapolated {
			labelFill = "#666666"
		}
		c.printf("<g>")
		c.printf("<text x=\"%s\" y=\"%s\" text-anchor=\"end\" font-family=\"monospace\" fill=\"%s\">%s</text>",
			px(plotX-8), px(baseline), labelFill, esc(labels[i]))
		if v <= 0 {
			c.printf("<text x=\"%s\" y=\"%s\" fill=\"#888888\">-</text>", px(plotX+4), px(baseline))
			c.printf("</g>\n")
			continue
		}
		w := float64(v) / float64(largest) * plotW
		k := color(r.Files)
		fill, extra := chartColors[k], ""
		if r.Extrapolated {
			fill, extra = fmt.Sprintf("url(#hatch-%d)", k), fmt.Sprintf(" stroke=\"%s\" stroke-width=\"1\"", chartColors[k])
		}
		value := m.format(v)
		c.printf("<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%d\" fill=\"%s\"%s><title>%s</title></rect>",
			px(plotX), px(y+(chartRowH-chartBarH)/2), px(w), chartBarH, fill, extra, esc(labels[i]+": "+value))
		c.printf("<text x=\"%s\" y=\"%s\">%s</text>", px(plotX+w+4), px(baseline), esc(value))
		c.printf("</g>\n")
	}
	c.printf("<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#555555\" stroke-width=\"1\"/>\n", px(plotX), px(areaY), px(plotX), px(areaY+areaH))
	c.printf("</g>\n")
}
