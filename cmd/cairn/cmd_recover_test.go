package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
)

// recoverRig is an agent's store in a mem:// bucket, written through the
// CLI, and what each acknowledged write left.
type recoverRig struct {
	t      *testing.T
	url    string
	agent  string
	b      bucket.Bucket
	acked  map[string]string // path → body of the last acknowledged put
	seqOf  map[string]uint64 // path → the head sequence after that put
	marker head.Marker
}

func newRecoverRig(t *testing.T) *recoverRig {
	t.Helper()
	url := fmt.Sprintf("mem://recover-%d", time.Now().UnixNano())
	b, _, _, err := openBucket(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &recoverRig{t: t, url: url, agent: "rec", b: b, acked: map[string]string{}, seqOf: map[string]uint64{}, marker: *workbench.SweepOptions().Marker}
}

func (r *recoverRig) run(stdin string, args ...string) (int, string, string) {
	r.t.Helper()
	return runWith(r.t, stdin, append(args, "--bucket", r.url, "--agent", r.agent)...)
}

// put writes path through `cairn workbench` and records it if acknowledged.
func (r *recoverRig) put(path, body string) {
	r.t.Helper()
	in := fmt.Sprintf(`{"id":"w","section":"outputs","path":%q,"text":%q,"replace":%t}`, path, body, r.acked[path] != "")
	if code, out, errOut := r.run(in, "workbench", "workbench_put_file"); code != exitOK {
		r.t.Fatalf("put %s: exit %d: %s%s", path, code, out, errOut)
	}
	r.acked[path] = body
	r.seqOf[path] = r.head().Sequence
}

func (r *recoverRig) head() *head.Head {
	r.t.Helper()
	layout, _ := workbench.Layout(r.agent)
	h, _, err := head.ReadHead(context.Background(), r.b, layout, r.marker)
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

func (r *recoverRig) deleteHead() {
	r.t.Helper()
	layout, _ := workbench.Layout(r.agent)
	if err := r.b.Delete(context.Background(), layout.Head(), bucket.Unconditional); err != nil {
		r.t.Fatal(err)
	}
}

func (r *recoverRig) headMissing() bool {
	r.t.Helper()
	layout, _ := workbench.Layout(r.agent)
	_, err := r.b.Stat(context.Background(), layout.Head())
	return err != nil
}

// read reads path through `cairn workbench`, page by page: its bytes, or
// the error code.
func (r *recoverRig) read(path string) (string, string) {
	r.t.Helper()
	var body []byte
	cursor := ""
	for {
		in := fmt.Sprintf(`{"id":"w","section":"outputs","path":%q,"format":"bytes"%s}`, path, cursor)
		code, out, _ := r.run(in, "workbench", "workbench_read")
		m := decodeLine(r.t, out)
		if code != exitOK {
			return "", fmt.Sprint(m["code"])
		}
		b, err := base64.StdEncoding.DecodeString(fmt.Sprint(m["bytes"]))
		if err != nil {
			r.t.Fatalf("read %s: %v", path, err)
		}
		body = append(body, b...)
		next, more := m["next_cursor"].(string)
		if !more {
			return string(body), ""
		}
		cursor = fmt.Sprintf(`,"cursor":%q`, next)
	}
}

// recover runs `cairn recover --json` with args and decodes its report.
func (r *recoverRig) recover(args ...string) (int, recoverOutput, string) {
	r.t.Helper()
	code, out, errOut := r.run("", append([]string{"recover", "--json"}, args...)...)
	var rep recoverOutput
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		r.t.Fatalf("recover %q: exit %d, output not JSON: %v\n%s%s", args, code, err, out, errOut)
	}
	return code, rep, errOut
}

// checkReadsAt reads every acknowledged path back after a recovery to
// sequence seq: a path whose last put landed at or before seq reads its
// body; a later one does not.
func (r *recoverRig) checkReadsAt(seq uint64) (held, later int) {
	r.t.Helper()
	for _, p := range slices.Sorted(maps.Keys(r.acked)) {
		text, code := r.read(p)
		if r.seqOf[p] <= seq {
			held++
			if code != "" || text != r.acked[p] {
				r.t.Errorf("%s (acknowledged at sequence %d, root of sequence %d current): read %q, %s", p, r.seqOf[p], seq, text, code)
			}
			continue
		}
		later++
		if text == r.acked[p] {
			r.t.Errorf("%s (acknowledged at sequence %d) reads back after a recovery to sequence %d", p, r.seqOf[p], seq)
		}
	}
	return held, later
}

func TestRecoverCommand(t *testing.T) {
	r := newRecoverRig(t)
	big := strings.Repeat("a block of the body\n", 300) // 6 KB: blocks, not inline
	for i := range 4 {
		r.put(fmt.Sprintf("f%d.txt", i), fmt.Sprintf("body %d\n", i))
	}
	r.put("big.txt", big)
	if code, _, errOut := r.run("", "pin", "create", "--name", "p1"); code != exitOK {
		t.Fatalf("pin create: %d %s", code, errOut)
	}
	pinSeq := r.head().Sequence
	r.put("f0.txt", "body 0, second\n")
	r.put("f9.txt", "body 9\n")
	lost := r.head()
	t.Logf("acknowledged %d paths; the head at sequence %d names root %s", len(r.acked), lost.Sequence, lost.Root)

	// A present head: recover refuses and writes nothing.
	if code, rep, _ := r.recover(); code != exitFailed || !strings.Contains(rep.Refused, "the head exists") || rep.Written {
		t.Fatalf("recover with a head: exit %d, %+v", code, rep)
	}

	// The head is lost: every call fails closed, and gc refuses.
	r.deleteHead()
	if _, code := r.read("f1.txt"); code != workbench.CodeObjectUnavailable {
		t.Fatalf("read with a lost head: %q, want ObjectUnavailable", code)
	}
	if code, _, _ := r.run(`{"id":"w","section":"outputs","path":"new.txt","text":"x"}`, "workbench", "workbench_put_file"); code != exitFailed {
		t.Fatalf("put with a lost head: exit %d", code)
	}
	if code, _, _ := r.run("", "gc"); code != exitFailed {
		t.Fatalf("gc with a lost head: exit %d, want 1", code)
	}
	if !r.headMissing() {
		t.Fatal("a call wrote a head over the lost one")
	}

	// A bad --root is refused, malformed or absent, and writes nothing.
	if code, _, _ := r.run("", "recover", "--root", "xyz"); code != exitUsage {
		t.Fatalf("recover --root xyz: exit %d, want 2", code)
	}
	if code, _, _ := r.run("", "recover", "--root", strings.Repeat("ab", 32), "--pin", "p1"); code != exitUsage {
		t.Fatalf("recover --root and --pin: exit %d, want 2", code)
	}
	if code, rep, _ := r.recover("--root", strings.Repeat("ab", 32)); code != exitFailed || !strings.Contains(rep.Refused, "not in the bucket") || !r.headMissing() {
		t.Fatalf("recover --root of an absent root: exit %d, %+v", code, rep)
	}

	// --dry-run chooses and verifies, and writes nothing.
	code, dry, errOut := r.recover("--dry-run")
	if code != exitOK || !dry.DryRun || dry.Written || dry.Chosen == nil || !r.headMissing() {
		t.Fatalf("recover --dry-run: exit %d, %+v %s", code, dry, errOut)
	}

	// The default: the newest root proven committed. The lost head's own
	// root has no child yet, so it is listed as unproven, newest first.
	code, rep, errOut := r.recover()
	if code != exitOK || !rep.Written || rep.Chosen == nil || len(rep.Problems) != 0 || rep.Objects == 0 {
		t.Fatalf("recover: exit %d, %+v %s", code, rep, errOut)
	}
	if rep.Chosen.Sequence != lost.Sequence-1 || *rep.Chosen != *dry.Chosen {
		t.Fatalf("recover chose sequence %d (dry run %+v), want %d, the lost head's parent", rep.Chosen.Sequence, dry.Chosen, lost.Sequence-1)
	}
	if len(rep.Unproven) == 0 || rep.Unproven[0].Root != lost.Root || rep.Unproven[0].Sequence != lost.Sequence {
		t.Fatalf("unproven roots %+v do not list the lost head's root %s", rep.Unproven, lost.Root)
	}
	// The bucket holds the lost head's root, later than the chosen one:
	// the head names a root of the chosen state above it, whose parent is
	// the chosen root, so that no root reads as newer than the head.
	if h := r.head(); h.Sequence != rep.Sequence || h.Root != rep.Head || h.Sequence <= lost.Sequence || h.Root == rep.Chosen.Root || len(h.Recent) != 0 {
		t.Fatalf("head after recover: %+v (report: sequence %d, head %s)", h, rep.Sequence, rep.Head)
	}
	if code, _, errOut := r.run("", "fsck"); code != exitOK {
		t.Fatalf("fsck after recover: exit %d %s", code, errOut)
	}
	held, later := r.checkReadsAt(rep.Chosen.Sequence)
	t.Logf("recover: chose sequence %d (%s); %d acknowledged paths read back, %d acknowledged later than it", rep.Chosen.Sequence, rep.Why, held, later)
	if held == 0 || later != 1 {
		t.Fatalf("held %d, later %d; want every path but f9.txt held", held, later)
	}
	// The text form names the choice and the unproven roots.
	r.deleteHead()
	code, out, _ := r.run("", "recover", "--dry-run")
	for _, want := range []string{"chosen:    root " + rep.Chosen.Root, "unproven:  ", lost.Root, "result:    dry run"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("recover --dry-run (text): exit %d, no %q in\n%s", code, want, out)
		}
	}

	// --root: the operator knows the lost head's root was committed.
	code, rep, errOut = r.recover("--root", lost.Root)
	if code != exitOK || !rep.Written || rep.Chosen.Sequence != lost.Sequence {
		t.Fatalf("recover --root: exit %d, %+v %s", code, rep, errOut)
	}
	if held, later := r.checkReadsAt(lost.Sequence); later != 0 || held != len(r.acked) {
		t.Fatalf("after recover --root: held %d, later %d", held, later)
	}
	// The store goes on from there.
	r.put("f10.txt", "after the recovery\n")

	// --pin: the pin's root.
	r.deleteHead()
	code, rep, errOut = r.recover("--pin", "p1")
	if code != exitOK || !rep.Written || rep.Chosen.Sequence != pinSeq {
		t.Fatalf("recover --pin: exit %d, %+v %s", code, rep, errOut)
	}
	r.checkReadsAt(pinSeq)
	if code, _, errOut := r.run("", "fsck"); code != exitOK {
		t.Fatalf("fsck after recover --pin: exit %d %s", code, errOut)
	}

	// A root that does not verify is refused and nothing is written: a
	// block of big.txt is gone.
	layout, _ := workbench.Layout(r.agent)
	blocks, _, err := bucket.ListAll(context.Background(), r.b, bucket.ListOptions{Prefix: bodies.ArtifactsPrefix(layout)})
	if err != nil || len(blocks) == 0 {
		t.Fatalf("no blocks: %v", err)
	}
	for _, o := range blocks {
		if err := r.b.Delete(context.Background(), o.Key, bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
	}
	r.deleteHead()
	code, rep, _ = r.recover("--pin", "p1")
	if code != exitFailed || rep.Written || len(rep.Problems) == 0 || !strings.Contains(rep.Refused, "not whole") || !r.headMissing() {
		t.Fatalf("recover of a damaged root: exit %d, %+v", code, rep)
	}
	t.Logf("a damaged root: refused with %d problems, e.g. %s", len(rep.Problems), rep.Problems[0])

	// An agent never written has nothing to recover.
	if code, _, errOut := runWith(t, "", "recover", "--bucket", r.url, "--agent", "nobody"); code != exitFailed || errOut != "" {
		t.Fatalf("recover of an agent never written: exit %d %s", code, errOut)
	}
}

func TestRecoverCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"recover", "extra"},
		{"recover", "--agent", ""},
		{"recover", "--agent", "a/b"},
		{"recover", "--pin", ""},
		{"recover", "--pin", "a b"},
		{"recover", "--root", strings.Repeat("AB", 32)},
		{"recover", "--root", strings.Repeat("0", 64)},
		{"recover", "--bucket", "nope://x"},
	} {
		if code, out, errOut := runWith(t, "", args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d\n%s%s", args, code, exitUsage, out, errOut)
		}
	}
	missing := "file://" + filepath.Join(t.TempDir(), "absent")
	if code, _, errOut := runWith(t, "", "recover", "--bucket", missing); code != exitStore {
		t.Errorf("a bucket that does not exist: exit %d, want %d: %s", code, exitStore, errOut)
	}
}
