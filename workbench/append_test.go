package workbench_test

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

func appendInput(id, section, path, payload string, extra ...string) string {
	return putInput(id, section, path, payload, extra...)
}

func TestAppendResult(t *testing.T) {
	s := newService(t)
	first := "Hello world\nsecond\n"
	got := mustCall(t, s, "workbench_append", appendInput("wb-main", "outputs", "report.txt", fmt.Sprintf(`"text":%q`, first)))
	checkWriteShape(t, got, transcriptAppend)
	if got["created"] != true || num(got["generation"]) != "1" || num(got["size_bytes"]) != fmt.Sprint(len(first)) ||
		num(got["appended_bytes"]) != fmt.Sprint(len(first)) || got["digest"] != workbench.DigestURI([]byte(first)) ||
		got["path"] != "/agents/test/wb/wb-main/outputs/report.txt" || got["section"] != "outputs" || got["relative_path"] != "report.txt" {
		t.Fatalf("creating append: %v", got)
	}
	got = mustCall(t, s, "workbench_append", appendInput("wb-main", "outputs", "report.txt", `"text":"third\n"`))
	checkWriteShape(t, got, transcriptAppend)
	// digest is the delta's; the revision keeps the whole body's.
	whole := first + "third\n"
	if got["created"] != false || num(got["generation"]) != "2" || num(got["size_bytes"]) != fmt.Sprint(len(whole)) ||
		num(got["appended_bytes"]) != "6" || got["digest"] != workbench.DigestURI([]byte("third\n")) {
		t.Fatalf("append: %v", got)
	}
	st, _ := workbench.PathForTest(t, s, "wb-main", "outputs/report.txt")
	if st.Entry.BodyDigestURI != workbench.DigestURI([]byte(whole)) || st.Revision.BodyDigestURI != st.Entry.BodyDigestURI {
		t.Fatalf("stored digest %s", st.Entry.BodyDigestURI)
	}
	if b := workbench.BodyForTest(t, s, "wb-main", "outputs/report.txt"); string(b) != whole {
		t.Fatalf("body %q", b)
	}
	// base64 deltas; an empty delta still makes a generation.
	got = mustCall(t, s, "workbench_append", appendInput("wb-main", "outputs", "report.txt", `"base64":"AP8="`))
	if num(got["appended_bytes"]) != "2" || got["digest"] != workbench.DigestURI([]byte{0, 0xff}) {
		t.Fatalf("base64 append: %v", got)
	}
	got = mustCall(t, s, "workbench_append", appendInput("wb-main", "outputs", "report.txt", `"text":""`))
	if num(got["appended_bytes"]) != "0" || num(got["generation"]) != "4" || num(got["size_bytes"]) != fmt.Sprint(len(whole)+2) {
		t.Fatalf("empty append: %v", got)
	}
	workbench.CheckReferencesForTest(t, s)
}

// TestAppendReusesSegments: the new revision reuses the base's rows, keys
// and physical owners included, adds its delta's own block marked with an
// append segment, and holds a dependency reference on the base.
func TestAppendReusesSegments(t *testing.T) {
	s := newService(t)
	mustCall(t, s, "workbench_put_file", putInput("wb", "logs", "a.log", `"text":"abc"`))
	base, _ := workbench.PathForTest(t, s, "wb", "logs/a.log")
	mustCall(t, s, "workbench_append", appendInput("wb", "logs", "a.log", `"text":"def"`))
	st, _ := workbench.PathForTest(t, s, "wb", "logs/a.log")
	if len(st.Rows) != 2 || !reflect.DeepEqual(st.Rows[0], base.Rows[0]) {
		t.Fatalf("rows %+v, base rows %+v", st.Rows, base.Rows)
	}
	d := st.Rows[1]
	if d.PhysicalOwner != st.Entry.Revision || d.PhysicalObjectIndex != 0 || d.LogicalOffset != 3 || d.Length != 3 ||
		d.Append == nil || *d.Append != (nokv.AppendSegment{BaseGeneration: 1, DeltaOffset: 3, DeltaLength: 3, DeltaDigestURI: workbench.DigestURI([]byte("def"))}) {
		t.Fatalf("delta row %+v", d)
	}
	if st.Entry.DependencyCount != 1 || st.Entry.DependencyDepth != 1 || st.Revision.DependencyCount != 1 || st.Revision.DependencyDepth != 1 {
		t.Fatalf("dependencies %+v", st.Entry)
	}
	// The base lost its path reference and gained a dependency one.
	old, _ := workbench.RevisionForTest(t, s, base.Entry.Revision)
	if old.StrongReferenceCount != 1 || old.ReferenceEpoch != 3 {
		t.Fatalf("base revision %+v", old)
	}
	// Replacing the appended file releases it; the base stays referenced
	// by the appended revision.
	mustCall(t, s, "workbench_put_file", putInput("wb", "logs", "a.log", `"text":"new"`, `"replace":true`))
	prev, _ := workbench.RevisionForTest(t, s, st.Entry.Revision)
	if prev.StrongReferenceCount != 0 || prev.LastZeroRefVersion == 0 {
		t.Fatalf("replaced revision %+v", prev)
	}
	events := workbench.ScanForTest(t, s, nokv.FamilyChangeEvent, nil)
	var kinds []string
	for _, e := range events {
		ev, err := nokv.DecodeChangeEvent(e.Value)
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind.String())
	}
	if got, want := strings.Join(kinds, ","), "WorkspaceCreated,PathCreated,PathAppended,PathReplaced"; got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	workbench.CheckReferencesForTest(t, s)
}

