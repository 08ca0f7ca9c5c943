package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/cmd/cairn/internal/bench"
)

func TestBenchCommand(t *testing.T) {
	code, out, errOut := runWith(t, "", "bench", "--files", "12", "--rtt", "0", "--write-rate", "0",
		"--dir-entries", "5", "--scenarios", "put-new-warm,cold-stat,list-warm")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "scenario") {
		t.Fatalf("no header: %q", out)
	}
	for i, name := range []string{"put-new-warm", "cold-stat", "list-warm"} {
		if f := strings.Fields(lines[1+i]); len(f) < 3 || f[0] != name || f[1] != "12" || f[2] == "0" {
			t.Errorf("row %d: %q", i, lines[1+i])
		}
	}
	if !strings.Contains(errOut, "seeded in") {
		t.Errorf("no progress on stderr: %q", errOut)
	}

	code, out, errOut = runWith(t, "", "bench", "--json", "--files", "12", "--rtt", "0", "--write-rate", "0",
		"--dir-entries", "5", "--scenarios", "put-new-warm")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut)
	}
	var tab struct {
		Rows []struct {
			Scenario string
			Files    int
			Requests int64
		}
	}
	if err := json.Unmarshal([]byte(out), &tab); err != nil {
		t.Fatalf("--json: %v: %q", err, out)
	}
	if len(tab.Rows) != 1 || tab.Rows[0].Scenario != "put-new-warm" || tab.Rows[0].Files != 12 || tab.Rows[0].Requests <= 0 {
		t.Fatalf("--json rows: %+v", tab.Rows)
	}

	// On the local-file bucket the store is counted from its files: a
	// seeded store of 12 files holds at least their bodies, and a head,
	// a root and a delta.
	code, out, errOut = runWith(t, "", "bench", "--json", "--files", "12", "--rtt", "0", "--write-rate", "0",
		"--dir-entries", "5", "--scenarios", "put-new-warm", "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("--dir: exit %d: %s", code, errOut)
	}
	var dirTab struct {
		Seeding []struct {
			Files      int
			StoreBytes int64 `json:"store_bytes"`
			Objects    int
		}
	}
	if err := json.Unmarshal([]byte(out), &dirTab); err != nil {
		t.Fatalf("--dir: %v: %q", err, out)
	}
	if s := dirTab.Seeding; len(s) != 1 || s[0].Files != 12 || s[0].Objects < 3 || s[0].StoreBytes < 12*200 {
		t.Fatalf("--dir seeding: %+v", s)
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--files", "0"},
		{"bench", "--files", "ten"},
		{"bench", "--scenarios", "nope"},
		{"bench", "extra"},
		{"bench", "--files", "10", "--extrapolate", "100"},
		{"bench", "--served", "--scenarios", "cold-stat"},
		// Settings past what a run can mean, refused before anything runs.
		{"bench", "--cache-mib", "9223372036854775807"},
		{"bench", "--cache-mib", "-1"},
		{"bench", "--rate", "NaN"},
		{"bench", "--rate", "Inf"},
		{"bench", "--write-rate", "1e-300"},
		{"bench", "--replicas", "100000"},
		{"bench", "--dir-entries", "-1"},
		{"bench", "--duration", "-1s"},
		{"bench", "--duration", "1ms", "--rate", "10"},
	} {
		if code, _, _ := runWith(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// benchProcess runs `cairn bench` with args as its own process (bin)
// and returns its standard output; an exit that is not 0 fails the test
// with its standard error.
func benchProcess(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"bench"}, args...)...)
	cmd.Env = processEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cairn bench %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestBenchServed runs the bench through `cairn serve` processes and a
