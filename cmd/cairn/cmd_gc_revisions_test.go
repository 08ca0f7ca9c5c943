package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

// An operator's view of collecting replaced revisions: every step is a
// cairn command, on a bucket whose clock the test moves past the grace
// period before each `cairn gc`.

// opStore is one agent's store in a clockmem bucket.
type opStore struct {
	t     *testing.T
	url   string
	clock *storeClock
}

func newOpStore(t *testing.T, name string) *opStore {
	url, clock := newClockMem(t, name)
	return &opStore{t: t, url: url, clock: clock}
}

// cmd runs a cairn command on the store's agent and fails the test
// unless it exits 0.
func (s *opStore) cmd(args ...string) string {
	s.t.Helper()
	return s.cmdOn(s.url, args...)
}

func (s *opStore) cmdOn(url string, args ...string) string {
	s.t.Helper()
	verbs := 1
	if args[0] == "pin" {
		verbs = 2
	}
	args = append(args[:verbs:verbs], append([]string{"--bucket", url, "--agent", "ops"}, args[verbs:]...)...)
	code, out, errOut := runCmd(s.t, args...)
	if code != exitOK {
		s.t.Fatalf("cairn %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// call runs one Workbench tool and returns its result.
func (s *opStore) call(url, tool, in string) map[string]any {
	s.t.Helper()
	code, out, errOut := runWith(s.t, in, "workbench", "--bucket", url, "--agent", "ops", tool)
	if code != exitOK {
		s.t.Fatalf("%s %.200s: exit %d\n%s%s", tool, in, code, out, errOut)
	}
	return decodeLine(s.t, out)
}

// put writes path (replace: over an existing file).
func (s *opStore) put(path, text string, replace bool) {
	s.t.Helper()
	s.call(s.url, "workbench_put_file", fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"text":%q,"replace":%t}`, path, text, replace))
}

// read returns a file's body at url, at a snapshot if at is not "".
func (s *opStore) read(url, path, at string) string {
	s.t.Helper()
	var body []byte
	cursor := ""
	for {
		in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"format":"bytes","limit":300`, path)
		if at != "" {
			in += fmt.Sprintf(`,"at_snapshot":%q`, at)
		}
		if cursor != "" {
			in += fmt.Sprintf(`,"cursor":%q`, cursor)
		}
		r := s.call(url, "workbench_read", in+"}")
		b, err := base64.StdEncoding.DecodeString(r["bytes"].(string))
		if err != nil {
			s.t.Fatal(err)
		}
		body = append(body, b...)
		if cursor, _ = r["next_cursor"].(string); cursor == "" {
			return string(body)
		}
	}
}

// gc moves the store's clock two hours on (past the default grace of an
// hour) and runs `cairn gc`, which sweeps and then collects revisions.
func (s *opStore) gc() string {
	s.t.Helper()
	s.clock.Advance(2 * time.Hour)
	return s.cmd("gc")
}

// blocks counts the block objects in the bucket at url.
func (s *opStore) blocks(url string) int {
	s.t.Helper()
	b, err := bucket.Open(context.Background(), url)
	if err != nil {
		s.t.Fatal(err)
	}
	defer b.Close()
	objs, _, err := bucket.ListAll(context.Background(), b, bucket.ListOptions{Prefix: "artifacts/"})
	if err != nil {
		s.t.Fatal(err)
	}
	return len(objs)
}

// fsckClean runs `cairn fsck --bodies` at url and fails unless it is
// clean.
func (s *opStore) fsckClean(url string) {
	s.t.Helper()
	if out := s.cmdOn(url, "fsck", "--bodies"); !strings.Contains(out, "result:    clean\n") {
		s.t.Fatalf("fsck of %s:\n%s", url, out)
	}
}

func wantLine(t *testing.T, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Fatalf("output lacks %q:\n%s", want, out)
	}
}

// body returns a text of n bytes, kept in blocks by cairn workbench.
func body(tag string, n int) string {
	return strings.Repeat(tag, n/len(tag))
}

// startOps makes a store with a committed workbench (a snapshot needs
// one) and a.txt, not in the commit, at a1.
func startOps(t *testing.T, name string) (*opStore, string) {
	s := newOpStore(t, name)
	s.put("kept.txt", body("k", 6000), false)
	s.call(s.url, "workbench_commit", `{"id":"wb","manifest":{"run":1},"content_digest_uri":"sha256:`+strings.Repeat("ab", 32)+`"}`)
	a1 := body("a1", 6000)
	s.put("a.txt", a1, false)
	return s, a1
}