func TestAppendErrors(t *testing.T) {
	s := newServiceOn(t, mem.NewBucket(), workbench.Options{MaxBytes: 8})
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "dir/f", `"text":"x"`))
	got, ok := call(t, s, "workbench_append", appendInput("wb", "outputs", "dir", `"text":"x"`))
	wantWriteError(t, got, ok, "NotArtifact", false, `{"path":"outputs/dir"}`, "")
	got, ok = call(t, s, "workbench_append", appendInput("wb", "outputs", "dir/f/g", `"text":"x"`))
	wantWriteError(t, got, ok, "NotDirectory", false, `{"path":"outputs/dir/f"}`, "")
	got, ok = call(t, s, "workbench_append", appendInput("wb", "outputs", "a", `"text":"x"`, `"base64":"eA=="`))
	wantWriteError(t, got, ok, "InvalidArguments", false, `{}`, "text and base64 are mutually exclusive")
	got, ok = call(t, s, "workbench_append", appendInput("wb", "outputs", "a", ""))
	wantWriteError(t, got, ok, "InvalidArguments", false, `{}`, "exactly one of text or base64 is required")
	got, ok = call(t, s, "workbench_append", appendInput("wb", "outputs", "a", `"base64":"eA"`))
	wantWriteError(t, got, ok, "InvalidArguments", false, `{}`, "")
	got, ok = call(t, s, "workbench_append", appendInput("wb", "metadata", "run_manifest.json", `"text":"x"`))
	wantWriteError(t, got, ok, "InvalidArguments", false, `{}`, "")
	got, ok = call(t, s, "workbench_append", appendInput("wb", "outputs", "a", `"text":"x"`, `"content_type":""`))
	wantWriteError(t, got, ok, "InvalidState", false, `{"source":"cairn"}`, "")

	// A delta over the limit is PayloadTooLarge, whatever the base.
	got, ok = call(t, s, "workbench_append", appendInput("wb", "logs", "big", `"text":"123456789"`))
	wantWriteError(t, got, ok, "PayloadTooLarge", false, `{"actual_bytes":9,"maximum_bytes":8}`, "")
	workbench.CheckReferencesForTest(t, s)
}

// TestAppendPastMaxBytes: an append whose result would be larger than
// MaxBytes is refused ResourceExhausted, as the reference's backend
// refuses an artifact over its limit, and writes nothing: no object, no
// generation. An append that reaches the limit exactly is served, and the
// result stays readable.
func TestAppendPastMaxBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		opts workbench.Options
	}{
		{"inline", workbench.Options{MaxBytes: 8}},
		{"blocks", workbench.Options{MaxBytes: 64, BlockSize: 16, InlineMax: -1, CleanupDelay: time.Hour}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := mem.NewBucket()
			s := newServiceOn(t, b, c.opts)
			limit := int(c.opts.MaxBytes)
			mustCall(t, s, "workbench_append", appendInput("wb", "logs", "l", fmt.Sprintf(`"text":%q`, strings.Repeat("a", limit-3))))
			before := listKeys(t, b, "")
			got, ok := call(t, s, "workbench_append", appendInput("wb", "logs", "l", `"text":"1234"`))
			wantWriteError(t, got, ok, "ResourceExhausted", false, `{"source":"cairn"}`,
				fmt.Sprintf("artifact of %d bytes exceeds the %d-byte limit", limit+1, limit))
			if after := listKeys(t, b, ""); !slices.Equal(after, before) {
				t.Fatalf("a refused append changed the bucket:\n before %v\n after  %v", before, after)
			}
			st, _ := workbench.PathForTest(t, s, "wb", "logs/l")
			if st.Entry.LogicalSize != uint64(limit-3) || st.Entry.Generation != 1 {
				t.Fatalf("entry %+v", st.Entry)
			}
			// Up to the limit exactly is an append like any other.
			got = mustCall(t, s, "workbench_append", appendInput("wb", "logs", "l", `"text":"123"`))
			if num(got["size_bytes"]) != fmt.Sprint(limit) {
				t.Fatalf("append to the limit: %v", got)
			}
			r := mustCall(t, s, "workbench_read", `{"id":"wb","section":"logs","path":"l","format":"bytes","limit":300}`)
			if num(r["total_size_bytes"]) != fmt.Sprint(limit) {
				t.Fatalf("read %v", r)
			}
			workbench.CheckReferencesForTest(t, s)
		})
	}
}

