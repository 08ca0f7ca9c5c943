package bench_test

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/cmd/cairn/internal/bench"
)

// TestRunTiny runs every scenario at a tiny size without latency and
// checks that the table has every row with plausible figures. It proves
// the bench runs; it asserts no performance.
func TestRunTiny(t *testing.T) {
	cfg := bench.Config{
		Files:      []int{20},
		DirEntries: 10,
		Rate:       200,
		Duration:   200 * time.Millisecond,
		Drain:      10 * time.Second,
		Replicas:   3,
	}
	tab, err := bench.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(tab.Rows), len(bench.Scenarios()); got != want {
		t.Fatalf("%d rows, want %d", got, want)
	}
	if got, want := len(tab.Seeding), 1; got != want {
		t.Fatalf("%d seeding lines, want %d", got, want)
	}
	for _, name := range bench.Scenarios() {
		r, ok := tab.Row(name, 20)
		if !ok {
			t.Fatalf("no row %s", name)
		}
		if r.Requests <= 0 || r.Rounds <= 0 || r.Rounds > r.Requests || r.Wall <= 0 || r.HeadBytes <= 0 {
			t.Errorf("%s: implausible row %+v", name, r)
		}
		if r.Extrapolated {
			t.Errorf("%s: measured row marked extrapolated", name)
		}
	}
	// put-replace-warm too.
	if r, _ := tab.Row(bench.PutReplaceWarm, 20); r.Metrics["puts"] != bench.DefaultPutSamples || r.Metrics["p50_s"] <= 0 {
		t.Errorf("put-replace-warm: %v puts, p50 %v s; want %d puts", r.Metrics["puts"], r.Metrics["p50_s"], bench.DefaultPutSamples)
	}
	// put-new-warm is the mean of its puts, each counted.
	if r, _ := tab.Row(bench.PutNewWarm, 20); r.Metrics["puts"] != bench.DefaultPutSamples || r.Metrics["largest_put_bytes"] < float64(r.BytesWritten) {
		t.Errorf("put-new-warm: %v puts, largest %v bytes, mean %d; want %d puts and the largest at least the mean", r.Metrics["puts"], r.Metrics["largest_put_bytes"], r.BytesWritten, bench.DefaultPutSamples)
	}
	for _, name := range []string{bench.PutNewWarm, bench.PutReplaceWarm, bench.Throughput1, bench.Throughput8} {
		if r, _ := tab.Row(name, 20); r.BytesWritten <= 2048 {
			t.Errorf("%s wrote %d bytes, less than its body", name, r.BytesWritten)
		}
	}
	for _, name := range []string{bench.ColdRead, bench.ListCold, bench.Grep} {
		if r, _ := tab.Row(name, 20); r.BytesRead <= 0 {
			t.Errorf("%s read nothing", name)
		}
	}
	// The cold stat and the cold read are each the first call of a new
	// replica: both count the head, the root and the tables.
	for _, name := range []string{bench.ColdStat, bench.ColdRead} {
		if r, _ := tab.Row(name, 20); r.Requests < 3 || !strings.Contains(r.Notes, "from Open: open 0q/0r") {
			t.Errorf("%s: %d requests (%s), want the head, the root and the tables counted from an Open that made none", name, r.Requests, r.Notes)
		}
	}
	for _, name := range []string{bench.Throughput1, bench.Throughput8} {
		r, _ := tab.Row(name, 20)
		if r.Metrics["acked"] <= 0 || r.Metrics["lost"] != 0 || r.Metrics["duplicated"] != 0 {
			t.Errorf("%s: %v", name, r.Metrics)
		}
	}
	// The restore places the 20 files, the run manifest of the commit
	// put-commit-warm left, and its own restore manifest.
	if r, _ := tab.Row(bench.Restore, 20); r.Metrics["members"] != 22 || r.Metrics["head_writes"] < 3 || r.BytesWritten <= 0 {
		t.Errorf("restore: %v, %d bytes written; want 22 members in at least 3 head writes", r.Metrics, r.BytesWritten)
	}
	if r, _ := tab.Row(bench.ReplicaMemory, 20); r.Metrics["heap_bytes"] == 0 {
		t.Errorf("replica memory: %v", r.Metrics)
	}

	var text, js bytes.Buffer
	if err := tab.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := tab.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, name := range bench.Scenarios() {
		if !strings.Contains(text.String(), name) || !strings.Contains(js.String(), `"`+name+`"`) {
			t.Errorf("output lacks %s:\n%s", name, text.String())
		}
	}
	t.Log("\n" + text.String())
}