// GCS emulator process: every served scenario prints a row whose
// requests are the proxy's, and the open loops lose and duplicate
// nothing.
func TestBenchServed(t *testing.T) {
	bin := cairnBinary(t)
	out := benchProcess(t, bin, "--served", "--json", "--files", "30", "--rtt", "2ms", "--write-rate", "20",
		"--dir-entries", "5", "--put-samples", "3", "--commit-samples", "2", "--rate", "40", "--duration", "1s", "--replicas", "2")
	var tab struct {
		Config struct{ Served bool }
		Rows   []struct {
			Scenario string
			Requests int64
			Rounds   int64
			Metrics  map[string]float64
			Notes    string
		}
	}
	if err := json.Unmarshal(out, &tab); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !tab.Config.Served {
		t.Error("the table does not say it was served")
	}
	var names []string
	for _, r := range tab.Rows {
		names = append(names, r.Scenario)
		if r.Requests < 4 || r.Rounds < 1 || !strings.Contains(r.Notes, "cairn serve") || r.Metrics["server_rss_peak_bytes"] <= 0 {
			t.Errorf("row %s: %d requests in %d rounds, metrics %v: %s", r.Scenario, r.Requests, r.Rounds, r.Metrics, r.Notes)
		}
		if strings.HasPrefix(r.Scenario, "throughput") {
			m := r.Metrics
			if m["acked"] != m["offered"] || m["offered"] != 40 || m["lost"] != 0 || m["duplicated"] != 0 || m["requests_per_ack"] <= 0 {
				t.Errorf("row %s: %v: %s", r.Scenario, m, r.Notes)
			}
		}
		if r.Scenario == "restore" && r.Metrics["restore_s"] <= 0 {
			t.Errorf("row restore: %v: %s", r.Metrics, r.Notes)
		}
	}
	if want := []string{"put-commit-warm", "put-new-warm", "put-replace-warm", "restore", "throughput-1", "throughput-8"}; !slices.Equal(names, want) {
		t.Errorf("rows %v, want %v", names, want)
	}
}

