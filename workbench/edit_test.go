package workbench_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
)

func editInput(id, section, path, old, new string, extra ...string) string {
	return putInput(id, section, path, fmt.Sprintf(`"old_string":%q,"new_string":%q`, old, new), extra...)
}

func TestEditResult(t *testing.T) {
	s := newService(t)
	mustCall(t, s, "workbench_put_file", putInput("wb-main", "outputs", "report.txt", `"text":"Hello world\nsecond\nthird\n"`))
	got := mustCall(t, s, "workbench_edit", editInput("wb-main", "outputs", "report.txt", "world", "there"))
	checkWriteShape(t, got, transcriptEdit)
	want := "Hello there\nsecond\nthird\n"
	if num(got["generation"]) != "2" || got["no_change"] != false || num(got["replacements"]) != "1" ||
		num(got["size_bytes"]) != fmt.Sprint(len(want)) || got["path"] != "/agents/test/wb/wb-main/outputs/report.txt" ||
		got["section"] != "outputs" || got["relative_path"] != "report.txt" || got["workbench_id"] != "wb-main" {
		t.Fatalf("edit: %v", got)
	}
	if b := workbench.BodyForTest(t, s, "wb-main", "outputs/report.txt"); string(b) != want {
		t.Fatalf("body %q", b)
	}
	// replace_all counts every occurrence; the content type is kept.
	got = mustCall(t, s, "workbench_edit", editInput("wb-main", "outputs", "report.txt", "d", "DD", `"replace_all":true`))
	checkWriteShape(t, got, transcriptEdit)
	want = strings.ReplaceAll(want, "d", "DD")
	if num(got["replacements"]) != "2" || num(got["generation"]) != "3" || num(got["size_bytes"]) != fmt.Sprint(len(want)) {
		t.Fatalf("replace_all: %v", got)
	}
	st, _ := workbench.PathForTest(t, s, "wb-main", "outputs/report.txt")
	if st.Entry.ContentType != "text/plain; charset=utf-8" || st.Entry.BodyDigestURI != workbench.DigestURI([]byte(want)) {
		t.Fatalf("entry %+v", st.Entry)
	}
	// A byte-identical result publishes nothing.
	seq := st.Entry.ModifiedVersion
	got = mustCall(t, s, "workbench_edit", editInput("wb-main", "outputs", "report.txt", "Hello", "Hello"))
	checkWriteShape(t, got, transcriptEdit)
	if got["no_change"] != true || num(got["generation"]) != "3" || num(got["replacements"]) != "1" {
		t.Fatalf("no-change edit: %v", got)
	}
	if st2, _ := workbench.PathForTest(t, s, "wb-main", "outputs/report.txt"); st2.Entry.ModifiedVersion != seq || st2.Entry.Revision != st.Entry.Revision {
		t.Fatal("a no-change edit published")
	}
	// An edit of an appended file replaces it whole.
	mustCall(t, s, "workbench_append", appendInput("wb-main", "logs", "l", `"text":"aaa"`))
	mustCall(t, s, "workbench_append", appendInput("wb-main", "logs", "l", `"text":"bbb"`))
	got = mustCall(t, s, "workbench_edit", editInput("wb-main", "logs", "l", "ab", "-"))
	if b := workbench.BodyForTest(t, s, "wb-main", "logs/l"); string(b) != "aa-bb" || num(got["generation"]) != "3" {
		t.Fatalf("body %q, result %v", b, got)
	}
	workbench.CheckReferencesForTest(t, s)
}