func TestAppendContentType(t *testing.T) {
	s := newService(t)
	ct := func(path string) string {
		st, _ := workbench.PathForTest(t, s, "wb", path)
		return st.Entry.ContentType
	}
	mustCall(t, s, "workbench_append", appendInput("wb", "logs", "t", `"text":"a"`))
	mustCall(t, s, "workbench_append", appendInput("wb", "logs", "t", `"base64":"AA=="`))
	if got := ct("logs/t"); got != "text/plain; charset=utf-8" {
		t.Fatalf("content type after a base64 append to a text file: %q", got)
	}
	mustCall(t, s, "workbench_append", appendInput("wb", "logs", "b", `"base64":"AA=="`))
	if got := ct("logs/b"); got != "application/octet-stream" {
		t.Fatalf("created by base64: %q", got)
	}
	mustCall(t, s, "workbench_append", appendInput("wb", "logs", "t", `"text":"b"`, `"content_type":"text/x-log"`))
	if got := ct("logs/t"); got != "text/x-log" {
		t.Fatalf("explicit content type: %q", got)
	}
}

// TestAppendConcurrent: appends from many goroutines, in one Service and
// across replicas over one store, all land exactly once, in some order.
func TestAppendConcurrent(t *testing.T) {
	store, services := newReplicas(t, 3, workbench.Options{BlockSize: 8})
	const goroutines, appends = 12, 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	gens := map[string]bool{}
	var created int
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := services[g%len(services)]
			for i := range appends {
				token := fmt.Sprintf("<%02d:%d>", g, i)
				m, ok := call(t, s, "workbench_append", appendInput("wb", "logs", "shared.log", fmt.Sprintf(`"text":%q`, token)))
				if !ok {
					t.Errorf("append %s: %v", token, m)
					continue
				}
				mu.Lock()
				if gens[num(m["generation"])] {
					t.Errorf("generation %v given twice", m["generation"])
				}
				gens[num(m["generation"])] = true
				if m["created"] == true {
					created++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	body := workbench.BodyForTest(t, services[0], "wb", "logs/shared.log")
	for g := range goroutines {
		for i := range appends {
			token := fmt.Sprintf("<%02d:%d>", g, i)
			if n := bytes.Count(body, []byte(token)); n != 1 {
				t.Errorf("%s appears %d times", token, n)
			}
		}
	}
	if got, want := len(body), goroutines*appends*len("<00:0>"); got != want {
		t.Errorf("body of %d bytes, want %d", got, want)
	}
	if created != 1 || len(gens) != goroutines*appends {
		t.Errorf("%d creating appends, %d generations", created, len(gens))
	}
	st, _ := workbench.PathForTest(t, services[1], "wb", "logs/shared.log")
	if st.Entry.Generation != goroutines*appends || st.Entry.DependencyDepth > workbench.MaxDependencyDepth {
		t.Errorf("entry %+v", st.Entry)
	}
	workbench.CheckReferencesForTest(t, services[2])
	// Retries reused their delta's blocks; nothing unowned is left once
	// the background cleanup ran.
	for _, s := range services {
		workbench.FlushCleanupForTest(s)
	}
	b, _ := mem.New(store, "")
	if keys := listKeys(t, b, bodies.StagingPrefix(services[0].Store().Layout())); len(keys) != 0 {
		t.Errorf("ledgers left: %v", keys)
	}
}
