package bench

import (
	"slices"
	"time"
)

// Extrapolate adds, for each size in sizes, one row per scenario fitted
// linearly through that scenario's two largest measured sizes: requests,
// rounds, bytes, head, wall and CPU time, and the replica's heap. Rows are
// marked Extrapolated and say so in their notes. The throughput rows are
// not extrapolated: a rate under a write limit does not grow linearly
// with the workbench.
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
				return max(0, x+(y-x)*float64(n-a.Files)/float64(b.Files-a.Files))
			}
			i := func(x, y int64) int64 { return int64(f(float64(x), float64(y)) + 0.5) }
			r := Row{
				Scenario: name, Files: n, Extrapolated: true,
				Requests: i(a.Requests, b.Requests), Rounds: i(a.Rounds, b.Rounds),
				BytesRead: i(a.BytesRead, b.BytesRead), BytesWritten: i(a.BytesWritten, b.BytesWritten),
				HeadBytes: i(a.HeadBytes, b.HeadBytes),
				Wall:      time.Duration(i(int64(a.Wall), int64(b.Wall))),
				CPU:       time.Duration(i(int64(a.CPU), int64(b.CPU))),
			}
			if h, ok := b.Metrics["heap_bytes"]; ok {
				r.metric("heap_bytes", f(a.Metrics["heap_bytes"], h))
				r.note("heap %s", size(int64(r.Metrics["heap_bytes"])))
			}
			r.note("extrapolated linearly from %d and %d files, not measured", a.Files, b.Files)
			added = append(added, r)
		}
	}
	t.Rows = append(t.Rows, added...)
}