func TestEditErrors(t *testing.T) {
	b := mem.NewBucket()
	s := newServiceOn(t, b, workbench.Options{MaxBytes: 8})
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"a-b-a"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "dir/f", `"text":"x"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "bin", `"base64":"/w=="`))
	// A body over this Service's limit, written by one with a larger one.
	mustCall(t, newServiceOn(t, b, workbench.Options{}), "workbench_put_file", putInput("wb", "logs", "big", `"text":"1234567812345678"`))
	cases := []struct {
		name, input, code, details, message string
	}{
		{"missing path", editInput("wb", "outputs", "nope", "a", "b"), "NotFound", `{"path":"outputs/nope"}`, ""},
		{"directory", editInput("wb", "outputs", "dir", "a", "b"), "NotFound", `{"path":"outputs/dir"}`, ""},
		{"no match", editInput("wb", "outputs", "a.txt", "zz", "b"), "NoMatch", `{"path":"outputs/a.txt"}`, ""},
		{"ambiguous", editInput("wb", "outputs", "a.txt", "a", "b"), "AmbiguousEdit", `{"matches":2}`, "old_string occurs 2 times; set replace_all=true"},
		{"not utf-8", editInput("wb", "outputs", "bin", "a", "b"), "InvalidUtf8", `{"path":"outputs/bin"}`, ""},
		{"too large after", editInput("wb", "outputs", "a.txt", "-b-", "-bbbbb-"), "PayloadTooLarge", `{"actual_bytes":9,"maximum_bytes":8}`, ""},
		{"too large before", editInput("wb", "logs", "big", "1", "2"), "PayloadTooLarge", `{"actual_bytes":16,"maximum_bytes":8}`, ""},
		{"empty old_string", editInput("wb", "outputs", "a.txt", "", "b"), "InvalidArguments", `{}`, ""},
		{"reserved", editInput("wb", "metadata", "run_manifest.json", "a", "b"), "InvalidArguments", `{}`, ""},
		{"duplicated section", editInput("wb", "outputs", "outputs/a.txt", "a", "b"), "InvalidArguments", `{}`, ""},
		{"missing new_string", putInput("wb", "outputs", "a.txt", `"old_string":"a"`), "InvalidArguments", `{}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := call(t, s, "workbench_edit", c.input)
			wantWriteError(t, got, ok, c.code, false, c.details, c.message)
		})
	}
	if st, _ := workbench.PathForTest(t, s, "wb", "outputs/a.txt"); st.Entry.Generation != 1 {
		t.Fatalf("a refused edit published generation %d", st.Entry.Generation)
	}
	// A missing workbench is the tool layer's NotFound of the path asked
	// about (facts.md 1.2: edit on a missing path, details.path the
	// section-joined logical path), as a missing file in one that exists.
	got, ok := call(t, s, "workbench_edit", editInput("nowhere", "outputs", "a.txt", "a", "b"))
	wantWriteError(t, got, ok, "NotFound", false, `{"path":"outputs/a.txt"}`, "path not found: outputs/a.txt")
	if _, ok := call(t, s, "workbench_stat", `{"id":"nowhere"}`); ok {
		t.Fatal("a refused edit created its workbench")
	}
}

// TestEditConcurrent: edits racing on one file from many goroutines and
// two replicas each apply exactly once. An edit that exhausts its attempts
// is a retryable Conflict that applied nothing, and the caller retries it;
// a lost or doubled edit would surface as NoMatch.
func TestEditConcurrent(t *testing.T) {
	_, services := newReplicas(t, 2, workbench.Options{})
	const n = 10
	var body strings.Builder
	for i := range n {
		fmt.Fprintf(&body, "[slot %d]\n", i)
	}
	mustCall(t, services[0], "workbench_put_file", putInput("wb", "scripts", "e.py", fmt.Sprintf(`"text":%q`, body.String())))
	var wg sync.WaitGroup
	var conflicts atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := editInput("wb", "scripts", "e.py", fmt.Sprintf("[slot %d]", i), fmt.Sprintf("[done %d]", i))
			for try := 0; ; try++ {
				m, ok := call(t, services[i%2], "workbench_edit", in)
				if ok {
					if m["no_change"] != false || num(m["replacements"]) != "1" {
						t.Errorf("edit %d: %v", i, m)
					}
					return
				}
				if m["code"] != "Conflict" || try > 20 {
					t.Errorf("edit %d: %v", i, m)
					return
				}
				conflicts.Add(1)
				d := m["details"].(map[string]any)
				if num(d["attempts"]) != "5" || jsonKind(d["last_error"]) != "string" || len(d) != 2 || m["retryable"] != true {
					t.Errorf("edit %d: conflict %v", i, m)
				}
			}
		}()
	}
	wg.Wait()
	got := workbench.BodyForTest(t, services[1], "wb", "scripts/e.py")
	for i := range n {
		if c := bytes.Count(got, fmt.Appendf(nil, "[done %d]\n", i)); c != 1 {
			t.Errorf("[done %d] appears %d times in %q", i, c, got)
		}
	}
	if bytes.Contains(got, []byte("slot")) {
		t.Errorf("an edit was lost: %q", got)
	}
	st, _ := workbench.PathForTest(t, services[0], "wb", "scripts/e.py")
	if st.Entry.Generation != 1+n {
		t.Errorf("generation %d after %d edits", st.Entry.Generation, n)
	}
	t.Logf("%d edits exhausted their attempts and were retried", conflicts.Load())
	workbench.CheckReferencesForTest(t, services[0])
}

