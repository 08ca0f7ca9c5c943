package workbench_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// readChanges reads one page that must succeed.
func readChanges(t *testing.T, s *workbench.Service, req workbench.ChangesRequest) workbench.ChangesPage {
	t.Helper()
	page, err := s.ReadChanges(context.Background(), req)
	if err != nil {
		t.Fatalf("ReadChanges(%+v): %v", req, err)
	}
	if page.NextCursor == "" {
		t.Fatalf("ReadChanges(%+v): no next cursor", req)
	}
	return page
}

// changesErr reads a page that must fail with code.
func changesErr(t *testing.T, s *workbench.Service, req workbench.ChangesRequest, code string) *workbench.Error {
	t.Helper()
	_, err := s.ReadChanges(context.Background(), req)
	var we *workbench.Error
	if !errors.As(err, &we) || we.Code != code {
		t.Fatalf("ReadChanges(%+v) = %v, want code %s", req, err, code)
	}
	return we
}

// drain follows the feed from req to the end, limit events a page.
func drain(t *testing.T, s *workbench.Service, req workbench.ChangesRequest) ([]workbench.Change, string) {
	t.Helper()
	var all []workbench.Change
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatal("feed does not end")
		}
		page := readChanges(t, s, req)
		all = append(all, page.Events...)
		req.Cursor = page.NextCursor
		req.AfterCommitVersion = nil
		if page.CaughtUp {
			return all, page.NextCursor
		}
		if len(page.Events) != req.Limit && req.Limit != 0 {
			t.Fatalf("a page that is not caught up returned %d events, limit %d", len(page.Events), req.Limit)
		}
	}
}

func eventKeys(evs []workbench.Change) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = fmt.Sprintf("%d.%d", e.CommitVersion, e.Sequence)
	}
	return out
}

// checkOrdered fails unless evs are strictly increasing log positions.
func checkOrdered(t *testing.T, evs []workbench.Change) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		a, b := evs[i-1], evs[i]
		if a.CommitVersion > b.CommitVersion || (a.CommitVersion == b.CommitVersion && a.Sequence >= b.Sequence) {
			t.Fatalf("events out of order at %d: %v", i, eventKeys(evs))
		}
	}
}

// putText writes outputs/path of workbench id, creating or replacing it.
func putText(t *testing.T, s *workbench.Service, id, path, text string) {
	t.Helper()
	in := fmt.Sprintf(`{"id":%q,"section":"outputs","path":%q,"text":%q`, id, path, text)
	if m, ok := call(t, s, "workbench_put_file", in+"}"); !ok {
		if m["code"] != workbench.CodeAlreadyExists {
			t.Fatalf("put %s: %v", path, m)
		}
		mustCall(t, s, "workbench_put_file", in+`,"replace":true}`)
	}
}

