package bench_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/cmd/cairn/internal/bench"
)

// svgNode is any element of a parsed SVG document.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []svgNode  `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// walk calls f on n and every element under it, in document order.
func (n svgNode) walk(f func(svgNode)) {
	f(n)
	for _, c := range n.Nodes {
		c.walk(f)
	}
}

// text is the character data of n and of everything under it.
func (n svgNode) text() string {
	var b strings.Builder
	n.walk(func(m svgNode) { b.WriteString(m.Text) })
	return b.String()
}

// byID is the element whose id is id.
func (n svgNode) byID(id string) (svgNode, bool) {
	var found svgNode
	ok := false
	n.walk(func(m svgNode) {
		if !ok && m.attr("id") == id {
			found, ok = m, true
		}
	})
	return found, ok
}

// parseSVG checks that doc is well-formed XML, token by token, and
// returns its root.
func parseSVG(t *testing.T, doc []byte) svgNode {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, doc)
		}
	}
	var root svgNode
	if err := xml.Unmarshal(doc, &root); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return root
}

// chartRow is a row of one panel as drawn: its label, its bar's width and
// fill (no bar: width -1) and the value printed beside it.
type chartRow struct {
	label, value, fill string
	width              float64
}

// panelRows reads the rows of the panel id: the groups holding a label.
func panelRows(t *testing.T, root svgNode, id string) (rows map[string]chartRow, areaWidth float64) {
	t.Helper()
	panel, ok := root.byID("panel-" + id)
	if !ok {
		t.Fatalf("no panel %s", id)
	}
	area, ok := panel.byID("area-" + id)
	if !ok {
		t.Fatalf("panel %s has no plot area", id)
	}
	areaWidth, err := strconv.ParseFloat(area.attr("width"), 64)
	if err != nil || areaWidth <= 0 {
		t.Fatalf("panel %s: plot area width %q", id, area.attr("width"))
	}
	rows = map[string]chartRow{}
	for _, g := range panel.Nodes {
		if g.XMLName.Local != "g" {
			continue
		}
		var texts []string
		r := chartRow{width: -1}
		for _, c := range g.Nodes {
			switch c.XMLName.Local {
			case "text":
				texts = append(texts, c.text())
			case "rect":
				if r.width, err = strconv.ParseFloat(c.attr("width"), 64); err != nil {
					t.Fatalf("panel %s: bar width %q", id, c.attr("width"))
				}
				r.fill = c.attr("fill")
			}
		}
		if len(texts) != 2 {
			t.Fatalf("panel %s: a row with texts %q, want a label and a value", id, texts)
		}
		r.label, r.value = texts[0], texts[1]
		rows[r.label] = r
	}
	return rows, areaWidth
}

// chartTable is a table with a measured row at each of two sizes whose
// figures are the largest of their panel or half of it, a row with no
// CPU, written bytes or fsyncs, and an extrapolated row.
func chartTable() *bench.Table {
	tab := &bench.Table{}
	tab.Config.RTT = 20 * time.Millisecond
	tab.Config.WriteRate = 1
	tab.Config.Files = true
	tab.Rows = []bench.Row{
		{Scenario: bench.PutNewWarm, Files: 1000, Requests: 40, BytesWritten: 1536, Wall: 12 * time.Second, CPU: 40 * time.Millisecond, Fsyncs: 4,
			Metrics: map[string]float64{"puts": 20, "p50_s": 0.1, "largest_put_bytes": 4000, "folds": 1}},
		{Scenario: bench.ColdStat, Files: 1000, Requests: 9, Wall: 6 * time.Second},
		{Scenario: bench.PutNewWarm, Files: 10000, Requests: 3, BytesWritten: 20 << 20, Wall: 900 * time.Microsecond, CPU: 20 * time.Millisecond, Fsyncs: 2,
			Metrics: map[string]float64{"puts": 20, "p50_s": 0.2, "largest_put_bytes": 8000, "folds": 3}},
		{Scenario: bench.PutNewWarm, Files: 100000, Requests: 80, BytesWritten: 40 << 20, Extrapolated: true},
	}
	tab.Seeding = []bench.Seeding{{Files: 1000, Wall: 5 * time.Second, BytesWritten: 4 << 20, StoreBytes: 3 << 20, Objects: 3964}}
	return tab
}

