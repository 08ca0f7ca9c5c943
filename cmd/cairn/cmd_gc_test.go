package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
)

// gcBucket puts n files through `cairn workbench` into a fresh mem bucket
// and returns its URL.
func gcBucket(t *testing.T, name string, n int) string {
	t.Helper()
	url := "mem://" + name
	for i := range n {
		in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":"f%d.txt","text":"body %d"}`, i, i)
		var out, errOut bytes.Buffer
		code := run(context.Background(), &env{stdin: strings.NewReader(in), stdout: &out, stderr: &errOut},
			[]string{"workbench", "--bucket", url, "--agent", "gc", "workbench_put_file"})
		if code != 0 {
			t.Fatalf("put: exit %d\n%s%s", code, out.String(), errOut.String())
		}
	}
	return url
}

func listKeys(t *testing.T, url string) []string {
	t.Helper()
	b, err := bucket.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	objs, _, err := bucket.ListAll(context.Background(), b, bucket.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

// TestGCCommand: a sweep of a young store keeps everything and says so,
// in the table and in JSON; --all-agents finds the agent's shard.
func TestGCCommand(t *testing.T) {
	url := gcBucket(t, "gc-cmd", 4)
	before := listKeys(t, url)

	code, out, errOut := runCmd(t, "gc", "--bucket", url, "--agent", "gc")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"agent gc (shard ", "head sequence 5", "grace 1h0m0s", "kept: ", "total"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = runCmd(t, "gc", "--bucket", url, "--all-agents", "--json", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var rep struct {
		Shard        string `json:"shard"`
		DryRun       bool   `json:"dry_run"`
		HeadSequence uint64 `json:"head_sequence"`
		Scanned      struct{ Objects int64 }
		Reachable    struct{ Objects int64 } `json:"kept_reachable"`
		Deleted      struct{ Objects int64 }
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one JSON line, got:\n%s", out)
	}
	if err := json.Unmarshal([]byte(lines[0]), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.DryRun || rep.HeadSequence != 5 || rep.Scanned.Objects == 0 || rep.Reachable.Objects != rep.Scanned.Objects || rep.Deleted.Objects != 0 {
		t.Errorf("report %+v", rep)
	}
	if after := listKeys(t, url); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("a sweep of a young store changed it:\nbefore %v\nafter %v", before, after)
	}
}

func TestGCCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"gc", "extra"},
		{"gc", "--grace", "5m"},
		{"gc", "--grace", "0s"},
		{"gc", "--agent", ""},
		{"gc", "--agent", "a/b"},
		{"gc", "--agent", "x", "--all-agents"},
		{"gc", "--concurrency", "0"},
		{"gc", "--no-such-flag"},
	} {
		if code, out, errOut := runCmd(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s%s", args, code, exitUsage, out, errOut)
		}
	}
	if code, _, errOut := runCmd(t, "gc", "--bucket", "file:///no/such/dir/at/all"); code != exitStore {
		t.Errorf("missing bucket: exit %d\n%s", code, errOut)
	}
}
