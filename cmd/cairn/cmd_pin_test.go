package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

func TestPinCommand(t *testing.T) {
	ctx := context.Background()
	stamp := time.Now().UnixNano()
	src := fmt.Sprintf("mem://pin-src-%d", stamp)
	dst := fmt.Sprintf("mem://pin-dst-%d", stamp)
	wb := func(url, tool, input string) map[string]any {
		t.Helper()
		code, out, errOut := runWith(t, input, "workbench", "--bucket", url, "--agent", "pa", tool)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s %s", tool, code, out, errOut)
		}
		return decodeLine(t, out)
	}
	pin := func(args ...string) (int, string, string) {
		t.Helper()
		return runWith(t, "", append([]string{"pin"}, args...)...)
	}
	big := strings.Repeat("a line of the report\n", 400) // over the inline limit: a block
	wb(src, "workbench_create", `{"id":"w"}`)
	wb(src, "workbench_put_file", fmt.Sprintf(`{"id":"w","section":"outputs","path":"report.txt","text":%q}`, big))
	wb(src, "workbench_put_file", `{"id":"w","section":"outputs","path":"small.txt","text":"v1\n"}`)

	code, out, errOut := pin("create", "--bucket", src, "--agent", "pa", "--note", "before v2", "--name", "p1")
	if code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	created := decodeLine(t, out)
	if created["name"] != "p1" || created["note"] != "before v2" || created["sequence"] == json.Number("0") {
		t.Fatalf("create printed %v", created)
	}
	if code, _, _ := pin("create", "--bucket", src, "--agent", "pa", "--name", "p1"); code != exitFailed {
		t.Fatalf("second create of p1: exit %d, want 1", code)
	}
	if code, out, _ = pin("list", "--bucket", src, "--agent", "pa"); code != 0 || !strings.HasPrefix(out, "p1  sequence ") || strings.Count(out, "\n") != 1 {
		t.Fatalf("list: exit %d %q", code, out)
	}
	if code, out, _ = pin("list", "--json", "--bucket", src, "--agent", "pa"); code != 0 || decodeLine(t, out)["root"] != created["root"] {
		t.Fatalf("list --json: exit %d %q", code, out)
	}
	if code, out, _ = pin("show", "p1", "--bucket", src, "--agent", "pa"); code != 0 || strings.TrimSpace(out) != strings.TrimSpace(createdLine(t, created)) {
		t.Fatalf("show: exit %d %q", code, out)
	}
	if code, out, errOut = pin("verify", "--bucket", src, "--agent", "pa", "p1"); code != 0 || !strings.Contains(out, ": ok") {
		t.Fatalf("verify: exit %d %q %s", code, out, errOut)
	}

	// Copy, then serve from the copy after the source moved on.
	if code, out, errOut = pin("copy", "p1", "--bucket", src, "--agent", "pa", "--to", dst, "--quiet"); code != 0 || !strings.Contains(out, "written to "+dst) {
		t.Fatalf("copy: exit %d %q %s", code, out, errOut)
	}
	if code, out, _ = pin("copy", "p1", "--bucket", src, "--agent", "pa", "--to", dst, "--quiet"); code != 0 || !strings.Contains(out, "0 copied") {
		t.Fatalf("copy again: exit %d %q", code, out)
	}
	wb(src, "workbench_put_file", `{"id":"w","section":"outputs","path":"small.txt","text":"v2\n","replace":true}`)
	read := `{"id":"w","section":"outputs","path":"small.txt"}`
	if got := fmt.Sprint(wb(dst, "workbench_read", read)); !strings.Contains(got, "v1") {
		t.Fatalf("copy reads %s, want v1", got)
	}

	// Restore makes v1 current again, one commit later.
	code, out, errOut = pin("restore", "p1", "--bucket", src, "--agent", "pa")
	if code != 0 {
		t.Fatalf("restore: exit %d %s", code, errOut)
	}
	restored := decodeLine(t, out)
	if restored["committed"] != true || restored["sequence"] == restored["pinned_sequence"] || restored["previous"] == restored["sequence"] {
		t.Fatalf("restore printed %v", restored)
	}
	// Restoring it again changes nothing: it is the current state.
	code, out, _ = pin("restore", "p1", "--bucket", src, "--agent", "pa")
	if again := decodeLine(t, out); code != 0 || again["committed"] != false || again["sequence"] != restored["sequence"] {
		t.Fatalf("second restore: exit %d %v", code, again)
	}
	if got := fmt.Sprint(wb(src, "workbench_read", read)); !strings.Contains(got, "v1") {
		t.Fatalf("source reads %s after restore, want v1", got)
	}

	// A missing block: verify reports it and exits 1.
	b, err := bucket.Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	blocks, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: "artifacts/"})
	if err != nil || len(blocks) == 0 {
		t.Fatalf("blocks: %d %v", len(blocks), err)
	}
	if err := b.Delete(ctx, blocks[0].Key, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	code, out, _ = pin("verify", "--all", "--bucket", src, "--agent", "pa")
	if code != exitFailed || !strings.Contains(out, "p1: missing block "+blocks[0].Key) || !strings.Contains(out, "1 problems") {
		t.Fatalf("verify after a delete: exit %d %q", code, out)
	}

	// A restore from a pin whose state has a hole restores nothing.
	code, out, errOut = pin("restore", "p1", "--bucket", src, "--agent", "pa")
	if code != exitFailed || !strings.Contains(out, "missing block") || !strings.Contains(errOut, "nothing restored") {
		t.Fatalf("restore of a damaged pin: exit %d %q %s", code, out, errOut)
	}

	if code, out, _ = pin("delete", "p1", "--bucket", src, "--agent", "pa"); code != 0 || out != "deleted pin p1\n" {
		t.Fatalf("delete: exit %d %q", code, out)
	}
	if code, _, _ = pin("show", "p1", "--bucket", src, "--agent", "pa"); code != exitFailed {
		t.Fatalf("show after delete: exit %d", code)
	}
	if code, out, _ = pin("verify", "--all", "--bucket", src, "--agent", "pa"); code != 0 || out != "no pins\n" {
		t.Fatalf("verify --all without pins: exit %d %q", code, out)
	}
}