// TestRestoreAlone runs the restore scenario without put-commit-warm:
// it commits the workbench itself, unmeasured, and restores that commit.
func TestRestoreAlone(t *testing.T) {
	tab, err := bench.Run(t.Context(), bench.Config{Files: []int{30}, DirEntries: 10, Scenarios: []string{bench.Restore}})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := tab.Row(bench.Restore, 30)
	if !ok || len(tab.Rows) != 1 {
		t.Fatalf("rows %+v, want the restore's alone", tab.Rows)
	}
	if r.Metrics["members"] != 32 || r.Requests <= 0 || !strings.Contains(r.Notes, "32 members placed") {
		t.Errorf("restore: %+v; want 30 files and two manifests placed", r)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []bench.Config{
		{Files: []int{0}},
		{Scenarios: []string{"no-such"}},
		{RTT: -time.Millisecond},
		{RTT: time.Hour},
		{Rate: math.NaN()},
		{Rate: math.Inf(1)},
		{Rate: -1},
		{Rate: 1e-300},
		{Rate: 0.5, Duration: time.Second},
		{WriteRate: math.NaN()},
		{WriteRate: 1e-300},
		{DirEntries: -1},
		{Replicas: -2},
		{Replicas: 100_000},
		{Served: true, Binary: "cairn", Replicas: 64},
		{SeedConcurrency: -1},
		{CacheBytes: -1},
		{Duration: -time.Second},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("%+v: valid, want an error", cfg)
		}
	}
}

func TestExtrapolate(t *testing.T) {
	tab := &bench.Table{Rows: []bench.Row{
		{Scenario: bench.PutNewWarm, Files: 10, Requests: 20, BytesWritten: 1000, Wall: time.Second},
		{Scenario: bench.PutNewWarm, Files: 100, Requests: 20, BytesRead: 9, BytesWritten: 10000, Wall: 2 * time.Second},
		{Scenario: bench.PutNewWarm, Files: 1000, Requests: 30, BytesRead: 5, BytesWritten: 100000, Wall: 3 * time.Second},
		{Scenario: bench.Throughput1, Files: 100, Requests: 1},
		{Scenario: bench.Throughput1, Files: 1000, Requests: 2},
	}}
	tab.Extrapolate([]int{500, 10000})
	r, ok := tab.Row(bench.PutNewWarm, 10000)
	if !ok || !r.Extrapolated || !strings.Contains(r.Notes, "extrapolated") {
		t.Fatalf("no extrapolated row: %+v", tab.Rows)
	}
	// Fitted through the two largest sizes, 100 and 1000; a figure that
	// fell is carried flat; times are not extrapolated.
	if got, want := r.Requests, int64(130); got != want {
		t.Errorf("requests %d, want %d", got, want)
	}
	if got, want := r.BytesWritten, int64(1000000); got != want {
		t.Errorf("bytes written %d, want %d", got, want)
	}
	if got, want := r.BytesRead, int64(5); got != want {
		t.Errorf("bytes read %d, want %d (flat)", got, want)
	}
	if r.Wall != 0 || r.CPU != 0 || r.HeadBytes != 0 {
		t.Errorf("extrapolated times or head: %+v", r)
	}
	if _, ok := tab.Row(bench.PutNewWarm, 500); ok {
		t.Error("extrapolated below the largest measured size")
	}
	if _, ok := tab.Row(bench.Throughput1, 10000); ok {
		t.Error("throughput extrapolated")
	}
	var text bytes.Buffer
	if err := tab.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "put-new-warm*") || !strings.Contains(text.String(), "extrapolated, not measured") {
		t.Errorf("extrapolated row not marked:\n%s", text.String())
	}
}

// TestRunKeepsStoresToTheEnd: with a directory, every size's store is
// still there while a later size runs, and none is left once Run
// returns.
func TestRunKeepsStoresToTheEnd(t *testing.T) {
	dir := t.TempDir()
	var seen []int
	cfg := bench.Config{
		Files:      []int{10, 20},
		DirEntries: 5,
		Dir:        dir,
		Scenarios:  []string{bench.ListWarm},
		Progress: progressFunc(func(line string) {
			if strings.Contains(line, "seeding") {
				entries, err := os.ReadDir(dir)
				if err != nil {
					t.Error(err)
				}
				seen = append(seen, len(entries))
			}
		}),
	}
	if _, err := bench.Run(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 2 || seen[len(seen)-1] != 2 {
		t.Errorf("stores in the directory as each size seeded: %v; want the first still there while the second seeds", seen)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("after Run: %d entries (%v), want none", len(entries), err)
	}
}

// progressFunc is an io.Writer that hands each write to a function.
type progressFunc func(string)

func (f progressFunc) Write(p []byte) (int, error) { f(string(p)); return len(p), nil }
