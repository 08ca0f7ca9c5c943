package main

import (
	"encoding/json"
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
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--files", "0"},
		{"bench", "--files", "ten"},
		{"bench", "--scenarios", "nope"},
		{"bench", "extra"},
		{"bench", "--files", "10", "--extrapolate", "100"},
	} {
		if code, _, _ := runWith(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}