// createdLine is the line show prints for the pin create printed.
func createdLine(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPinCommandUsage(t *testing.T) {
	url := fmt.Sprintf("mem://pin-usage-%d", time.Now().UnixNano())
	for _, args := range [][]string{
		{"pin"},
		{"pin", "bogus"},
		{"pin", "show", "--bucket", url},
		{"pin", "show", "a", "b", "--bucket", url},
		{"pin", "show", "../x", "--bucket", url},
		{"pin", "create", "extra", "--bucket", url},
		{"pin", "create", "--name", "", "--bucket", url},
		{"pin", "copy", "p1", "--bucket", url},
		{"pin", "copy", "p1", "--to", "mem://x", "--parallel", "0", "--bucket", url},
		{"pin", "list", "--bucket", url, "--agent", ""},
		{"pin", "list", "--bucket", url, "--agent", "a/b"},
		{"pin", "verify", "--bucket", url},
	} {
		if code, _, _ := runWith(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code, _, errOut := runWith(t, "", "pin", "show", "nope", "--bucket", url); code != exitFailed || !strings.Contains(errOut, "pin not found") {
		t.Errorf("show of a missing pin: exit %d %s", code, errOut)
	}
}

// A copy onto a bucket that holds another state is refused before it
// writes anything: every key there keeps its bytes, and the source's pin
// is not planted, so a restore of it there finds no pin.
func TestPinCopyRefusedLeavesTheDestination(t *testing.T) {
	ctx := context.Background()
	stamp := time.Now().UnixNano()
	src := fmt.Sprintf("mem://pin-refused-src-%d", stamp)
	dst := fmt.Sprintf("mem://pin-refused-dst-%d", stamp)
	wb := func(url, tool, input string) {
		t.Helper()
		if code, out, errOut := runWith(t, input, "workbench", "--bucket", url, "--agent", "pa", tool); code != 0 {
			t.Fatalf("%s: exit %d: %s %s", tool, code, out, errOut)
		}
	}
	wb(src, "workbench_create", `{"id":"w"}`)
	wb(src, "workbench_put_file", fmt.Sprintf(`{"id":"w","section":"outputs","path":"report.txt","text":%q}`, strings.Repeat("the source's report\n", 400)))
	if code, _, errOut := runWith(t, "", "pin", "create", "--bucket", src, "--agent", "pa", "--name", "p1"); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	wb(dst, "workbench_create", `{"id":"w"}`)
	wb(dst, "workbench_put_file", `{"id":"w","section":"outputs","path":"mine.txt","text":"the destination's own\n"}`)

	b, err := bucket.Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() map[string]string {
		objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, o := range objs {
			body, _, err := b.Get(ctx, o.Key)
			if err != nil {
				t.Fatal(err)
			}
			out[o.Key] = string(body)
		}
		return out
	}
	before := snapshot()
	code, _, errOut := runWith(t, "", "pin", "copy", "p1", "--bucket", src, "--agent", "pa", "--to", dst, "--quiet")
	if code != exitFailed || !strings.Contains(errOut, "holds another state; copy refused") {
		t.Fatalf("copy onto another state: exit %d %s", code, errOut)
	}
	after := snapshot()
	if len(after) != len(before) {
		t.Errorf("%d keys before the refused copy, %d after", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed by the refused copy", k)
		}
	}
	t.Logf("%d keys at the destination, byte-identical after the refused copy", len(after))
	if code, _, errOut := runWith(t, "", "pin", "restore", "p1", "--bucket", dst, "--agent", "pa"); code != exitFailed || !strings.Contains(errOut, "not found") {
		t.Fatalf("restore at the destination of the refused pin: exit %d %s", code, errOut)
	}
}
