package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/workbench"
)

func TestFsckCommand(t *testing.T) {
	dir := t.TempDir()
	url := "file://" + dir
	wb := func(stdin, tool string) {
		t.Helper()
		if code, out, errOut := runWith(t, stdin, "workbench", "--bucket", url, "--agent", "cli", tool); code != 0 {
			t.Fatalf("%s: exit %d: %s%s", tool, code, out, errOut)
		}
	}
	big := strings.Repeat("0123456789abcdef", 512) // 8 KiB: kept in blocks, not inline
	wb(`{"id":"wb1","section":"outputs","path":"a/big.txt","text":"`+big+`"}`, "workbench_put_file")
	wb(`{"id":"wb1","section":"outputs","path":"small.txt","text":"small"}`, "workbench_put_file")
	wb(`{"id":"wb1","manifest":{"run":1},"content_digest_uri":"sha256:`+strings.Repeat("ab", 32)+`"}`, "workbench_commit")
	wb(`{"id":"wb1","name":"first"}`, "workbench_snapshot")

	code, out, errOut := runWith(t, "", "fsck", "--bucket", url, "--agent", "cli", "--bodies")
	if code != exitOK || !strings.Contains(out, "result:    clean\n") || !strings.Contains(out, "roots:     2 checked: the head's, 0 pinned, and the roots their holds name\n") {
		t.Fatalf("clean store: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"records:   ", "artifact_revision 6", "objects:   ", "bodies:    3 read whole"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = runWith(t, "", "fsck", "--bucket", url, "--agent", "cli", "--json")
	var rep workbench.FsckReport
	if err := json.Unmarshal([]byte(out), &rep); code != exitOK || err != nil || !rep.Clean() || rep.Roots != 2 || rep.Blocks == 0 {
		t.Fatalf("--json: exit %d, %v: %s", code, err, out)
	}
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, `"findings":[]`) {
		t.Fatalf("--json is not one line with an empty findings list: %s", out)
	}

	// Another agent has no store here: nothing to check.
	code, out, _ = runWith(t, "", "fsck", "--bucket", url, "--agent", "nobody")
	if code != exitOK || !strings.Contains(out, "nothing to check") {
		t.Fatalf("agent without a store: exit %d\n%s", code, out)
	}

	// A block gone from the bucket is a finding: exit 1, the key named.
	ctx := context.Background()
	b, _, _, err := openBucket(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	page, err := b.List(ctx, bucket.ListOptions{Prefix: "artifacts/"})
	if err != nil || len(page.Objects) == 0 {
		t.Fatalf("no block object: %v", err)
	}
	key := page.Objects[0].Key
	if err := b.Delete(ctx, key, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	b.Close()
	code, out, _ = runWith(t, "", "fsck", "--bucket", url, "--agent", "cli")
	if code != exitFailed || !strings.Contains(out, "block artifact_manifest block "+key+": expected the block") || !strings.Contains(out, "result:    1 findings\n") {
		t.Fatalf("missing block: exit %d\n%s", code, out)
	}
	code, out, _ = runWith(t, "", "fsck", "--bucket", url, "--agent", "cli", "--json")
	if err := json.Unmarshal([]byte(out), &rep); code != exitFailed || err != nil || len(rep.Findings) != 1 || rep.Findings[0].Record != "block "+key {
		t.Fatalf("missing block --json: exit %d, %v: %s", code, err, out)
	}
}

func TestFsckCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"fsck", "extra"},
		{"fsck", "--agent", ""},
		{"fsck", "--agent", "a/b"},
		{"fsck", "--max-findings", "0"},
		{"fsck", "--bucket", "nope://x"},
	} {
		if code, out, errOut := runWith(t, "", args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d\n%s%s", args, code, exitUsage, out, errOut)
		}
	}
	missing := "file://" + filepath.Join(t.TempDir(), "absent")
	if code, _, errOut := runWith(t, "", "fsck", "--bucket", missing); code != exitStore {
		t.Errorf("a bucket that does not exist: exit %d, want %d: %s", code, exitStore, errOut)
	}
}