func TestChangesEventShape(t *testing.T) {
	s := newService(t)
	mustCall(t, s, "workbench_create", `{"id":"wb1"}`)
	putText(t, s, "wb1", "a.txt", "hi")
	putText(t, s, "wb1", "a.txt", "hello")
	mustCall(t, s, "workbench_append", `{"id":"wb1","section":"outputs","path":"a.txt","text":"!"}`)

	page := readChanges(t, s, workbench.ChangesRequest{})
	if got, want := len(page.Events), 4; got != want {
		t.Fatalf("%d events, want %d: %+v", got, want, page.Events)
	}
	if !page.CaughtUp {
		t.Fatal("a page shorter than its limit is not caught up")
	}
	kinds := []string{"WorkspaceCreated", "PathCreated", "PathReplaced", "PathAppended"}
	for i, e := range page.Events {
		if e.Kind != kinds[i] || e.WorkbenchID != "wb1" || len(e.Incarnation) != 32 {
			t.Fatalf("event %d = %+v, want kind %s of wb1", i, e, kinds[i])
		}
	}
	created, replaced := page.Events[1], page.Events[2]
	if created.Path == nil || *created.Path != "outputs/a.txt" || created.Before != nil || created.After == nil {
		t.Fatalf("PathCreated = %+v", created)
	}
	if got, want := *created.After.Digest, workbench.DigestURI([]byte("hi")); got != want || created.After.Generation != 1 || created.After.LogicalSize != 2 {
		t.Fatalf("PathCreated after = %+v, want digest %s, generation 1, size 2", created.After, want)
	}
	if replaced.Before == nil || created.After.Revision == nil || *replaced.Before.Revision != *created.After.Revision || replaced.After.Generation != 2 {
		t.Fatalf("PathReplaced = %+v, before should be the created revision", replaced)
	}
	if page.Events[0].Path != nil || page.Events[0].Before != nil || page.Events[0].After != nil {
		t.Fatalf("WorkspaceCreated = %+v, want no path or projections", page.Events[0])
	}
	if page.ReadVersion != page.Events[3].CommitVersion {
		t.Fatalf("read version %d, last event at %d", page.ReadVersion, page.Events[3].CommitVersion)
	}
	b, err := workbench.MarshalResult(created)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"after":{"digest":%q,"generation":1,"logical_size":2,"revision":%q},"before":null,"commit_id":null,"commit_version":%d,"incarnation":%q,"kind":"PathCreated","path":"outputs/a.txt","sequence":0,"snapshot_id":null,"workbench_id":"wb1"}`,
		workbench.DigestURI([]byte("hi")), *created.After.Revision, created.CommitVersion, created.Incarnation)
	if string(b) != want {
		t.Fatalf("JSON form\n got %s\nwant %s", b, want)
	}
}

// TestChangesResumeAcrossWrites pages through more than two version groups
// (256 versions each) with a small limit while other writes land between
// pages: every event comes exactly once, in order.
func TestChangesResumeAcrossWrites(t *testing.T) {
	s := newService(t)
	mustCall(t, s, "workbench_create", `{"id":"wb1"}`)
	for i := 0; i < 300; i++ {
		putText(t, s, "wb1", fmt.Sprintf("f%d.txt", i%7), fmt.Sprint(i))
	}
	req := workbench.ChangesRequest{Limit: 7}
	var got []workbench.Change
	for i := 0; ; i++ {
		page := readChanges(t, s, req)
		got = append(got, page.Events...)
		req.Cursor = page.NextCursor
		if i < 250 {
			// A write between pages; its event comes after the others.
			putText(t, s, "wb1", "late.txt", fmt.Sprint(i))
		}
		if page.CaughtUp && i >= 250 {
			break
		}
	}
	checkOrdered(t, got)
	// Scans that page within a group (3 rows a call) change nothing.
	defer workbench.SetChangesScanBatchForTest(3)()
	all, _ := drain(t, s, workbench.ChangesRequest{Limit: workbench.MaxChangesLimit})
	if len(got) != len(all) || len(all) != 1+300+250 {
		t.Fatalf("paged %d events, one page read %d, want %d", len(got), len(all), 1+300+250)
	}
	if fmt.Sprint(eventKeys(got)) != fmt.Sprint(eventKeys(all)) {
		t.Fatal("the paged feed and the one-page feed differ")
	}
	if last := all[len(all)-1].CommitVersion; last < 512 {
		t.Fatalf("the log ends at version %d: the test should cross two version groups", last)
	}
}

// TestChangesCaughtUpCursor: a cursor minted at the end of the log gets
// exactly the events written after it, then nothing.
func TestChangesCaughtUpCursor(t *testing.T) {
	s := newService(t)
	putText(t, s, "wb1", "a.txt", "1")
	page := readChanges(t, s, workbench.ChangesRequest{})
	empty := readChanges(t, s, workbench.ChangesRequest{Cursor: page.NextCursor})
	if len(empty.Events) != 0 || !empty.CaughtUp {
		t.Fatalf("page after the end = %+v", empty)
	}
	putText(t, s, "wb1", "b.txt", "2")
	putText(t, s, "wb2", "c.txt", "3")
	next := readChanges(t, s, workbench.ChangesRequest{Cursor: empty.NextCursor})
	var kinds []string
	for _, e := range next.Events {
		kinds = append(kinds, e.WorkbenchID+":"+e.Kind)
	}
	if got, want := fmt.Sprint(kinds), "[wb1:PathCreated wb2:WorkspaceCreated wb2:PathCreated]"; got != want {
		t.Fatalf("events after the cursor: %s, want %s", got, want)
	}
}

func TestChangesWorkbenchScope(t *testing.T) {
	s := newService(t)
	for i := 0; i < 5; i++ {
		putText(t, s, "wb1", "a.txt", fmt.Sprint(i))
		putText(t, s, "wb2", "b.txt", fmt.Sprint(i))
	}
	evs, cursor := drain(t, s, workbench.ChangesRequest{WorkbenchID: "wb2", Limit: 2})
	if len(evs) != 6 {
		t.Fatalf("wb2 has %d events, want 6: %v", len(evs), evs)
	}
	for _, e := range evs {
		if e.WorkbenchID != "wb2" {
			t.Fatalf("wb2's feed holds %+v", e)
		}
	}
	checkOrdered(t, evs)
	// A cursor is bound to its scope.
	changesErr(t, s, workbench.ChangesRequest{WorkbenchID: "wb1", Cursor: cursor}, workbench.CodeInvalidState)
	changesErr(t, s, workbench.ChangesRequest{Cursor: cursor}, workbench.CodeInvalidState)
	root := readChanges(t, s, workbench.ChangesRequest{Limit: 1})
	changesErr(t, s, workbench.ChangesRequest{WorkbenchID: "wb2", Cursor: root.NextCursor}, workbench.CodeInvalidState)
	// An unknown workbench has no events yet; a bad id is refused.
	if page := readChanges(t, s, workbench.ChangesRequest{WorkbenchID: "nobody"}); len(page.Events) != 0 {
		t.Fatalf("unknown workbench has events %+v", page.Events)
	}
	changesErr(t, s, workbench.ChangesRequest{WorkbenchID: "a.b"}, workbench.CodeInvalidArguments)
	changesErr(t, s, workbench.ChangesRequest{Limit: workbench.MaxChangesLimit + 1}, workbench.CodeInvalidArguments)
	changesErr(t, s, workbench.ChangesRequest{Limit: -1}, workbench.CodeInvalidArguments)
}

func TestChangesTamperedCursor(t *testing.T) {
	b := mem.NewBucket()
	s := newServiceOn(t, b, workbench.Options{})
	putText(t, s, "wb1", "a.txt", "1")
	putText(t, s, "wb1", "b.txt", "2")
	page := readChanges(t, s, workbench.ChangesRequest{Limit: 1})
	c := []byte(page.NextCursor)
	for i := range c {
		bad := append([]byte(nil), c...)
		bad[i] ^= 1
		we := changesErr(t, s, workbench.ChangesRequest{Cursor: string(bad)}, workbench.CodeInvalidState)
		if we.Message != "cursor is malformed" {
			t.Fatalf("byte %d flipped: %v", i, we)
		}
	}
	changesErr(t, s, workbench.ChangesRequest{Cursor: page.NextCursor[:len(page.NextCursor)-1]}, workbench.CodeInvalidState)
	// Another root's cursor does not decode here.
	other := newServiceOn(t, b, workbench.Options{AgentID: "other"})
	changesErr(t, other, workbench.ChangesRequest{Cursor: page.NextCursor}, workbench.CodeInvalidState)
}

func TestChangesAfterCommitVersion(t *testing.T) {
	s := newService(t)
	putText(t, s, "wb1", "a.txt", "1") // WorkspaceCreated and PathCreated in one commit
	first := readChanges(t, s, workbench.ChangesRequest{})
	if len(first.Events) != 2 || first.Events[0].CommitVersion != first.Events[1].CommitVersion {
		t.Fatalf("creation commit events = %+v", first.Events)
	}
	v := first.Events[0].CommitVersion
	putText(t, s, "wb1", "b.txt", "2")
	current := readChanges(t, s, workbench.ChangesRequest{}).ReadVersion

	// after v excludes every sequence of v.
	u := func(x uint64) *uint64 { return &x }
	page := readChanges(t, s, workbench.ChangesRequest{AfterCommitVersion: u(v)})
	if len(page.Events) != 1 || page.Events[0].CommitVersion <= v {
		t.Fatalf("after %d: %+v", v, page.Events)
	}
	// after v-1 includes all of v; after 0 includes everything.
	if page := readChanges(t, s, workbench.ChangesRequest{AfterCommitVersion: u(v - 1)}); len(page.Events) != 3 {
		t.Fatalf("after %d: %d events, want 3", v-1, len(page.Events))
	}
	if page := readChanges(t, s, workbench.ChangesRequest{AfterCommitVersion: u(0)}); len(page.Events) != 3 {
		t.Fatalf("after 0: %d events, want 3", len(page.Events))
	}
	// The current version: nothing yet, caught up.
	at := readChanges(t, s, workbench.ChangesRequest{AfterCommitVersion: u(current)})
	if len(at.Events) != 0 || !at.CaughtUp {
		t.Fatalf("after the current version: %+v", at)
	}
	// Newer than the current version: fails closed, naming the version.
	we := changesErr(t, s, workbench.ChangesRequest{AfterCommitVersion: u(current + 1)}, workbench.CodeInvalidState)
	if got := we.Details["current_version"]; got != current {
		t.Fatalf("details %v, want current_version %d", we.Details, current)
	}
	changesErr(t, s, workbench.ChangesRequest{AfterCommitVersion: u(^uint64(0))}, workbench.CodeInvalidState)

	// The cursor carries after_commit_version: repeating it is fine, another is not.
	p1 := readChanges(t, s, workbench.ChangesRequest{AfterCommitVersion: u(v - 1), Limit: 1})
	p2 := readChanges(t, s, workbench.ChangesRequest{AfterCommitVersion: u(v - 1), Cursor: p1.NextCursor, Limit: 1})
	p3 := readChanges(t, s, workbench.ChangesRequest{Cursor: p2.NextCursor})
	if got := eventKeys(append(append(p1.Events, p2.Events...), p3.Events...)); len(got) != 3 {
		t.Fatalf("paged after %d: %v", v-1, got)
	}
	changesErr(t, s, workbench.ChangesRequest{AfterCommitVersion: u(v), Cursor: p1.NextCursor}, workbench.CodeInvalidState)
	plain := readChanges(t, s, workbench.ChangesRequest{Limit: 1})
	changesErr(t, s, workbench.ChangesRequest{AfterCommitVersion: u(0), Cursor: plain.NextCursor}, workbench.CodeInvalidState)
	// A write after the cursor resumes against the later head.
	putText(t, s, "wb1", "c.txt", "3")
	if p4 := readChanges(t, s, workbench.ChangesRequest{Cursor: p3.NextCursor}); len(p4.Events) != 1 {
		t.Fatalf("after a later write: %+v", p4.Events)
	}
}

// writeRaw commits records directly, as a restore's batches would: a
// marker for workbench id and, if kind is set, one event of it.
func writeRaw(t *testing.T, s *workbench.Service, id string, ws func(seq uint64) nokv.WorkspaceCurrent, kind nokv.ChangeEventKind) uint64 {
	t.Helper()
	root := s.Root()
	res, err := s.Store().Do(context.Background(), head.Command{
		Namespace: root,
		Apply: func(tx *head.Tx) ([]byte, error) {
			m := ws(tx.Sequence())
			key, err := nokv.WorkspaceCurrentKey{Root: root, WorkbenchID: id}.Encode()
			if err != nil {
				return nil, err
			}
			v, err := m.Encode()
			if err != nil {
				return nil, err
			}
			if err := tx.Put(nokv.FamilyWorkspaceCurrent, key, v); err != nil {
				return nil, err
			}
			if kind == 0 {
				return nil, nil
			}
			ev := nokv.ChangeEvent{WorkbenchID: id, Incarnation: m.Incarnation, Kind: kind}
			if kind == nokv.ChangeEventKindWorkspaceRestored {
				sid := nokv.SnapshotID(1)
				ev.Snapshot = &sid
			}
			if kind.IsPath() {
				ev.Path = []string{"outputs", "x.txt"}
				ev.After = &nokv.EventProjection{Generation: 1, LogicalSize: 1}
			}
			ek, err := nokv.ChangeEventKey{Root: root, CommitVersion: tx.Sequence()}.Encode()
			if err != nil {
				return nil, err
			}
			ev2, err := ev.Encode()
			if err != nil {
				return nil, err
			}
			return nil, tx.Put(nokv.FamilyChangeEvent, ek, ev2)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Sequence
}

// TestChangesHideStaging: events of a workbench whose marker is Staging
// (a restore in progress) are never served, by either scope, and stay
// hidden once the marker turns Visible at a later version.
func TestChangesHideStaging(t *testing.T) {
	s := newService(t)
	putText(t, s, "wb1", "a.txt", "1")
	inc := nokv.NewIncarnationID()
	staging := func(seq uint64) nokv.WorkspaceCurrent {
		return nokv.WorkspaceCurrent{Incarnation: inc, WorkspaceRevision: 1, State: nokv.WorkspaceStateStaging, CreatedVersion: seq, ModifiedVersion: seq}
	}
	writeRaw(t, s, "dst", staging, nokv.ChangeEventKindPathCreated)
	putText(t, s, "wb1", "b.txt", "2")
	for _, scope := range []string{"", "dst"} {
		for _, e := range readChanges(t, s, workbench.ChangesRequest{WorkbenchID: scope}).Events {
			if e.WorkbenchID == "dst" {
				t.Fatalf("scope %q served a staging event %+v", scope, e)
			}
		}
	}
	root := readChanges(t, s, workbench.ChangesRequest{})
	if len(root.Events) != 3 {
		t.Fatalf("root feed = %d events, want wb1's 3", len(root.Events))
	}
	visibleAt := writeRaw(t, s, "dst", func(seq uint64) nokv.WorkspaceCurrent {
		return nokv.WorkspaceCurrent{Incarnation: inc, WorkspaceRevision: 1, State: nokv.WorkspaceStateVisible, CreatedVersion: seq, ModifiedVersion: seq}
	}, nokv.ChangeEventKindWorkspaceRestored)
	got := readChanges(t, s, workbench.ChangesRequest{WorkbenchID: "dst"}).Events
	if len(got) != 1 || got[0].Kind != "WorkspaceRestored" || got[0].CommitVersion != visibleAt || got[0].SnapshotID == nil || *got[0].SnapshotID != 1 {
		t.Fatalf("dst's feed once Visible = %+v, want only its WorkspaceRestored at %d", got, visibleAt)
	}
	// An event of an incarnation the marker no longer names is hidden.
	writeRaw(t, s, "wb1", func(seq uint64) nokv.WorkspaceCurrent {
		return nokv.WorkspaceCurrent{Incarnation: nokv.NewIncarnationID(), WorkspaceRevision: 1, State: nokv.WorkspaceStateVisible, CreatedVersion: seq, ModifiedVersion: seq}
	}, 0)
	if got := readChanges(t, s, workbench.ChangesRequest{WorkbenchID: "wb1"}).Events; len(got) != 0 {
		t.Fatalf("wb1's replaced incarnation still shows %d events", len(got))
	}
}

// TestChangesNeverWritten: a deployment never written has an empty feed
// at version 0, and reading it writes nothing.
func TestChangesNeverWritten(t *testing.T) {
	b := mem.NewBucket()
	s, err := workbench.Open(context.Background(), b, workbench.Options{AgentID: "fresh"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page := readChanges(t, s, workbench.ChangesRequest{})
	if len(page.Events) != 0 || !page.CaughtUp || page.ReadVersion != 0 {
		t.Fatalf("page of a never-written deployment: %+v", page)
	}
	if keys := listKeys(t, b, ""); len(keys) != 0 {
		t.Fatalf("the feed wrote %v", keys)
	}
	putText(t, s, "wb1", "a.txt", "x")
	if got := readChanges(t, s, workbench.ChangesRequest{Cursor: page.NextCursor}).Events; len(got) != 2 {
		t.Fatalf("after the first write: %+v", got)
	}
}

// TestChangesConcurrentWriters: replicas write at once (their commands
// share group commits, so one version holds several events) while a
// follower pages the feed; it sees every event once, in log order.
func TestChangesConcurrentWriters(t *testing.T) {
	_, rs := newReplicas(t, 3, workbench.Options{})
	done := make(chan struct{})
	for i, s := range rs[:2] {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range 30 {
				in := fmt.Sprintf(`{"id":"wb%d","section":"outputs","path":"f%d.txt","text":"x"}`, i, j)
				if out, ok := s.Call(context.Background(), "workbench_put_file", []byte(in)); !ok {
					t.Errorf("put: %s", out)
					return
				}
			}
		}()
	}
	var got []workbench.Change
	req := workbench.ChangesRequest{Limit: 7}
	for finished := 0; finished < 2; {
		select {
		case <-done:
			finished++
		default:
		}
		page := readChanges(t, rs[2], req)
		got = append(got, page.Events...)
		req.Cursor = page.NextCursor
	}
	rest, _ := drain(t, rs[2], req)
	got = append(got, rest...)
	checkOrdered(t, got)
	if len(got) != 2*(30+1) {
		t.Fatalf("followed %d events, want %d", len(got), 2*(30+1))
	}
	all, _ := drain(t, rs[2], workbench.ChangesRequest{Limit: workbench.MaxChangesLimit})
	if fmt.Sprint(eventKeys(all)) != fmt.Sprint(eventKeys(got)) {
		t.Fatal("the followed feed differs from one read after the writes")
	}
	shared := false
	for i := 1; i < len(all); i++ {
		shared = shared || all[i].CommitVersion == all[i-1].CommitVersion && all[i].WorkbenchID != all[i-1].WorkbenchID
	}
	t.Logf("events of two writers in one version: %t", shared)
}
