package workbench_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/cairnstore/cairn/bucket"
	_ "github.com/cairnstore/cairn/bucket/file" // the file:// scheme
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

var updateGoldenStore = flag.Bool("update-golden-store", false, "write testdata/stores/"+goldenStoreName+" afresh")

// goldenStoreName names the store of today's formats, which
// -update-golden-store writes: the Workbench's schema marker (format 1,
// value format 7) over the engine's object formats of docs/engine.md,
// section 2. A format change adds a store under a new name and keeps the
// others (goldenStores).
const goldenStoreName = "wb-format-1-value-7"

// goldenStores are every store TestGoldenStore opens: one for each
// format a cairn wrote. Value format 2 keeps a commit's members in rows,
// 3 in a member tree under flat digests, 4 under its tree's digests, 5
// with its shard objects, delta segments and tree nodes compressed, 6
// with heads that say whether their writer carries others' intents, 7
// with its restore copied in each family's key order.
var goldenStores = []string{"wb-format-1-value-2", "wb-format-1-value-3", "wb-format-1-value-4", "wb-format-1-value-5",
	"wb-format-1-value-6", goldenStoreName}

// goldenValueFormat returns the value format of golden store name.
func goldenValueFormat(t *testing.T, name string) int {
	_, v, ok := strings.Cut(name, "-value-")
	n, err := strconv.Atoi(v)
	if !ok || err != nil {
		t.Fatalf("golden store %q names no value format", name)
	}
	return n
}