// TestBenchStorage runs the storage workload at 250 files, its server
// held a second after it: three commits, a store larger than its live
// graph and neither empty, the server's memory read, the held store
// measured, and nothing left in --dir. With --served, or a hold out of
// range or without the scenario, it is refused.
func TestBenchStorage(t *testing.T) {
	bin := cairnBinary(t)
	dir := t.TempDir()
	out := benchProcess(t, bin, "--json", "--files", "250", "--scenarios", "storage", "--dir", dir, "--storage-hold", "1s")
	var tab struct {
		Rows []struct {
			Scenario string
			Files    int
			Wall     int64 `json:"wall_ns"`
			Metrics  map[string]float64
			Notes    string
		}
	}
	if err := json.Unmarshal(out, &tab); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(tab.Rows) != 1 || tab.Rows[0].Scenario != "storage" || tab.Rows[0].Files != 250 {
		t.Fatalf("rows %+v, want one storage row of 250 files", tab.Rows)
	}
	r := tab.Rows[0]
	m := r.Metrics
	if m["commits"] != 3 || m["live_bytes"] <= 0 || m["live_objects"] <= 0 || m["store_bytes"] <= m["live_bytes"] ||
		m["store_objects"] <= m["live_objects"] || m["server_rss_peak_bytes"] <= 0 || r.Wall <= 0 || !strings.Contains(r.Notes, "cairn serve") {
		t.Errorf("storage row: %v, wall %d: %s", m, r.Wall, r.Notes)
	}
	// The hold: the store measured again with the server still running
	// (no sweep comes in a second, so it holds at least the live graph).
	if m["held_store_bytes"] < m["live_bytes"] || m["held_store_objects"] < m["live_objects"] || m["held_server_rss_bytes"] <= 0 ||
		!strings.Contains(r.Notes, "at its peak; after serve ran on, idle, for 1s: the store ") {
		t.Errorf("storage row after its hold: %v: %s", m, r.Notes)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Errorf("--dir holds %v after the run (%v)", left, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--served", "--scenarios", "storage"}, "without --served"},
		{[]string{"--scenarios", "storage", "--storage-hold", "-1s"}, "storage hold -1s: from 0"},
		{[]string{"--scenarios", "storage", "--storage-hold", "24h1s"}, "storage hold 24h0m1s: from 0"},
		{[]string{"--scenarios", "put-new-warm", "--storage-hold", "1m"}, "needs the storage scenario"},
	} {
		code, _, errOut := runWith(t, "", append([]string{"bench", "--files", "10"}, c.args...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("bench %v: exit %d, %q; want a usage error saying %q", c.args, code, errOut, c.want)
		}
	}
}

// TestBenchFromJSON prints and draws a table saved by --json without
// running anything, and refuses flags that would shape a run.
func TestBenchFromJSON(t *testing.T) {
	tab := &bench.Table{Rows: []bench.Row{
		{Scenario: bench.PutNewWarm, Files: 1000, Requests: 25, Rounds: 7, BytesWritten: 282 << 10, Wall: 150 * time.Millisecond},
		{Scenario: bench.ColdStat, Files: 1000, Requests: 9, Rounds: 9, Wall: 200 * time.Millisecond},
		{Scenario: bench.PutNewWarm, Files: 100000, Requests: 25, Rounds: 7, BytesWritten: 20 << 20, Extrapolated: true},
	}}
	tab.Config.RTT, tab.Config.WriteRate = 20*time.Millisecond, 1
	var saved bytes.Buffer
	if err := tab.WriteJSON(&saved); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in, chart := filepath.Join(dir, "table.json"), filepath.Join(dir, "chart.svg")
	if err := os.WriteFile(in, saved.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runWith(t, "", "bench", "--from-json", in, "--svg", chart)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"put-new-warm*", "cold-stat", "150.0ms", "extrapolated, not measured"} {
		if !strings.Contains(out, want) {
			t.Errorf("the text table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(errOut, "seeding") {
		t.Errorf("--from-json ran the bench: %s", errOut)
	}
	svg, err := os.ReadFile(chart)
	if err != nil {
		t.Fatalf("no chart: %v", err)
	}
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the chart is not well-formed: %v", err)
		}
	}
	for _, want := range []string{"put-new-warm @ 1000", "cold-stat @ 1000", "put-new-warm* @ 100000", "rtt 20ms"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the chart lacks %q", want)
		}
	}

	// --json prints the same table again, and standard input is read for -.
	code, out, errOut = runWith(t, saved.String(), "bench", "--from-json", "-", "--json")
	if code != 0 || out != saved.String() {
		t.Errorf("--from-json - --json: exit %d: %s\ngot  %s\nwant %s", code, errOut, out, saved.String())
	}

	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"bench", "--from-json", in, "--rtt", "1ms"},
		{"bench", "--from-json", empty},
		{"bench", "--from-json", in, "--files", "10"},
		{"bench", "--from-json", filepath.Join(dir, "missing.json")},
		{"bench", "--from-json", chart},
		{"bench", "--from-json", in, "--svg", filepath.Join(dir, "no", "such", "dir", "chart.svg")},
	} {
		if code, _, _ := runWith(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	// A chart that cannot be written (its path is a directory) fails the
	// command after the table is printed.
	if code, out, _ := runWith(t, "", "bench", "--from-json", in, "--svg", dir); code != 1 || !strings.Contains(out, "cold-stat") {
		t.Errorf("--svg to a directory: exit %d, want 1 after the table: %q", code, out)
	}
}

// TestBenchSVG draws the chart of a measured run.
func TestBenchSVG(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "bench.svg")
	code, out, errOut := runWith(t, "", "bench", "--files", "12", "--rtt", "0", "--write-rate", "0",
		"--dir-entries", "5", "--scenarios", "cold-stat,list-warm", "--svg", chart)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "scenario") {
		t.Errorf("no table on standard output: %q", out)
	}
	svg, err := os.ReadFile(chart)
	if err != nil {
		t.Fatalf("no chart: %v", err)
	}
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Errorf("the chart is not XML: %v", err)
	}
	for _, want := range []string{"cold-stat @ 12", "list-warm @ 12", "no write limit"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the chart lacks %q", want)
		}
	}
}