func TestWriteSVG(t *testing.T) {
	tab := chartTable()
	var out bytes.Buffer
	if err := tab.WriteSVG(&out); err != nil {
		t.Fatal(err)
	}
	root := parseSVG(t, out.Bytes())
	if root.XMLName.Space != "http://www.w3.org/2000/svg" || root.XMLName.Local != "svg" || root.attr("version") != "1.1" {
		t.Fatalf("root %v version %q, want an SVG 1.1 svg element", root.XMLName, root.attr("version"))
	}
	if w := root.attr("width"); w != "960" {
		t.Errorf("width %q, want 960", w)
	}
	root.walk(func(n svgNode) {
		if n.XMLName.Local == "script" || n.XMLName.Local == "style" || n.attr("href") != "" {
			t.Errorf("not self-contained: <%s> %v", n.XMLName.Local, n.Attrs)
		}
	})
	all := root.text()
	for _, want := range []string{"in process", "store in a local-file bucket", "rtt 20ms", "write rate 1/s per object",
		"seeded 1000 files in 5000.0ms"} {
		if !strings.Contains(all, want) {
			t.Errorf("the chart does not say %q", want)
		}
	}

	const (
		a = "put-new-warm @ 1000"
		b = "cold-stat @ 1000"
		c = "put-new-warm @ 10000"
		x = "put-new-warm* @ 100000"
	)
	// Each panel's printed values, in WriteText's units; "-" is no bar.
	// half is the row whose value is half the largest, full the largest.
	panels := []struct {
		id         string
		values     map[string]string
		full, half string
	}{
		{"wall", map[string]string{a: "12.0s", b: "6000.0ms", c: "900µs", x: "-"}, a, b},
		{"cpu", map[string]string{a: "40.0ms", b: "-", c: "20.0ms", x: "-"}, a, c},
		{"requests", map[string]string{a: "40", b: "9", c: "3", x: "80"}, x, a},
		{"written", map[string]string{a: "1536B", b: "-", c: "20.0M", x: "40.0M"}, x, c},
		{"fsyncs", map[string]string{a: "4", b: "-", c: "2", x: "-"}, a, c},
	}
	for _, p := range panels {
		rows, area := panelRows(t, root, p.id)
		if len(rows) != len(p.values) {
			t.Errorf("panel %s: %d rows, want %d", p.id, len(rows), len(p.values))
		}
		for label, want := range p.values {
			r, ok := rows[label]
			switch {
			case !ok:
				t.Errorf("panel %s: no row %q", p.id, label)
			case r.value != want:
				t.Errorf("panel %s, %s: value %q, want %q", p.id, label, r.value, want)
			case want == "-" && r.width >= 0:
				t.Errorf("panel %s, %s: a bar of %v for no value", p.id, label, r.width)
			case want != "-" && r.width < 0:
				t.Errorf("panel %s, %s: no bar for %s", p.id, label, want)
			case want != "-" && strings.HasPrefix(r.fill, "url(#") != (label == x):
				t.Errorf("panel %s, %s: fill %q; want hatching exactly for the extrapolated row", p.id, label, r.fill)
			}
		}
		if got := rows[p.full].width; math.Abs(got-area) > 1 {
			t.Errorf("panel %s: the largest bar (%s) is %v wide, want the full %v", p.id, p.full, got, area)
		}
		if got := rows[p.half].width; math.Abs(got-area/2) > 1 {
			t.Errorf("panel %s: the half-value bar (%s) is %v wide, want %v", p.id, p.half, got, area/2)
		}
		for label, r := range rows {
			if r.width > area+0.01 {
				t.Errorf("panel %s, %s: bar %v wider than the plot area %v", p.id, label, r.width, area)
			}
		}
	}

	var again bytes.Buffer
	if err := chartTable().WriteSVG(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), again.Bytes()) {
		t.Error("two charts of the same table differ")
	}
}

// TestWriteSVGPanels: a panel of CPU time or fsyncs is drawn only when
// some row has them, a served table says so in its title, and a label
// XML would read as markup is escaped.
func TestWriteSVGPanels(t *testing.T) {
	tab := &bench.Table{Rows: []bench.Row{
		{Scenario: bench.Throughput1, Files: 30, Requests: 7, Wall: time.Second},
		{Scenario: `odd <"name"> & co`, Files: 30, Requests: 1},
	}}
	tab.Config.Served, tab.Config.Rate, tab.Config.Duration = true, 40, time.Second
	var out bytes.Buffer
	if err := tab.WriteSVG(&out); err != nil {
		t.Fatal(err)
	}
	root := parseSVG(t, out.Bytes())
	for id, want := range map[string]bool{"wall": true, "requests": true, "written": true, "cpu": false, "fsyncs": false} {
		if _, ok := root.byID("panel-" + id); ok != want {
			t.Errorf("panel %s drawn: %v, want %v", id, ok, want)
		}
	}
	all := root.text()
	for _, want := range []string{"served by cairn serve processes", "no write limit", "throughput offered 40/s for 1s", "throughput-1 @ 30",
		`odd <"name"> & co @ 30`} {
		if !strings.Contains(all, want) {
			t.Errorf("the chart does not say %q", want)
		}
	}
}