// goldenClock is the engine's clock of the golden store's writes and
// reads: snapshot leases are judged against it, so the transcript does not
// age.
func goldenClock() func() time.Time {
	t := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

// goldenCall is one read of the golden store and the answer it gave when
// the store was written.
type goldenCall struct {
	Tool   string `json:"tool"`
	Input  string `json:"input"`
	Output string `json:"output"`
}

// goldenReads are the reads TestGoldenStore replays: every read tool over
// what the script wrote, live and at its snapshot.
var goldenReads = []struct{ tool, input string }{
	{"workbench_list", `{"id":"wb-a","section":"outputs"}`},
	{"workbench_list", `{"id":"wb-a","section":"input","path":"data"}`},
	{"workbench_stat", `{"id":"wb-a","section":"outputs","path":"report.txt"}`},
	{"workbench_stat", `{"id":"wb-a"}`},
	{"workbench_read", `{"id":"wb-a","section":"outputs","path":"report.txt"}`},
	{"workbench_read", `{"id":"wb-a","section":"input","path":"data/big.txt"}`},
	{"workbench_read", `{"id":"wb-a","section":"input","path":"data/rows.jsonl"}`},
	{"workbench_read", `{"id":"wb-a","section":"outputs","path":"report.txt","at_snapshot":"nightly"}`},
	{"workbench_grep", `{"id":"wb-a","pattern":"cairn|replaced","recursive":true}`},
	{"workbench_search", `{"id":"wb-a"}`},
	{"workbench_aggregate", `{"id":"wb-a","group_by":["content_type"],"measures":[{"name":"n","op":"count"}]}`},
	{"workbench_catalog", `{"id":"wb-a"}`},
	{"workbench_find", `{}`},
	{"workbench_snapshot_list", `{"id":"wb-a"}`},
	{"workbench_list", `{"id":"wb-a","section":"outputs","at_snapshot":"nightly"}`},
	{"workbench_read", `{"id":"wb-c","section":"outputs","path":"report.txt"}`},
}

// TestGoldenStore opens testdata/stores/<goldenStoreName>, a local-file
// bucket that a fixed script wrote (every tool that writes, a commit, a
// named snapshot, a restore, a pin), as the code of today must open every
// store an earlier format wrote: it replays the reads recorded when the
// store was written and wants the same answers byte for byte, finds the
// store clean with fsck (bodies included) and the pin whole, and then
// writes to a copy of it. docs/engine.md, "Changing a format", says why
// the store stays after a format change.
func TestGoldenStore(t *testing.T) {
	if *updateGoldenStore {
		src, err := filepath.Abs(filepath.Join("testdata", "stores", goldenStoreName))
		if err != nil {
			t.Fatal(err)
		}
		writeGoldenStore(t, src)
	}
	for _, name := range goldenStores {
		t.Run(name, func(t *testing.T) {
			if v := workbench.TestValueFormat(); v != 0 && goldenValueFormat(t, name) > v {
				refusesNewerStore(t, name)
				return
			}
			testGoldenStore(t, name)
		})
	}
}

// refusesNewerStore: a cairn of an older value format (as the tests run
// with CAIRN_TEST_VALUE_FORMAT=2 or 3 stand for) refuses a newer store
// with a clear error, rather than misread it.
func refusesNewerStore(t *testing.T, name string) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "stores", name, "bucket"))); err != nil {
		t.Fatal(err)
	}
	b, err := bucket.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := workbench.Open(ctx, b, workbench.Options{AgentID: "golden"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, _ := s.Call(ctx, "workbench_stat", []byte(`{"id":"wb-a"}`))
	if !strings.Contains(string(out), `"code":"InvalidState"`) || !strings.Contains(string(out), "another format") {
		t.Fatalf("a store of a newer value format: %s", out)
	}
}

func testGoldenStore(t *testing.T, name string) {
	ctx := context.Background()
	src, err := filepath.Abs(filepath.Join("testdata", "stores", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(src, "bucket"))); err != nil {
		t.Fatal(err)
	}
	b, err := bucket.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	opts := workbench.Options{AgentID: "golden"}
	opts.Engine.Now = goldenClock()
	opts.Now = goldenClock() // snapshot leases are judged by it
	s, err := workbench.Open(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	raw, err := os.ReadFile(filepath.Join(src, "reads.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want []goldenCall
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(goldenReads) {
		t.Fatalf("%d recorded reads, %d to replay: rewrite the store with -update-golden-store", len(want), len(goldenReads))
	}
	for i, c := range want {
		out, _ := s.Call(ctx, c.Tool, []byte(c.Input))
		if string(out) != c.Output {
			t.Errorf("%s %s:\n got %s\nwant %s", c.Tool, c.Input, out, c.Output)
		}
		if c.Tool != goldenReads[i].tool || c.Input != goldenReads[i].input {
			t.Errorf("read %d is %s %s, recorded %s %s", i, goldenReads[i].tool, goldenReads[i].input, c.Tool, c.Input)
		}
	}

	rep, err := s.Fsck(ctx, workbench.FsckOptions{Bodies: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("fsck: %s", f)
	}
	pins, err := gcsweep.ListPins(ctx, b, s.Store().Layout())
	if err != nil || len(pins) != 1 {
		t.Fatalf("pins %v, %v", pins, err)
	}
	refs, err := workbench.PinBlockRefs(ctx, s.Store(), pins[0].RootHash)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := gcsweep.VerifyPin(ctx, b, s.Store().Layout(), pins[0], refs, gcsweep.VerifyOptions{}); err != nil || len(v.Problems) != 0 || v.Objects == 0 {
		t.Errorf("pin %s: %d objects, problems %v, %v", pins[0].Name, v.Objects, v.Problems, err)
	}

	// The copy takes new writes over the old ones.
	mustCall(t, s, "workbench_put_file", putInput("wb-a", "outputs", "report.txt", `"text":"after the upgrade\n"`, `"replace":true`))
	mustCall(t, s, "workbench_append", putInput("wb-a", "logs", "run.log", `"text":"resumed\n"`))
	if got := readText(t, s, "wb-a", "outputs/report.txt"); got != "after the upgrade\n" {
		t.Fatalf("report.txt after a write: %q", got)
	}
	if got := readText(t, s, "wb-a", "logs/run.log"); got != "start\nresumed\n" {
		t.Fatalf("run.log after an append: %q", got)
	}
	// A commit on the copy keeps the store's own format: rows in a store
	// of value format 2, a member tree in one of 3, and its tree's digests
	// in one of 4, where it reads only what changed since its parent.
	mustCall(t, s, "workbench_commit", commitInput("wb-a", `{"task":"after the upgrade"}`, digestAA, true))
	var newest nokv.Commit
	for _, c := range workbench.CommitsForTest(t, s) {
		if c.CreatedVersion > newest.CreatedVersion {
			newest = c
		}
	}
	v := goldenValueFormat(t, name)
	if (newest.MemberTree != nil) != (v >= 3) || newest.TreeDigests != (v >= 4) {
		t.Fatalf("the commit on the copy of %s has a member tree: %v, tree digests: %v", name, newest.MemberTree != nil, newest.TreeDigests)
	}
	workbench.CheckCommitClosureForTest(t, s)
	workbench.FsckCleanForTest(t, s)
}

// writeGoldenStore runs the script into a fresh local-file bucket at
// dir/bucket and records goldenReads' answers in dir/reads.json.
func writeGoldenStore(t *testing.T, dir string) {
	t.Helper()
	cryptotest.SetGlobalRandom(t, 11)
	ctx := context.Background()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bucket"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := bucket.Open(ctx, "file://"+filepath.Join(dir, "bucket"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	opts := workbench.Options{AgentID: "golden", BlockSize: 64}
	opts.Engine.Now = goldenClock()
	opts.Now = goldenClock() // snapshot leases are judged by it
	s, err := workbench.Open(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, step := range []struct{ tool, input string }{
		{"workbench_create", `{"id":"wb-a"}`},
		{"workbench_put_file", `{"id":"wb-a","section":"outputs","path":"report.txt","text":"Hello world\nsecond\n"}`},
		{"workbench_put_file", `{"id":"wb-a","section":"input","path":"data/rows.jsonl","text":"{\"a\":1,\"b\":\"x\"}\n{\"a\":2,\"b\":\"y\"}\n"}`},
		{"workbench_put_file", `{"id":"wb-a","section":"input","path":"data/big.txt","text":"` + strings.Repeat("0123456789abcdef", 20) + `"}`},
		{"workbench_append", `{"id":"wb-a","section":"outputs","path":"report.txt","text":"third\n"}`},
		{"workbench_append", `{"id":"wb-a","section":"logs","path":"run.log","text":"start\n"}`},
		{"workbench_edit", `{"id":"wb-a","section":"outputs","path":"report.txt","old_string":"world","new_string":"cairn"}`},
		{"workbench_commit", commitInput("wb-a", `{"task":"golden"}`, digestAA)},
		{"workbench_snapshot", `{"id":"wb-a","name":"nightly"}`},
		{"workbench_put_file", `{"id":"wb-a","section":"outputs","path":"report.txt","text":"replaced\n","replace":true}`},
		{"workbench_restore", `{"id":"wb-a","destination_id":"wb-c","at_snapshot":"nightly"}`},
	} {
		if out, ok := s.Call(ctx, step.tool, []byte(step.input)); !ok {
			t.Fatalf("%s %s: %s", step.tool, step.input, out)
		}
	}
	// Folded, so that the store holds tables and base shards, not only
	// deltas (a store written before value format 6 has none).
	if err := s.Store().Fold(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := gcsweep.PinHead(ctx, s.Store(), "golden", "the golden store", time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	var calls []goldenCall
	for _, r := range goldenReads {
		out, ok := s.Call(ctx, r.tool, []byte(r.input))
		if !ok {
			t.Fatalf("%s %s: %s", r.tool, r.input, out)
		}
		calls = append(calls, goldenCall{r.tool, r.input, string(out)})
	}
	b2, err := json.MarshalIndent(calls, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reads.json"), append(b2, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
