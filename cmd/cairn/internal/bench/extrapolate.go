package bench

import (
	"slices"
)

// Extrapolate adds, for each size in sizes above the largest measured,
// one row per scenario fitted through that scenario's two largest
// measured sizes a < b: requests, rounds, bytes read and written and the
// replica's heap, each as y(b) + max(0, slope)·(n − b). In the current
// format a commit rewrites whole shards, so what grows with the workbench
// grows about linearly; a figure that fell between a and b is noise or a
// bound and is carried flat rather than fitted downwards. Head size, wall
// and CPU time are left out (zero): the head is bounded by its receipts,
// not by the workbench, and times on a shared machine do not fit a line.
// The throughput rows are not extrapolated: a rate under a write limit
// does not follow the workbench's size. Rows are marked Extrapolated and
// say so in their notes.
func (t *Table) Extrapolate(sizes []int) {
	var added []Row
	for _, name := range Scenarios() {
		if name == Throughput1 || name == Throughput8 {
			continue
		}
		var measured []Row
		for _, r := range t.Rows {
			if r.Scenario == name && !r.Extrapolated {
				measured = append(measured, r)
			}
		}
		slices.SortFunc(measured, func(a, b Row) int { return a.Files - b.Files })
		if len(measured) < 2 {
			continue
		}
		a, b := measured[len(measured)-2], measured[len(measured)-1]
		if a.Files == b.Files {
			continue
		}
		for _, n := range sizes {
			if n <= b.Files {
				continue
			}
			f := func(x, y float64) float64 {
				return y + max(0, (y-x)/float64(b.Files-a.Files))*float64(n-b.Files)
			}
			i := func(x, y int64) int64 { return int64(f(float64(x), float64(y)) + 0.5) }
			r := Row{
				Scenario: name, Files: n, Extrapolated: true,
				Requests: i(a.Requests, b.Requests), Rounds: i(a.Rounds, b.Rounds),
				BytesRead: i(a.BytesRead, b.BytesRead), BytesWritten: i(a.BytesWritten, b.BytesWritten),
			}
			if h, ok := b.Metrics["heap_bytes"]; ok {
				r.metric("heap_bytes", f(a.Metrics["heap_bytes"], h))
				r.note("heap %s", size(int64(r.Metrics["heap_bytes"])))
			}
			r.note("extrapolated from %d and %d files, not measured", a.Files, b.Files)
			added = append(added, r)
		}
	}
	t.Rows = append(t.Rows, added...)
}
