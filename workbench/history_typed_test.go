package workbench_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/workbench"
)

// The typed methods of the history tools (commit, the snapshot tools,
// restore) against Call: a typed result prints the bytes Call answers
// for the same arguments, and a typed error is the *Error whose envelope
// Call answers.

// historyJSON prints a typed result as Call prints a result.
func historyJSON(t *testing.T, res any) string {
	t.Helper()
	b, err := workbench.MarshalResult(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameCall checks that got, a typed result printed, is Call's answer to
// tool and input.
func sameCall(t *testing.T, s *workbench.Service, got, tool, input string) {
	t.Helper()
	want, ok := s.Call(context.Background(), tool, []byte(input))
	if !ok {
		t.Fatalf("%s %s failed: %s", tool, input, want)
	}
	if got != string(want) {
		t.Fatalf("%s:\ntyped %s\ncall  %s", tool, got, want)
	}
}

// sameCallError checks that err, a typed method's error, is a
// *workbench.Error of code whose envelope is Call's answer to tool and
// input.
func sameCallError(t *testing.T, s *workbench.Service, err error, code, tool, input string) {
	t.Helper()
	var werr *workbench.Error
	if !errors.As(err, &werr) || werr.Code != code {
		t.Fatalf("%s: error %v, want %s", tool, err, code)
	}
	want, ok := s.Call(context.Background(), tool, []byte(input))
	if ok {
		t.Fatalf("%s %s succeeded: %s", tool, input, want)
	}
	if got := historyJSON(t, werr); got != string(want) {
		t.Fatalf("%s:\ntyped error %s\ncall error  %s", tool, got, want)
	}
}

// asReplay is a fresh result printed as its exact retry answers it.
func asReplay(fresh string) string {
	return strings.Replace(fresh, `"idempotent_replay":false`, `"idempotent_replay":true`, 1)
}

func TestCommitTyped(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	mustCall(t, s, "workbench_put_file", `{"id":"wb","section":"outputs","path":"a.txt","text":"a"}`)

	// A fresh commit of a manifest given as a Go map: its exact retry,
	// through Call, answers the same bytes as a replay.
	res, err := s.Commit(ctx, workbench.CommitInput{ID: "wb", Manifest: map[string]any{"task": "typed", "n": 1}, ContentDigestURI: digest01})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "success" || res.IdempotentReplay || res.Generation != 1 || res.Replace {
		t.Fatalf("first commit %+v", res)
	}
	sameCall(t, s, asReplay(historyJSON(t, res)), "workbench_commit", commitInput("wb", `{"n":1,"task":"typed"}`, digest01))
	// The retry through the typed method, the manifest as raw JSON.
	res, err = s.Commit(ctx, workbench.CommitInput{ID: "wb", Manifest: json.RawMessage(`{"task":"typed","n":1}`), ContentDigestURI: digest01})
	if err != nil || !res.IdempotentReplay {
		t.Fatalf("retry %+v %v", res, err)
	}
	sameCall(t, s, historyJSON(t, res), "workbench_commit", commitInput("wb", `{"n":1,"task":"typed"}`, digest01))

	// replace, with a number whose text a raw manifest keeps ("1.0" is not
	// "1": another manifest digest).
	mustCall(t, s, "workbench_put_file", `{"id":"wb","section":"outputs","path":"b.txt","text":"b"}`)
	res, err = s.Commit(ctx, workbench.CommitInput{ID: "wb", Manifest: json.RawMessage(`{"n":1.0}`), ContentDigestURI: digest02, Replace: true})
	if err != nil || res.Generation != 2 || !res.Replace || res.IdempotentReplay {
		t.Fatalf("replace %+v %v", res, err)
	}
	sameCall(t, s, asReplay(historyJSON(t, res)), "workbench_commit", commitInput("wb", `{"n":1.0}`, digest02, true))

	// Refusals: a different commit without replace; a content digest the
	// schema refuses; no manifest at all.
	_, err = s.Commit(ctx, workbench.CommitInput{ID: "wb", Manifest: map[string]any{"n": 2}, ContentDigestURI: digest02})
	sameCallError(t, s, err, workbench.CodeWorkbenchCommitConflict, "workbench_commit", commitInput("wb", `{"n":2}`, digest02))
	_, err = s.Commit(ctx, workbench.CommitInput{ID: "wb", Manifest: map[string]any{}, ContentDigestURI: "sha256:AB"})
	sameCallError(t, s, err, workbench.CodeInvalidArguments, "workbench_commit", commitInput("wb", `{}`, "sha256:AB"))
	_, err = s.Commit(ctx, workbench.CommitInput{ID: "wb", ContentDigestURI: digest01})
	sameCallError(t, s, err, workbench.CodeInvalidArguments, "workbench_commit", `{"id":"wb","content_digest_uri":"`+digest01+`"}`)
}

// historyRef returns a pointer to v: an optional member of a typed input.
func historyRef[T any](v T) *T { return &v }

func TestSnapshotTyped(t *testing.T) {
	ctx := context.Background()
	// Two deployments with the same history and lease clock: a mint's id
	// is fresh every time, everything else is decided by the state.
	typed, _ := snapService(t)
	viaCall, _ := snapService(t)
	for _, s := range []*workbench.Service{typed, viaCall} {
		commitWorkbench(t, s, "wb")
	}
	for _, c := range []struct {
		in   workbench.SnapshotInput
		json string
	}{
		{workbench.SnapshotInput{ID: "wb", Name: historyRef("n"), Reason: historyRef("typed"), Metadata: map[string]any{"suite": "typed", "depth": map[string]any{"n": 2}}, TTLDays: historyRef[uint64](3)},
			`{"id":"wb","name":"n","reason":"typed","metadata":{"depth":{"n":2},"suite":"typed"},"ttl_days":3}`},
		// Defaults: no name, an annotation of nulls, 7 days and a warning.
		{workbench.SnapshotInput{ID: "wb"}, `{"id":"wb"}`},
	} {
		res, err := typed.Snapshot(ctx, c.in)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != "success" || res.SnapshotID == 0 || (res.ExpiryWarning != "") != (c.in.TTLDays == nil) {
			t.Fatalf("mint %s: %+v", c.json, res)
		}
		want, ok := viaCall.Call(ctx, "workbench_snapshot", []byte(c.json))
		var callID struct {
			SnapshotID json.Number `json:"snapshot_id"`
		}
		if !ok || json.Unmarshal(want, &callID) != nil {
			t.Fatalf("call %s: %s", c.json, want)
		}
		got := strings.Replace(historyJSON(t, res), `"snapshot_id":`+historyUint(res.SnapshotID), `"snapshot_id":`+callID.SnapshotID.String(), 1)
		if got != string(want) {
			t.Fatalf("mint %s:\ntyped %s\ncall  %s", c.json, got, want)
		}
	}
	// Metadata that is not an object; a workbench without a commit.
	_, err := typed.Snapshot(ctx, workbench.SnapshotInput{ID: "wb", Metadata: []any{1}})
	sameCallError(t, typed, err, workbench.CodeInvalidArguments, "workbench_snapshot", `{"id":"wb","metadata":[1]}`)
	mustCall(t, typed, "workbench_create", `{"id":"fresh"}`)
	_, err = typed.Snapshot(ctx, workbench.SnapshotInput{ID: "fresh"})
	sameCallError(t, typed, err, workbench.CodeInvalidState, "workbench_snapshot", `{"id":"fresh"}`)
}

func TestSnapshotRenewTyped(t *testing.T) {
	ctx := context.Background()
	s, clk := snapService(t)
	commitWorkbench(t, s, "wb")
	_, id := mint(t, s, "wb", map[string]any{"name": "n", "ttl_days": 3})
	clk.advance(day)

	// By id: the renewal moves the deadline, its repeat finds it there.
	res, err := s.SnapshotRenew(ctx, workbench.SnapshotRenewInput{ID: "wb", SnapshotID: historyRef(historyParseUint(t, id)), TTLDays: historyRef[uint64](5)})
	if err != nil || !res.Renewed || res.Status != "success" || historyUint(res.SnapshotID) != id || res.LeaseExpiresAt != uint64(t0)+6*86_400_000 {
		t.Fatalf("renew %+v %v", res, err)
	}
	sameCall(t, s, historyJSON(t, res), "workbench_snapshot_renew", `{"id":"wb","snapshot_id":`+id+`,"ttl_days":5}`)
	// By name, with the default lease.
	res, err = s.SnapshotRenew(ctx, workbench.SnapshotRenewInput{ID: "wb", Name: historyRef("n")})
	if err != nil || res.TTLDays != 7 {
		t.Fatalf("renew by name %+v %v", res, err)
	}
	sameCall(t, s, historyJSON(t, res), "workbench_snapshot_renew", `{"id":"wb","name":"n"}`)

	// Both selectors; a snapshot that does not exist; a retired one.
	_, err = s.SnapshotRenew(ctx, workbench.SnapshotRenewInput{ID: "wb", SnapshotID: historyRef[uint64](1), Name: historyRef("n")})
	sameCallError(t, s, err, workbench.CodeInvalidArguments, "workbench_snapshot_renew", `{"id":"wb","snapshot_id":1,"name":"n"}`)
	_, err = s.SnapshotRenew(ctx, workbench.SnapshotRenewInput{ID: "wb", Name: historyRef("other")})
	sameCallError(t, s, err, workbench.CodeSnapshotNotFound, "workbench_snapshot_renew", `{"id":"wb","name":"other"}`)
	mustCall(t, s, "workbench_snapshot_retire", `{"id":"wb","name":"n"}`)
	_, err = s.SnapshotRenew(ctx, workbench.SnapshotRenewInput{ID: "wb", SnapshotID: historyRef(historyParseUint(t, id))})
	sameCallError(t, s, err, workbench.CodeInvalidState, "workbench_snapshot_renew", `{"id":"wb","snapshot_id":`+id+`}`)
}

func TestSnapshotRetireTyped(t *testing.T) {
	ctx := context.Background()
	s, _ := snapService(t)
	commitWorkbench(t, s, "wb")
	_, named := mint(t, s, "wb", map[string]any{"name": "n"})
	_, plain := mint(t, s, "wb", nil)

	// The first retirement retires it and records the reason; its repeat
	// changes nothing and reports the same snapshot, retired:false.
	res, err := s.SnapshotRetire(ctx, workbench.SnapshotRetireInput{ID: "wb", SnapshotID: historyRef(historyParseUint(t, named)), Reason: historyRef("done")})
	if err != nil || !res.Retired || res.State != "retired" || string(res.RetireAnnotation) != `{"metadata":null,"reason":"done"}` {
		t.Fatalf("retire %+v %v", res, err)
	}
	first := historyJSON(t, res)
	sameCall(t, s, strings.Replace(first, `"retired":true`, `"retired":false`, 1), "workbench_snapshot_retire", `{"id":"wb","snapshot_id":`+named+`,"reason":"done"}`)
	res, err = s.SnapshotRetire(ctx, workbench.SnapshotRetireInput{ID: "wb", Name: historyRef("n")})
	if err != nil || res.Retired {
		t.Fatalf("retire again %+v %v", res, err)
	}
	sameCall(t, s, historyJSON(t, res), "workbench_snapshot_retire", `{"id":"wb","name":"n"}`)

	// Without a reason and a name: null annotation, null name.
	res, err = s.SnapshotRetire(ctx, workbench.SnapshotRetireInput{ID: "wb", SnapshotID: historyRef(historyParseUint(t, plain))})
	if err != nil || !res.Retired || res.Name != nil || res.RetireAnnotation != nil {
		t.Fatalf("retire unnamed %+v %v", res, err)
	}
	sameCall(t, s, strings.Replace(historyJSON(t, res), `"retired":true`, `"retired":false`, 1), "workbench_snapshot_retire", `{"id":"wb","snapshot_id":`+plain+`}`)

	// No selector; a workbench that does not exist.
	_, err = s.SnapshotRetire(ctx, workbench.SnapshotRetireInput{ID: "wb"})
	sameCallError(t, s, err, workbench.CodeInvalidArguments, "workbench_snapshot_retire", `{"id":"wb"}`)
	_, err = s.SnapshotRetire(ctx, workbench.SnapshotRetireInput{ID: "nowhere", Name: historyRef("n")})
	sameCallError(t, s, err, workbench.CodeSnapshotNotFound, "workbench_snapshot_retire", `{"id":"nowhere","name":"n"}`)
}

func TestSnapshotListTyped(t *testing.T) {
	ctx := context.Background()
	s, clk := snapService(t)
	commitWorkbench(t, s, "wb")

	// No snapshot yet: an empty list, not null.
	res, err := s.SnapshotList(ctx, workbench.SnapshotListInput{ID: "wb"})
	if err != nil || res.SnapshotCount != 0 || len(res.Snapshots) != 0 {
		t.Fatalf("empty list %+v %v", res, err)
	}
	sameCall(t, s, historyJSON(t, res), "workbench_snapshot_list", `{"id":"wb"}`)
	if got := historyJSON(t, res); !strings.Contains(got, `"snapshots":[]`) {
		t.Fatalf("empty list printed %s", got)
	}

	// Alive, retired with a reason, and expired.
	_, retired := mint(t, s, "wb", map[string]any{"name": "n", "metadata": map[string]any{"k": "v"}, "ttl_days": 30})
	mint(t, s, "wb", map[string]any{"ttl_days": 30})
	mint(t, s, "wb", map[string]any{"ttl_days": 1})
	mustCall(t, s, "workbench_snapshot_retire", `{"id":"wb","snapshot_id":`+retired+`,"reason":"done"}`)
	clk.advance(day + time.Second)
	res, err = s.SnapshotList(ctx, workbench.SnapshotListInput{ID: "wb"})
	if err != nil || res.SnapshotCount != 3 || len(res.Snapshots) != 3 {
		t.Fatalf("list %+v %v", res, err)
	}
	if got := [3]string{res.Snapshots[0].State, res.Snapshots[1].State, res.Snapshots[2].State}; got != [3]string{"retired", "alive", "expired"} {
		t.Fatalf("states %v", got)
	}
	sameCall(t, s, historyJSON(t, res), "workbench_snapshot_list", `{"id":"wb"}`)

	_, err = s.SnapshotList(ctx, workbench.SnapshotListInput{ID: "nowhere"})
	sameCallError(t, s, err, workbench.CodeSnapshotNotFound, "workbench_snapshot_list", `{"id":"nowhere"}`)
}

func historyUint(n uint64) string { return strconv.FormatUint(n, 10) }

func historyParseUint(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRestoreTyped(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	commit := restoreSource(t, s, "src", 4)
	snap := mintSnapshot(t, s, "src")
	mustCall(t, s, "workbench_snapshot", `{"id":"src","name":"frozen"}`)

	for _, c := range []struct {
		in  workbench.RestoreInput
		sel string
	}{
		{workbench.RestoreInput{ID: "src", DestinationID: "by-id", AtSnapshot: snap}, `"at_snapshot":` + historyUint(snap)},
		{workbench.RestoreInput{ID: "src", DestinationID: "by-name", AtSnapshot: "frozen"}, `"at_snapshot":"frozen"`},
		{workbench.RestoreInput{ID: "src", DestinationID: "by-commit", AtCommit: commit}, `"at_commit":"` + commit + `"`},
	} {
		input := restoreIn(c.in.ID, c.in.DestinationID, c.sel)
		res, err := s.Restore(ctx, c.in)
		if err != nil {
			t.Fatalf("%s: %v", input, err)
		}
		if res.Status != "success" || res.IdempotentReplay || (res.CommitID == nil) == (c.in.AtCommit != "") || (res.SnapshotID == nil) != (res.ReadVersion == nil) {
			t.Fatalf("%s: %+v", input, res)
		}
		// The exact retry through Call replays the same bytes; the typed
		// retry answers the replay's bytes.
		sameCall(t, s, asReplay(historyJSON(t, res)), "workbench_restore", input)
		res, err = s.Restore(ctx, c.in)
		if err != nil || !res.IdempotentReplay {
			t.Fatalf("%s retried: %+v %v", input, res, err)
		}
		sameCall(t, s, historyJSON(t, res), "workbench_restore", input)
	}

	// Both sources; neither; an upper-case commit id; a destination that
	// another restore made.
	_, err := s.Restore(ctx, workbench.RestoreInput{ID: "src", DestinationID: "x", AtSnapshot: snap, AtCommit: commit})
	sameCallError(t, s, err, workbench.CodeInvalidArguments, "workbench_restore", restoreIn("src", "x", `"at_snapshot":`+historyUint(snap)+`,"at_commit":"`+commit+`"`))
	_, err = s.Restore(ctx, workbench.RestoreInput{ID: "src", DestinationID: "x"})
	sameCallError(t, s, err, workbench.CodeInvalidArguments, "workbench_restore", `{"id":"src","destination_id":"x"}`)
	upper := strings.ToUpper(commit)
	_, err = s.Restore(ctx, workbench.RestoreInput{ID: "src", DestinationID: "x", AtCommit: upper})
	sameCallError(t, s, err, workbench.CodeInvalidArguments, "workbench_restore", restoreIn("src", "x", `"at_commit":"`+upper+`"`))
	_, err = s.Restore(ctx, workbench.RestoreInput{ID: "src", DestinationID: "by-id", AtCommit: commit})
	sameCallError(t, s, err, workbench.CodeConflict, "workbench_restore", restoreIn("src", "by-id", `"at_commit":"`+commit+`"`))
}
