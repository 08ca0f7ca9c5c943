package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// gcBucket puts n files through `cairn workbench` into a fresh mem bucket
// and returns its URL.
func gcBucket(t *testing.T, name string, n int) string {
	t.Helper()
	url := fmt.Sprintf("mem://%s-%d", name, time.Now().UnixNano()) // fresh on every run
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
// in the table and in JSON; --all-agents finds the agent's shard. A
// dry run changes nothing; a sweep adds only the root of its touch of
// the head.
func TestGCCommand(t *testing.T) {
	url := gcBucket(t, "gc-cmd", 4)
	before := listKeys(t, url)

	code, out, errOut := runCmd(t, "gc", "--bucket", url, "--agent", "gc", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if after := listKeys(t, url); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("a dry run changed the store:\nbefore %v\nafter %v", before, after)
	}
	code, out, errOut = runCmd(t, "gc", "--bucket", url, "--agent", "gc")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"agent gc (shard ", "head sequence 6", "written by this run, less the grace 1h0m0s", "kept: ", "total"} {
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
	if !rep.DryRun || rep.HeadSequence != 6 || rep.Scanned.Objects == 0 || rep.Reachable.Objects != rep.Scanned.Objects || rep.Deleted.Objects != 0 {
		t.Errorf("report %+v", rep)
	}
	after := listKeys(t, url)
	if len(after) != len(before)+1 {
		t.Errorf("a sweep of a young store deleted or wrote more than its touch's root:\nbefore %v\nafter %v", before, after)
	}
	for _, k := range before {
		if !slices.Contains(after, k) {
			t.Errorf("a sweep of a young store deleted %s", k)
		}
	}
}

func TestGCCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"gc", "extra"},
		{"gc", "--grace", "1s"},
		{"gc", "--grace", "0s"},
		{"gc", "--grace", "-1h"},
		{"gc", "--grace", "9000h"},
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

// TestGCCommandAllAgentsSkipsOtherSchemas: --all-agents sweeps the
// Workbench's shards and skips, with a note, a shard of another schema,
// whose families it would misread.
func TestGCCommandAllAgentsSkipsOtherSchemas(t *testing.T) {
	url := gcBucket(t, "gc-all", 2)
	ctx := context.Background()
	b, err := bucket.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	other, err := head.Open(ctx, b, shards.NewShardID(), head.Schema{
		Marker:   head.Marker{SchemaID: "another_product", FormatVersion: 1, ValueFormatVersion: 1},
		Families: shardstest.Schema(),
	}, head.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Put(shardstest.Fixed16, make([]byte, 16), []byte("v"))
	}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "gc", "--bucket", url, "--all-agents", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if n := strings.Count(out, "\n"); n != 1 {
		t.Errorf("%d reports, want the Workbench shard's only:\n%s", n, out)
	}
	if want := "shard " + other.ID().String() + ": not a Workbench shard, skipped"; !strings.Contains(errOut, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
}

// TestGCCommandRevisions: the collection that follows a sweep of one
// agent collects nothing a reader within the grace may still read, and
// says so; --revisions needs --agent, and --revisions=false skips it.
func TestGCCommandRevisions(t *testing.T) {
	url := fmt.Sprintf("mem://gc-revisions-%d", time.Now().UnixNano())
	big := strings.Repeat("x", 6000)
	for i, replace := range []bool{false, true} {
		in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":"big.txt","text":"%s%d","replace":%t}`, big, i, replace)
		var out, errOut bytes.Buffer
		if code := run(context.Background(), &env{stdin: strings.NewReader(in), stdout: &out, stderr: &errOut},
			[]string{"workbench", "--bucket", url, "--agent", "gc", "workbench_put_file"}); code != 0 {
			t.Fatalf("put: exit %d\n%s%s", code, out.String(), errOut.String())
		}
	}
	code, out, errOut := runCmd(t, "gc", "--bucket", url, "--agent", "gc")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if want := "revisions: 1 candidates, collected 0 (0 blocks, 0 B) in 0 engine commands"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if want := "1 waiting for a root that may read them"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if code, _, _ := runCmd(t, "gc", "--bucket", url, "--all-agents", "--revisions"); code != exitUsage {
		t.Errorf("--all-agents --revisions: exit %d", code)
	}
	code, out, errOut = runCmd(t, "gc", "--bucket", url, "--agent", "gc", "--revisions=false")
	if code != 0 || strings.Contains(out, "revisions:") {
		t.Errorf("--revisions=false: exit %d\n%s%s", code, out, errOut)
	}
}
