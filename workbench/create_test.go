package workbench_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TestCreateResult: the result is the transcript's, byte for byte, and an
// exact retry returns the identical bytes without writing anything.
func TestCreateResult(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	out, ok := s.Call(ctx, "workbench_create", []byte(`{"id":"wb-main"}`))
	if !ok || string(out) != transcriptCreate {
		t.Fatalf("create: %s\nwant %s", out, transcriptCreate)
	}
	var m map[string]any
	if err := jsonUnmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	checkWriteShape(t, m, transcriptCreate)

	sn, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, ok := s.Call(ctx, "workbench_create", []byte(`{"id":"wb-main"}`))
	if !ok || string(again) != string(out) {
		t.Fatalf("retry: %s", again)
	}
	sn2, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sn2.Sequence() != sn.Sequence() {
		t.Fatalf("a retry of create committed (sequence %d -> %d)", sn.Sequence(), sn2.Sequence())
	}

	// The records: a Visible marker at revision 1, created and modified at
	// the commit that wrote it, its incarnation claim, one event.
	recs := workbench.ScanForTest(t, s, nokv.FamilyWorkspaceCurrent, nil)
	if len(recs) != 1 {
		t.Fatalf("%d markers", len(recs))
	}
	ws, err := nokv.DecodeWorkspaceCurrent(recs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if ws.State != nokv.WorkspaceStateVisible || ws.WorkspaceRevision != 1 || ws.CreatedVersion != sn.Sequence() ||
		ws.ModifiedVersion != sn.Sequence() || ws.Incarnation.IsZero() || ws.Owner != nil {
		t.Fatalf("marker %+v at sequence %d", ws, sn.Sequence())
	}
	claims := workbench.ScanForTest(t, s, nokv.FamilyWorkspaceIncarnationClaim, nil)
	if len(claims) != 1 {
		t.Fatalf("%d claims", len(claims))
	}
	ck, err := nokv.ParseWorkspaceIncarnationClaimKey(claims[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := nokv.DecodeWorkspaceIncarnationClaim(claims[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Incarnation != ws.Incarnation || c.WorkbenchID != "wb-main" {
		t.Fatalf("claim %+v %+v", ck, c)
	}
	events := workbench.ScanForTest(t, s, nokv.FamilyChangeEvent, nil)
	if len(events) != 1 {
		t.Fatalf("%d events", len(events))
	}
	ek, _ := nokv.ParseChangeEventKey(events[0].Key)
	ev, err := nokv.DecodeChangeEvent(events[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != nokv.ChangeEventKindWorkspaceCreated || ev.WorkbenchID != "wb-main" || ev.Incarnation != ws.Incarnation ||
		ek.CommitVersion != sn.Sequence() || ek.Sequence != 0 {
		t.Fatalf("event %+v at %+v", ev, ek)
	}
}

func TestCreateErrors(t *testing.T) {
	s := newService(t)
	for _, c := range []struct{ input, message string }{
		{`{"id":""}`, "workbench id is empty"},
		{`{"id":"-x"}`, "workbench id must start with an ASCII letter or digit, found byte 0x2d"},
		{`{"id":"a/b"}`, "workbench id contains invalid byte 0x2f at offset 1"},
		{`{}`, ""},
		{`{"id":7}`, ""},
		{`{"id":"x","extra":true}`, ""},
	} {
		got, ok := call(t, s, "workbench_create", c.input)
		wantWriteError(t, got, ok, "InvalidArguments", false, `{}`, c.message)
	}
	if recs := workbench.ScanForTest(t, s, nokv.FamilyWorkspaceCurrent, nil); len(recs) != 0 {
		t.Fatalf("%d markers after refused creates", len(recs))
	}
}

// TestCreateRace: creates of one workbench racing in one Service and
// across replicas all succeed with the same result, and exactly one
// incarnation is claimed.
func TestCreateRace(t *testing.T) {
	_, services := newReplicas(t, 2, workbench.Options{})
	var wg sync.WaitGroup
	outs := make([]string, 10)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, ok := services[i%2].Call(context.Background(), "workbench_create", []byte(`{"id":"wb-main"}`))
			if !ok {
				t.Errorf("create %d: %s", i, out)
			}
			outs[i] = string(out)
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if o != transcriptCreate {
			t.Errorf("create %d: %s", i, o)
		}
	}
	if n := len(workbench.ScanForTest(t, services[0], nokv.FamilyWorkspaceIncarnationClaim, nil)); n != 1 {
		t.Fatalf("%d incarnations claimed", n)
	}
	if n := len(workbench.ScanForTest(t, services[1], nokv.FamilyChangeEvent, nil)); n != 1 {
		t.Fatalf("%d events", n)
	}
}

// The typed Create answers what Call answers, and the same error.
func TestCreateTyped(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	res, err := s.Create(ctx, workbench.CreateInput{ID: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := workbench.MarshalResult(res)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := s.Call(ctx, "workbench_create", []byte(`{"id":"typed"}`))
	if string(got) != string(want) {
		t.Fatalf("typed %s\ncall  %s", got, want)
	}
	_, err = s.Create(ctx, workbench.CreateInput{ID: "no/slash"})
	var werr *workbench.Error
	if !errors.As(err, &werr) || werr.Code != workbench.CodeInvalidArguments {
		t.Fatalf("bad id: %v, want InvalidArguments", err)
	}
	out, _ := s.Call(ctx, "workbench_create", []byte(`{"id":"no/slash"}`))
	if env, _ := workbench.MarshalResult(werr); string(env) != string(out) {
		t.Fatalf("typed error %s\ncall error  %s", env, out)
	}
}