// TestGCRevisionsAfterPinAndSnapshot: a.txt is replaced, then pinned and
// snapshotted, then collected: the pinned and the snapshot's states do
// not reference the replaced revision (they hold its rows only), so its
// blocks go, and the pin still verifies, copies (the copy serves it),
// restores, and the snapshot still reads; fsck is clean everywhere.
func TestGCRevisionsAfterPinAndSnapshot(t *testing.T) {
	s, _ := startOps(t, "gc-after")
	a2 := body("a2", 7000)
	s.put("a.txt", a2, true)
	var pin struct{ Name string }
	if err := json.Unmarshal([]byte(s.cmd("pin", "create", "--name", "after")), &pin); err != nil || pin.Name != "after" {
		t.Fatalf("pin create: %v %+v", err, pin)
	}
	s.call(s.url, "workbench_snapshot", `{"id":"wb","name":"snap"}`)
	before := s.blocks(s.url)

	out := s.gc()
	wantLine(t, out, "revisions: 1 candidates, collected 1 (1 blocks, ")
	if got := s.blocks(s.url); got != before-1 {
		t.Fatalf("%d blocks after gc, want %d", got, before-1)
	}
	wantLine(t, s.cmd("pin", "verify", "after"), ": ok\n")
	dst, _ := newClockMem(t, "gc-after-copy")
	wantLine(t, s.cmd("pin", "copy", "after", "--to", dst), "pin after and a head at sequence ")
	if got := s.read(dst, "a.txt", ""); got != a2 {
		t.Fatalf("the copy serves a.txt of %d bytes, want a2", len(got))
	}
	s.fsckClean(dst)
	if got := s.read(s.url, "a.txt", "snap"); got != a2 {
		t.Fatalf("a.txt at the snapshot: %d bytes, want a2", len(got))
	}
	s.put("a.txt", "later", true)
	wantLine(t, s.cmd("pin", "restore", "after"), `"committed":true`)
	if got := s.read(s.url, "a.txt", ""); got != a2 {
		t.Fatalf("a.txt after the restore: %d bytes, want a2", len(got))
	}
	s.fsckClean(s.url)
	// The restore brought back the pinned state's records, in which a1
	// is a candidate not yet collected (its block is gone): a second gc
	// collects it again, and the pin stays whole.
	wantLine(t, s.gc(), "revisions: 1 candidates, collected 1 (1 blocks")
	wantLine(t, s.cmd("pin", "verify", "--all"), "pin after: sequence ")
	s.fsckClean(s.url)
}

// TestGCRevisionsBeforePinAndSnapshot: a.txt is pinned and snapshotted,
// then replaced: the pinned and the held roots reference a1, so gc keeps
// its blocks, and the pin verifies, copies (the copy serves a1) and
// restores a1, and the snapshot reads a1.
func TestGCRevisionsBeforePinAndSnapshot(t *testing.T) {
	s, a1 := startOps(t, "gc-before")
	s.cmd("pin", "create", "--name", "before")
	s.call(s.url, "workbench_snapshot", `{"id":"wb","name":"snap"}`)
	a2 := body("a2", 7000)
	s.put("a.txt", a2, true)
	before := s.blocks(s.url)

	out := s.gc()
	wantLine(t, out, "revisions: 1 candidates, collected 0 (0 blocks, 0 B) in 0 engine commands")
	wantLine(t, out, "1 waiting for a root that may read them")
	if got := s.blocks(s.url); got != before {
		t.Fatalf("%d blocks after gc, want %d", got, before)
	}
	s.fsckClean(s.url)
	wantLine(t, s.cmd("pin", "verify", "before"), ": ok\n")
	if got := s.read(s.url, "a.txt", "snap"); got != a1 {
		t.Fatalf("a.txt at the snapshot: %d bytes, want a1", len(got))
	}
	dst, _ := newClockMem(t, "gc-before-copy")
	s.cmd("pin", "copy", "before", "--to", dst)
	if got := s.read(dst, "a.txt", ""); got != a1 {
		t.Fatalf("the copy serves a.txt of %d bytes, want a1", len(got))
	}
	s.fsckClean(dst)
	wantLine(t, s.cmd("pin", "restore", "before"), `"committed":true`)
	if got := s.read(s.url, "a.txt", ""); got != a1 {
		t.Fatalf("a.txt after the restore: %d bytes, want a1", len(got))
	}
	s.fsckClean(s.url)
}

// TestGCRevisionsAfterRetire: a snapshot keeps a1 until it is retired;
// the next gc collects it.
func TestGCRevisionsAfterRetire(t *testing.T) {
	s, _ := startOps(t, "gc-retire")
	r := s.call(s.url, "workbench_snapshot", `{"id":"wb","name":"snap"}`)
	s.put("a.txt", body("a2", 7000), true)
	wantLine(t, s.gc(), "1 waiting for a root that may read them")
	before := s.blocks(s.url)
	s.call(s.url, "workbench_snapshot_retire", fmt.Sprintf(`{"id":"wb","snapshot_id":%s,"reason":"done"}`, r["snapshot_id"].(json.Number)))
	wantLine(t, s.gc(), "revisions: 1 candidates, collected 1 (1 blocks, ")
	if got := s.blocks(s.url); got != before-1 {
		t.Fatalf("%d blocks after gc, want %d", got, before-1)
	}
	s.fsckClean(s.url)
}