// TestEditConflictAfterAttempts: a replica replaces the file while every
// attempt of an edit uploads its result, so each attempt's replace of the
// generation it read loses; after five the edit fails Conflict with the
// attempts and the last conflict's message, and nothing it staged is left.
func TestEditConflictAfterAttempts(t *testing.T) {
	store := mem.NewStore()
	fb, err := mem.New(store, "")
	if err != nil {
		t.Fatal(err)
	}
	fs := fault.New(fb)
	// Bodies in blocks, so that every attempt uploads.
	s := newServiceOn(t, fs, workbench.Options{InlineMax: -1})
	other, err := mem.New(store, "")
	if err != nil {
		t.Fatal(err)
	}
	replica := newServiceOn(t, other, workbench.Options{InlineMax: -1})
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "e.txt", `"text":"old 0"`))

	var replaces atomic.Int64
	fs.Inject(fault.Rule{Op: fault.OpPut, Prefix: bodies.ArtifactsPrefix(s.Store().Layout()), Fault: fault.Hook(func(ctx context.Context, _ fault.Op, _ string) error {
		n := replaces.Add(1)
		_, ok := replica.Call(ctx, "workbench_put_file", []byte(putInput("wb", "outputs", "e.txt", fmt.Sprintf(`"text":"old %d"`, n), `"replace":true`)))
		if !ok {
			t.Errorf("replica replace %d failed", n)
		}
		return nil
	})})
	got, ok := call(t, s, "workbench_edit", editInput("wb", "outputs", "e.txt", "old", "new"))
	if ok || got["code"] != "Conflict" || got["retryable"] != true || got["message"] != "conditional publication conflicted after 5 attempts" {
		t.Fatalf("edit: %v", got)
	}
	wantWriteError(t, got, ok, "Conflict", true, `{"attempts":5,"last_error":"outputs/e.txt changed: observed generation 5, found generation 6"}`, "")
	if n := replaces.Load(); n != 5 {
		t.Fatalf("%d replica replaces, want 5", n)
	}
	fs.Clear()
	if b := workbench.BodyForTest(t, s, "wb", "outputs/e.txt"); string(b) != "old 5" {
		t.Fatalf("body %q", b)
	}
	// Only the six replaced generations' blocks remain, and no ledger
	// once the background cleanup ran.
	workbench.FlushCleanupForTest(s)
	workbench.FlushCleanupForTest(replica)
	if keys := listKeys(t, other, bodies.ArtifactsPrefix(s.Store().Layout())); len(keys) != 6 {
		t.Fatalf("blocks %v", keys)
	}
	if keys := listKeys(t, other, bodies.StagingPrefix(s.Store().Layout())); len(keys) != 0 {
		t.Fatalf("ledgers %v", keys)
	}
	workbench.CheckReferencesForTest(t, s)
}
