package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
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
	// seeded store of 12 files holds at least their bodies.
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
	if s := dirTab.Seeding; len(s) != 1 || s[0].Files != 12 || s[0].Objects < 12 || s[0].StoreBytes < 12*200 {
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
	} {
		if code, _, _ := runWith(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// TestBenchServed runs the bench through `cairn serve` processes and a
// GCS emulator process: every served scenario prints a row whose
// requests are the proxy's, and the open loops lose and duplicate
// nothing.
func TestBenchServed(t *testing.T) {
	bin := cairnBinary(t)
	cmd := exec.Command(bin, "bench", "--served", "--json", "--files", "30", "--rtt", "2ms", "--write-rate", "20",
		"--dir-entries", "5", "--put-samples", "3", "--commit-samples", "2", "--rate", "40", "--duration", "1s", "--replicas", "2")
	cmd.Env = processEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cairn bench --served: %v: %s", err, stderr.String())
	}
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
	}
	if want := []string{"put-commit-warm", "put-new-warm", "put-replace-warm", "throughput-1", "throughput-8"}; !slices.Equal(names, want) {
		t.Errorf("rows %v, want %v", names, want)
	}
}
