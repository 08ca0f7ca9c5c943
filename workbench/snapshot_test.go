package workbench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The snapshot tools against the corners of the contract's snapshot
// family, the lease clock and the reaper, and frozen reads.

// Transcript shapes of the snapshot tools' results.
const (
	shapeSnapshot = `{"annotation": {"metadata": {"suite": "facade"}, "reason": "test"},
  "lease_expires_at": 259200000, "lease_expires_unix_ms": 259200000, "name": "before-edit",
  "path": "/agents/test/wb/wb-main", "read_version": 46, "snapshot_id": 1, "state": "alive",
  "status": "success", "ttl_days": 3, "workbench_id": "wb-main"}`
	shapeSnapshotRenew = `{"annotation": {"metadata": {"suite": "facade"}, "reason": "test"},
  "lease_expires_at": 432000000, "lease_expires_unix_ms": 432000000, "name": "before-edit",
  "path": "/agents/test/wb/wb-main", "read_version": 46, "renewed": true, "snapshot_id": 1,
  "state": "alive", "status": "success", "ttl_days": 5, "workbench_id": "wb-main"}`
	shapeSnapshotRetire = `{"name": "before-edit", "path": "/agents/test/wb/wb-main",
  "retire_annotation": {"metadata": null, "reason": "done"}, "retired": true, "snapshot_id": 1,
  "state": "retired", "status": "success", "workbench_id": "wb-main"}`
	shapeSnapshotList = `{"path": "/agents/test/wb/wb-main", "snapshot_count": 1,
  "snapshots": [{"annotation": {"metadata": {"suite": "facade"}, "reason": "test"},
    "lease_expires_at": 432000000, "lease_expires_unix_ms": 432000000, "name": "before-edit",
    "read_version": 46, "retire_annotation": {"metadata": null, "reason": "done"}, "snapshot_id": 1,
    "state": "retired"}],
  "status": "success", "workbench_id": "wb-main"}`
)

// fakeClock is a wall clock the test sets.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) Now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) set(ms int64)            { c.ms.Store(ms) }
func (c *fakeClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// t0 is the fake clock's start: a round number of Unix milliseconds.
const t0 = int64(1_800_000_000_000)

const day = 24 * time.Hour

// snapService opens a Service whose lease clock the test drives, with a
// one-minute grace.
func snapService(t *testing.T) (*workbench.Service, *fakeClock) {
	t.Helper()
	clk := &fakeClock{}
	clk.set(t0)
	s := newServiceOn(t, mem.NewBucket(), workbench.Options{Now: clk.Now, LeaseGrace: time.Minute})
	return s, clk
}

// commitWorkbench commits workbench id through workbench_commit, replacing
// any earlier commit head.
func commitWorkbench(t *testing.T, s *workbench.Service, id string) {
	t.Helper()
	mustCall(t, s, "workbench_commit", js(map[string]any{
		"id": id, "manifest": map[string]any{"task": "snapshot tests"},
		"content_digest_uri": "sha256:" + strings.Repeat("01", 32), "replace": true,
	}))
}

func incarnationOf(t *testing.T, s *workbench.Service, id string) nokv.IncarnationID {
	t.Helper()
	ctx := context.Background()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := nokv.WorkspaceCurrentKey{Root: s.Root(), WorkbenchID: id}.Encode()
	b, ok, err := sn.Get(ctx, nokv.FamilyWorkspaceCurrent, key)
	if err != nil || !ok {
		t.Fatalf("workbench %s: %v %v", id, ok, err)
	}
	ws, err := nokv.DecodeWorkspaceCurrent(b)
	if err != nil {
		t.Fatal(err)
	}
	return ws.Incarnation
}

// committedBench creates workbench id with two files and commits it.
func committedBench(t *testing.T, s *workbench.Service, id string) {
	t.Helper()
	putFiles(t, s, id,
		workbench.SeedFile{Path: "outputs/report.txt", Body: []byte("Hello world\nsecond\nthird\n")},
		workbench.SeedFile{Path: "logs/run.log", Body: []byte("started\n")})
	commitWorkbench(t, s, id)
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// mint mints a snapshot of id with the extra members of in and returns
// the result and the snapshot id as its exact decimal text.
func mint(t *testing.T, s *workbench.Service, id string, in map[string]any) (map[string]any, string) {
	t.Helper()
	m := map[string]any{"id": id}
	for k, v := range in {
		m[k] = v
	}
	r := mustCall(t, s, "workbench_snapshot", js(m))
	return r, r["snapshot_id"].(json.Number).String()
}

func unum(v any) uint64 {
	n, err := strconv.ParseUint(v.(json.Number).String(), 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// holds returns the engine holds of the current root, owner → root.
func holds(t *testing.T, s *workbench.Service) map[string]string {
	t.Helper()
	sn, err := s.Store().Pin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, h := range sn.Root().Holds {
		out[h.Owner] = h.Root.String()
	}
	return out
}

// historyHold reads snapshot id's HistoryHold row at the current head.
func historyHold(t *testing.T, s *workbench.Service, id string) (nokv.HistoryHold, bool) {
	t.Helper()
	ctx := context.Background()
	sid, err := nokv.ParseSnapshotID(id)
	if err != nil {
		t.Fatal(err)
	}
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := nokv.SnapshotHoldKey(s.Root(), sid).Encode()
	b, ok, err := sn.Get(ctx, nokv.FamilyHistoryHold, key)
	if err != nil || !ok {
		return nokv.HistoryHold{}, false
	}
	h, err := nokv.DecodeHistoryHold(b)
	if err != nil {
		t.Fatal(err)
	}
	return h, true
}

func TestSnapshotMintResult(t *testing.T) {
	s, _ := snapService(t)
	committedBench(t, s, "wb-main")
	r, id := mint(t, s, "wb-main", map[string]any{"name": "before-edit", "reason": "test", "metadata": map[string]any{"suite": "facade"}, "ttl_days": 3})
	checkShape(t, r, resultShape{want: shapeSnapshot})
	if got, want := unum(r["lease_expires_at"]), uint64(t0)+3*86_400_000; got != want {
		t.Fatalf("lease_expires_at %d, want %d (now + 3 days)", got, want)
	}
	if r["lease_expires_unix_ms"].(json.Number) != r["lease_expires_at"].(json.Number) {
		t.Fatalf("lease_expires_unix_ms %v differs from lease_expires_at %v", r["lease_expires_unix_ms"], r["lease_expires_at"])
	}
	if _, warned := r["expiry_warning"]; warned {
		t.Fatal("expiry_warning given although ttl_days was")
	}
	if a := js(r["annotation"]); a != `{"metadata":{"suite":"facade"},"reason":"test"}` {
		t.Fatalf("annotation %s", a)
	}
	// The snapshot holds the state it read: its read version is a commit
	// the workbench had reached, and its id is held in the engine.
	if rv := unum(r["read_version"]); rv == 0 {
		t.Fatal("read_version 0")
	}
	if _, ok := holds(t, s)["snapshot/"+id]; !ok {
		t.Fatalf("no engine hold snapshot/%s in %v", id, holds(t, s))
	}
	if h, ok := historyHold(t, s, id); !ok || h.ReadVersion != unum(r["read_version"]) || h.State != nokv.HistoryHoldStateActive {
		t.Fatalf("HistoryHold %+v %v, want Active at read version %v", h, ok, r["read_version"])
	}

	// Defaults: 7 days, a warning, a null name and an annotation of nulls.
	r2, id2 := mint(t, s, "wb-main", nil)
	if id2 == id {
		t.Fatal("two mints share an id: a mint is not idempotent")
	}
	if unum(r2["ttl_days"]) != 7 || unum(r2["lease_expires_at"]) != uint64(t0)+7*86_400_000 {
		t.Fatalf("default lease: %v", r2)
	}
	if w, ok := r2["expiry_warning"].(string); !ok || w == "" {
		t.Fatalf("expiry_warning %v", r2["expiry_warning"])
	}
	if r2["name"] != nil || js(r2["annotation"]) != `{"metadata":null,"reason":null}` {
		t.Fatalf("name %v annotation %s", r2["name"], js(r2["annotation"]))
	}
}

func TestSnapshotMintRefusals(t *testing.T) {
	s, _ := snapService(t)
	got, ok := call(t, s, "workbench_snapshot", `{"id":"nope"}`)
	wantToolError(t, got, ok, "NotFound", false, "", map[string]any{"source": "cairn", "code": "NotFound", "conflict": nil, "current_generation": nil})

	putFiles(t, s, "wb", workbench.SeedFile{Path: "outputs/a.txt", Body: []byte("a")})
	got, ok = call(t, s, "workbench_snapshot", `{"id":"wb"}`)
	wantToolError(t, got, ok, "InvalidState", false, "only a committed workbench can be snapshotted", map[string]any{"workbench_id": "wb"})

	commitWorkbench(t, s, "wb")
	for _, c := range []struct{ in, code string }{
		{`{"id":"wb","ttl_days":0}`, "InvalidArguments"},
		{`{"id":"wb","ttl_days":91}`, "InvalidArguments"},
		{`{"id":"wb","ttl_days":1.5}`, "InvalidArguments"},
		{`{"id":"wb","name":""}`, "InvalidArguments"},
		{`{"id":"wb","name":"a\u0000b"}`, "InvalidArguments"},
		{`{"id":"wb","name":"` + strings.Repeat("n", 129) + `"}`, "InvalidArguments"},
		{`{"id":"wb","reason":""}`, "InvalidArguments"},
		{`{"id":"wb","metadata":{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{}}}}}}}}}}`, "InvalidArguments"},
		{`{"id":"wb","metadata":{"big":"` + strings.Repeat("x", 4096) + `"}}`, "InvalidArguments"},
	} {
		got, ok := call(t, s, "workbench_snapshot", c.in)
		if ok || got["code"] != c.code {
			t.Errorf("%.80s: %v, want %s", c.in, got, c.code)
		}
	}
	// Eight levels of metadata, and ttl 1 and 90, are within bounds.
	mint(t, s, "wb", map[string]any{"ttl_days": 1, "metadata": map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": map[string]any{"e": map[string]any{"f": map[string]any{"g": map[string]any{}}}}}}}}})
	mint(t, s, "wb", map[string]any{"ttl_days": 90})
	if n := unum(mustCall(t, s, "workbench_snapshot_list", `{"id":"wb"}`)["snapshot_count"]); n != 2 {
		t.Fatalf("%d snapshots after refusals, want the 2 accepted", n)
	}
}

func TestSnapshotRenew(t *testing.T) {
	s, clk := snapService(t)
	committedBench(t, s, "wb-main")
	_, id := mint(t, s, "wb-main", map[string]any{"name": "before-edit", "reason": "test", "metadata": map[string]any{"suite": "facade"}, "ttl_days": 3})

	clk.advance(time.Hour)
	r := mustCall(t, s, "workbench_snapshot_renew", `{"id":"wb-main","snapshot_id":`+id+`,"ttl_days":5}`)
	checkShape(t, r, resultShape{want: shapeSnapshotRenew})
	extended := uint64(t0) + uint64(time.Hour.Milliseconds()) + 5*86_400_000
	if got := unum(r["lease_expires_at"]); got != extended {
		t.Fatalf("renewed to %d, want %d", got, extended)
	}

	// Never shortens: a shorter renewal returns the record unchanged and
	// still says renewed; by name it finds the same snapshot.
	r = mustCall(t, s, "workbench_snapshot_renew", `{"id":"wb-main","name":"before-edit","ttl_days":1}`)
	if unum(r["lease_expires_at"]) != extended || r["renewed"] != true || r["snapshot_id"].(json.Number).String() != id || unum(r["ttl_days"]) != 1 {
		t.Fatalf("shorter renewal: %v", r)
	}
	// Default ttl_days is 7.
	r = mustCall(t, s, "workbench_snapshot_renew", `{"id":"wb-main","name":"before-edit"}`)
	if unum(r["ttl_days"]) != 7 || unum(r["lease_expires_at"]) != uint64(t0)+uint64(time.Hour.Milliseconds())+7*86_400_000 {
		t.Fatalf("default renewal: %v", r)
	}

	// Expired but not reaped (no reap ran): a renewal revives it.
	s2, clk2 := snapService(t)
	committedBench(t, s2, "wb")
	_, id2 := mint(t, s2, "wb", map[string]any{"ttl_days": 1})
	clk2.advance(2 * day)
	got, ok := call(t, s2, "workbench_stat", `{"id":"wb","section":"outputs","path":"report.txt","at_snapshot":`+id2+`}`)
	wantToolError(t, got, ok, "SnapshotExpired", false, "", map[string]any{"source": "cairn", "code": "SnapshotExpired", "conflict": nil, "current_generation": nil})
	r = mustCall(t, s2, "workbench_snapshot_renew", `{"id":"wb","snapshot_id":`+id2+`,"ttl_days":2}`)
	if r["state"] != "alive" || unum(r["lease_expires_at"]) != uint64(t0)+4*86_400_000 {
		t.Fatalf("revived: %v", r)
	}
	mustCall(t, s2, "workbench_stat", `{"id":"wb","section":"outputs","path":"report.txt","at_snapshot":`+id2+`}`)

	// Unknown id and name, both or neither selector, id 0, no workbench.
	for _, c := range []struct{ in, code string }{
		{`{"id":"wb","snapshot_id":12345}`, "SnapshotNotFound"},
		{`{"id":"wb","name":"never"}`, "SnapshotNotFound"},
		{`{"id":"ghost","snapshot_id":` + id2 + `}`, "SnapshotNotFound"},
		{`{"id":"wb","snapshot_id":` + id2 + `,"name":"x"}`, "InvalidArguments"},
		{`{"id":"wb"}`, "InvalidArguments"},
		{`{"id":"wb","snapshot_id":null,"name":null}`, "InvalidArguments"},
		{`{"id":"wb","snapshot_id":0}`, "InvalidState"},
		{`{"id":"wb","snapshot_id":` + id2 + `,"ttl_days":91}`, "InvalidArguments"},
	} {
		got, ok := call(t, s2, "workbench_snapshot_renew", c.in)
		if ok || got["code"] != c.code {
			t.Errorf("%s: %v, want %s", c.in, got, c.code)
		}
	}
	got, ok = call(t, s2, "workbench_snapshot_renew", `{"id":"wb","snapshot_id":12345}`)
	wantToolError(t, got, ok, "SnapshotNotFound", false, "", map[string]any{"source": "cairn"})
}

// listStates returns each snapshot's state in workbench_snapshot_list,
// by id text.
func listStates(t *testing.T, s *workbench.Service, id string) map[string]string {
	t.Helper()
	r := mustCall(t, s, "workbench_snapshot_list", js(map[string]any{"id": id}))
	out := map[string]string{}
	for _, e := range r["snapshots"].([]any) {
		m := e.(map[string]any)
		out[m["snapshot_id"].(json.Number).String()] = m["state"].(string)
	}
	return out
}

func TestSnapshotRetire(t *testing.T) {
	s, _ := snapService(t)
	committedBench(t, s, "wb-main")
	_, id := mint(t, s, "wb-main", map[string]any{"name": "before-edit", "reason": "test", "metadata": map[string]any{"suite": "facade"}, "ttl_days": 3})
	mustCall(t, s, "workbench_snapshot_renew", `{"id":"wb-main","snapshot_id":`+id+`,"ttl_days":5}`)

	r := mustCall(t, s, "workbench_snapshot_retire", `{"id":"wb-main","snapshot_id":`+id+`,"reason":"done"}`)
	checkShape(t, r, resultShape{want: shapeSnapshotRetire})
	if _, held := holds(t, s)["snapshot/"+id]; held {
		t.Fatal("a retired snapshot still holds its root")
	}
	if _, ok := historyHold(t, s, id); ok {
		t.Fatal("a retired snapshot's HistoryHold row remains")
	}
	// An exact retry, or one with another reason, by id or by name, reports
	// retired:false and the first retirement's annotation.
	for _, in := range []string{
		`{"id":"wb-main","snapshot_id":` + id + `,"reason":"done"}`,
		`{"id":"wb-main","name":"before-edit","reason":"other"}`,
		`{"id":"wb-main","snapshot_id":` + id + `}`,
	} {
		r := mustCall(t, s, "workbench_snapshot_retire", in)
		if r["retired"] != false || r["state"] != "retired" || js(r["retire_annotation"]) != `{"metadata":null,"reason":"done"}` {
			t.Fatalf("retry %s: %v", in, r)
		}
	}
	list := mustCall(t, s, "workbench_snapshot_list", `{"id":"wb-main"}`)
	checkShape(t, list, resultShape{want: shapeSnapshotList})

	// Retired cannot be renewed or read.
	got, ok := call(t, s, "workbench_snapshot_renew", `{"id":"wb-main","snapshot_id":`+id+`}`)
	wantToolError(t, got, ok, "InvalidState", false, "", map[string]any{"source": "cairn", "code": "PreconditionFailed", "conflict": "SnapshotLifecycle", "current_generation": nil})
	got, ok = call(t, s, "workbench_list", `{"id":"wb-main","at_snapshot":`+id+`}`)
	wantToolError(t, got, ok, "SnapshotExpired", false, "", expiredDetails)

	// A retirement without a reason records none.
	_, id2 := mint(t, s, "wb-main", nil)
	r = mustCall(t, s, "workbench_snapshot_retire", `{"id":"wb-main","snapshot_id":`+id2+`}`)
	if r["retired"] != true || r["retire_annotation"] != nil || r["name"] != nil {
		t.Fatalf("retire without reason: %v", r)
	}
	for _, c := range []struct{ in, code string }{
		{`{"id":"wb-main","snapshot_id":999}`, "SnapshotNotFound"},
		{`{"id":"wb-main","name":"nope"}`, "SnapshotNotFound"},
		{`{"id":"wb-main"}`, "InvalidArguments"},
		{`{"id":"wb-main","snapshot_id":1,"name":"x"}`, "InvalidArguments"},
		{`{"id":"wb-main","snapshot_id":0}`, "InvalidState"},
	} {
		got, ok := call(t, s, "workbench_snapshot_retire", c.in)
		if ok || got["code"] != c.code {
			t.Errorf("%s: %v, want %s", c.in, got, c.code)
		}
	}
	workbench.FsckCleanForTest(t, s)
}

// setConsumers rewrites snapshot id's consumer count, as a restore that
// consumes it would.
func setConsumers(t *testing.T, s *workbench.Service, wb, id string, n uint64) {
	t.Helper()
	sid, err := nokv.ParseSnapshotID(id)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := nokv.SnapshotRefKey{Root: s.Root(), Incarnation: incarnationOf(t, s, wb), Snapshot: sid}.Encode()
	if _, err := s.Store().Do(context.Background(), head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		b, ok, err := tx.Get(nokv.FamilySnapshotRef, key)
		if err != nil || !ok {
			return nil, fmt.Errorf("snapshot ref %s: %v %v", id, ok, err)
		}
		ref, err := nokv.DecodeSnapshotRef(b)
		if err != nil {
			return nil, err
		}
		ref.ConsumerCount = n
		ref.ConsumerEpoch++
		v, err := ref.Encode()
		if err != nil {
			return nil, err
		}
		return nil, tx.Put(nokv.FamilySnapshotRef, key, v)
	}}); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotRetireWithConsumers(t *testing.T) {
	s, clk := snapService(t)
	committedBench(t, s, "wb")
	_, id := mint(t, s, "wb", map[string]any{"ttl_days": 1})
	setConsumers(t, s, "wb", id, 1)
	got, ok := call(t, s, "workbench_snapshot_retire", `{"id":"wb","snapshot_id":`+id+`}`)
	wantToolError(t, got, ok, "ForkRetentionActive", false, "", map[string]any{"source": "cairn", "code": "PreconditionFailed", "conflict": "SnapshotLifecycle", "current_generation": nil})
	// Nor does the reaper end it while it is consumed.
	clk.advance(3 * day)
	if n, err := s.Reap(context.Background()); err != nil || n != 0 {
		t.Fatalf("reaped %d (%v) a consumed snapshot", n, err)
	}
	setConsumers(t, s, "wb", id, 0)
	if r := mustCall(t, s, "workbench_snapshot_retire", `{"id":"wb","snapshot_id":`+id+`}`); r["retired"] != true {
		t.Fatalf("retire once released: %v", r)
	}
}

func TestSnapshotAliasLatestMintWins(t *testing.T) {
	s, _ := snapService(t)
	committedBench(t, s, "wb")
	_, older := mint(t, s, "wb", map[string]any{"name": "n"})
	replaceFile(t, s, "wb", "outputs/report.txt", []byte("changed\n"))
	_, newer := mint(t, s, "wb", map[string]any{"name": "n"})

	// The name reads, renews and resolves to the newest mint.
	r := mustCall(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"report.txt","at_snapshot":"n"}`)
	if js(r["items"]) != `[{"index":0,"value":"changed"}]` || r["at_snapshot"] != "n" {
		t.Fatalf("read at name: %v", r)
	}
	r = mustCall(t, s, "workbench_snapshot_renew", `{"id":"wb","name":"n"}`)
	if r["snapshot_id"].(json.Number).String() != newer {
		t.Fatalf("name renews %v, want the newer %s", r["snapshot_id"], newer)
	}
	// The older stays reachable by id, with its own state.
	r = mustCall(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"report.txt","at_snapshot":`+older+`}`)
	if !strings.Contains(js(r["items"]), "Hello world") {
		t.Fatalf("read of the older by id: %v", r)
	}
	// Retiring the newest by name does not fall back to the older one.
	mustCall(t, s, "workbench_snapshot_retire", `{"id":"wb","name":"n"}`)
	got, ok := call(t, s, "workbench_snapshot_renew", `{"id":"wb","name":"n"}`)
	wantToolError(t, got, ok, "InvalidState", false, "", lifecycleDetails)
	got, ok = call(t, s, "workbench_stat", `{"id":"wb","section":"outputs","path":"report.txt","at_snapshot":"n"}`)
	wantToolError(t, got, ok, "SnapshotExpired", false, "", expiredDetails)
	if r := mustCall(t, s, "workbench_snapshot_retire", `{"id":"wb","name":"n"}`); r["retired"] != false || r["snapshot_id"].(json.Number).String() != newer {
		t.Fatalf("retire by name again: %v", r)
	}
	states := listStates(t, s, "wb")
	if states[older] != "alive" || states[newer] != "retired" {
		t.Fatalf("states %v", states)
	}
	// Both report the name they were minted with.
	for _, e := range mustCall(t, s, "workbench_snapshot_list", `{"id":"wb"}`)["snapshots"].([]any) {
		if e.(map[string]any)["name"] != "n" {
			t.Fatalf("list entry %v", e)
		}
	}
	workbench.FsckCleanForTest(t, s)
}

func TestSnapshotListOrderAndStates(t *testing.T) {
	s, clk := snapService(t)
	committedBench(t, s, "wb")
	if r := mustCall(t, s, "workbench_snapshot_list", `{"id":"wb"}`); unum(r["snapshot_count"]) != 0 || len(r["snapshots"].([]any)) != 0 {
		t.Fatalf("no snapshots yet: %v", r)
	}
	_, short := mint(t, s, "wb", map[string]any{"ttl_days": 1})
	_, retired := mint(t, s, "wb", map[string]any{"ttl_days": 30})
	_, long := mint(t, s, "wb", map[string]any{"ttl_days": 30})
	_, expiring := mint(t, s, "wb", map[string]any{"ttl_days": 2})
	mustCall(t, s, "workbench_snapshot_retire", `{"id":"wb","snapshot_id":`+retired+`}`)

	// A day and a half on: short is expired, within its grace at first.
	clk.advance(day + 30*time.Second)
	r := mustCall(t, s, "workbench_snapshot_list", `{"id":"wb"}`)
	var order []string
	for _, e := range r["snapshots"].([]any) {
		order = append(order, e.(map[string]any)["snapshot_id"].(json.Number).String())
	}
	if want := []string{short, retired, long, expiring}; strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("order %v, want mint order %v", order, want)
	}
	want := map[string]string{short: "expired", retired: "retired", long: "alive", expiring: "alive"}
	if got := listStates(t, s, "wb"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	// Past the grace, the list's reap ends it.
	clk.advance(time.Minute)
	want[short] = "reaped"
	if got := listStates(t, s, "wb"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	// The unknown workbench is a snapshot lookup miss.
	got, ok := call(t, s, "workbench_snapshot_list", `{"id":"ghost"}`)
	wantToolError(t, got, ok, "SnapshotNotFound", false, "", map[string]any{"source": "cairn"})
	workbench.FsckCleanForTest(t, s)
}

func TestSnapshotReaperWaitsOutTheGrace(t *testing.T) {
	ctx := context.Background()
	s, clk := snapService(t)
	committedBench(t, s, "wb")
	_, id := mint(t, s, "wb", map[string]any{"name": "n", "ttl_days": 1})
	if _, ok := holds(t, s)["snapshot/"+id]; !ok {
		t.Fatal("no hold after the mint")
	}
	clk.advance(day + time.Minute - time.Millisecond) // deadline + grace - 1 ms
	if n, err := s.Reap(ctx); err != nil || n != 0 {
		t.Fatalf("reaped %d (%v) inside the grace", n, err)
	}
	if _, ok := holds(t, s)["snapshot/"+id]; !ok {
		t.Fatal("hold gone inside the grace")
	}
	clk.advance(time.Millisecond)
	if n, err := s.Reap(ctx); err != nil || n != 1 {
		t.Fatalf("reaped %d (%v) at deadline + grace, want 1", n, err)
	}
	if h := holds(t, s); len(h) != 0 {
		t.Fatalf("holds after the reap: %v", h)
	}
	if _, ok := historyHold(t, s, id); ok {
		t.Fatal("the HistoryHold row outlived the reap")
	}
	if st := listStates(t, s, "wb")[id]; st != "reaped" {
		t.Fatalf("state %q", st)
	}
	// Reaped: renew and reads are SnapshotExpired, retire replays false.
	got, ok := call(t, s, "workbench_snapshot_renew", `{"id":"wb","snapshot_id":`+id+`}`)
	wantToolError(t, got, ok, "SnapshotExpired", false, "", expiredDetails)
	got, ok = call(t, s, "workbench_read", `{"id":"wb","section":"logs","path":"run.log","at_snapshot":"n"}`)
	wantToolError(t, got, ok, "SnapshotExpired", false, "", expiredDetails)
	r := mustCall(t, s, "workbench_snapshot_retire", `{"id":"wb","name":"n","reason":"late"}`)
	if r["retired"] != false || r["state"] != "reaped" || r["retire_annotation"] != nil {
		t.Fatalf("retire of a reaped snapshot: %v", r)
	}
	if n, err := s.Reap(ctx); err != nil || n != 0 {
		t.Fatalf("a second reap ended %d (%v)", n, err)
	}
	workbench.FsckCleanForTest(t, s)
}

func TestSnapshotReaperWaitsOutAClockRegression(t *testing.T) {
	ctx := context.Background()
	s, clk := snapService(t)
	committedBench(t, s, "wb")
	_, id := mint(t, s, "wb", map[string]any{"ttl_days": 1})
	_, later := mint(t, s, "wb", map[string]any{"ttl_days": 90})
	// A renewal ten days on moves the lease clock's high-water mark there
	// (a renewal does not reap).
	clk.set(t0 + (10 * day).Milliseconds())
	mustCall(t, s, "workbench_snapshot_renew", `{"id":"wb","snapshot_id":`+later+`}`)
	// The wall clock goes back to day 5: well past the first lease and its
	// grace, but behind the high-water mark. Nothing is reaped, and the
	// lease stays expired (the lease clock does not go back).
	clk.set(t0 + (5 * day).Milliseconds())
	if n, err := s.Reap(ctx); err != nil || n != 0 {
		t.Fatalf("reaped %d (%v) while the clock ran behind", n, err)
	}
	if st := listStates(t, s, "wb")[id]; st != "expired" {
		t.Fatalf("state %q during the regression, want expired", st)
	}
	// Caught up with the mark, but not yet the grace past it.
	clk.set(t0 + (10 * day).Milliseconds())
	if n, err := s.Reap(ctx); err != nil || n != 0 {
		t.Fatalf("reaped %d (%v) before the grace after catching up", n, err)
	}
	clk.set(t0 + (10*day + time.Minute).Milliseconds())
	if n, err := s.Reap(ctx); err != nil || n != 1 {
		t.Fatalf("reaped %d (%v) once caught up plus grace, want 1", n, err)
	}
	h := holds(t, s)
	if _, ok := h["snapshot/"+id]; ok || len(h) != 1 {
		t.Fatalf("holds %v: want only snapshot/%s", h, later)
	}
	if _, ok := h["snapshot/"+later]; !ok {
		t.Fatalf("holds %v: want only snapshot/%s", h, later)
	}
}

// A renewal after a clock regression is judged by the lease clock: it
// never sets a deadline earlier than one set before the regression.
func TestSnapshotRenewAfterRegressionNeverShortens(t *testing.T) {
	s, clk := snapService(t)
	committedBench(t, s, "wb")
	_, id := mint(t, s, "wb", map[string]any{"ttl_days": 5})
	deadline := uint64(t0) + 5*86_400_000
	clk.set(t0 - (3 * day).Milliseconds())
	r := mustCall(t, s, "workbench_snapshot_renew", `{"id":"wb","snapshot_id":`+id+`,"ttl_days":5}`)
	if unum(r["lease_expires_at"]) != deadline || r["state"] != "alive" {
		t.Fatalf("renewal behind the clock: %v, want the deadline kept at %d", r, deadline)
	}
	workbench.FsckCleanForTest(t, s)
}

// expiredDetails are the details of SnapshotExpired.
var expiredDetails = map[string]any{"source": "cairn", "code": "SnapshotExpired", "conflict": nil, "current_generation": nil}

// lifecycleDetails are the details of a refusal of the snapshot's
// lifecycle state (InvalidState of a retired snapshot's renewal).
var lifecycleDetails = map[string]any{"source": "cairn", "code": "PreconditionFailed", "conflict": "SnapshotLifecycle", "current_generation": nil}

// Frozen reads: writes after a snapshot change the live reads and never
// the reads at the snapshot.
func TestSnapshotFrozenReads(t *testing.T) {
	s, _ := snapService(t)
	committedBench(t, s, "wb")
	_, id := mint(t, s, "wb", map[string]any{"name": "frozen"})

	reads := []struct{ tool, in string }{
		{"workbench_list", `{"id":"wb"}`},
		{"workbench_list", `{"id":"wb","section":"outputs"}`},
		{"workbench_stat", `{"id":"wb","section":"outputs","path":"report.txt"}`},
		{"workbench_stat", `{"id":"wb","section":"logs"}`},
		{"workbench_read", `{"id":"wb","section":"outputs","path":"report.txt"}`},
		{"workbench_read", `{"id":"wb","section":"logs","path":"run.log","format":"bytes"}`},
	}
	at := func(in string, sel string) string { return strings.TrimSuffix(in, "}") + `,"at_snapshot":` + sel + `}` }
	before := make([]string, len(reads))
	for i, r := range reads {
		live := mustCall(t, s, r.tool, r.in)
		frozen := mustCall(t, s, r.tool, at(r.in, id))
		byName := mustCall(t, s, r.tool, at(r.in, `"frozen"`))
		if frozen["at_snapshot"].(json.Number).String() != id || byName["at_snapshot"] != "frozen" {
			t.Fatalf("%s: at_snapshot echoed %v and %v", r.tool, frozen["at_snapshot"], byName["at_snapshot"])
		}
		delete(frozen, "at_snapshot")
		delete(byName, "at_snapshot")
		if js(live) != js(frozen) || js(frozen) != js(byName) {
			t.Fatalf("%s %s: before any write the snapshot differs from live:\n%s\n%s", r.tool, r.in, js(live), js(frozen))
		}
		before[i] = js(frozen)
	}

	replaceFile(t, s, "wb", "outputs/report.txt", []byte("rewritten\n"))
	mustCall(t, s, "workbench_append", `{"id":"wb","section":"logs","path":"run.log","text":"more\n"}`)
	mustCall(t, s, "workbench_edit", `{"id":"wb","section":"outputs","path":"report.txt","old_string":"rewritten","new_string":"edited"}`)
	putFiles(t, s, "wb", workbench.SeedFile{Path: "outputs/new.txt", Body: []byte("new")},
		workbench.SeedFile{Path: "scripts/x/y.sh", Body: []byte("echo")})

	for i, r := range reads {
		live := mustCall(t, s, r.tool, r.in)
		frozen := mustCall(t, s, r.tool, at(r.in, id))
		delete(frozen, "at_snapshot")
		if js(frozen) != before[i] {
			t.Errorf("%s %s at the snapshot changed:\n got %s\nwant %s", r.tool, r.in, js(frozen), before[i])
		}
		if js(live) == before[i] && !(r.tool == "workbench_stat" && strings.Contains(r.in, `"logs"}`)) && !(r.tool == "workbench_list" && r.in == `{"id":"wb"}`) {
			t.Errorf("%s %s live did not change", r.tool, r.in)
		}
	}
	// A file created after the snapshot is not in it.
	got, ok := call(t, s, "workbench_stat", `{"id":"wb","section":"outputs","path":"new.txt","at_snapshot":`+id+`}`)
	wantToolError(t, got, ok, "NotFound", false, "", map[string]any{"path": "outputs/new.txt"})
	mustCall(t, s, "workbench_stat", `{"id":"wb","section":"outputs","path":"new.txt"}`)
}

// A list cursor of a frozen read continues across writes to the
// workbench (a live cursor would fail) and only in the same view.
func TestSnapshotListCursor(t *testing.T) {
	s, _ := snapService(t)
	committedBench(t, s, "wb")
	putFiles(t, s, "wb", workbench.SeedFile{Path: "outputs/b.txt", Body: []byte("b")}, workbench.SeedFile{Path: "outputs/c.txt", Body: []byte("c")})
	commitWorkbench(t, s, "wb")
	_, id := mint(t, s, "wb", nil)
	page := mustCall(t, s, "workbench_list", `{"id":"wb","section":"outputs","limit":1,"at_snapshot":`+id+`}`)
	cur := page["next_cursor"].(string)
	putFiles(t, s, "wb", workbench.SeedFile{Path: "outputs/a0.txt", Body: []byte("a0")})
	var names []string
	names = append(names, page["entries"].([]any)[0].(map[string]any)["name"].(string))
	for cur != "" {
		p := mustCall(t, s, "workbench_list", js(map[string]any{"id": "wb", "section": "outputs", "limit": 1, "cursor": cur, "at_snapshot": json.Number(id)}))
		names = append(names, p["entries"].([]any)[0].(map[string]any)["name"].(string))
		cur, _ = p["next_cursor"].(string)
	}
	if got := strings.Join(names, ","); got != "b.txt,c.txt,report.txt" {
		t.Fatalf("frozen pages %s", got)
	}
	// The cursor is bound to its view: live, it is another view.
	got, ok := call(t, s, "workbench_list", js(map[string]any{"id": "wb", "section": "outputs", "limit": 1, "cursor": page["next_cursor"]}))
	wantToolError(t, got, ok, "InvalidState", false, "list cursor belongs to a different workbench, prefix, or read view", map[string]any{"source": "cairn"})
}

func TestSnapshotReadMisses(t *testing.T) {
	s, _ := snapService(t)
	committedBench(t, s, "wb")
	_, id := mint(t, s, "wb", nil)
	for _, c := range []struct{ in, code string }{
		{`{"id":"wb","at_snapshot":123}`, "NotFound"},
		{`{"id":"wb","at_snapshot":"nameless"}`, "NotFound"},
		{`{"id":"ghost","at_snapshot":` + id + `}`, "NotFound"},
		{`{"id":"wb","at_snapshot":""}`, "InvalidArguments"},
		{`{"id":"wb","at_snapshot":0}`, "InvalidState"},
		{`{"id":"wb","at_snapshot":18446744073709551615}`, "NotFound"},
	} {
		got, ok := call(t, s, "workbench_list", c.in)
		if ok || got["code"] != c.code {
			t.Errorf("list %s: %v, want %s", c.in, got, c.code)
		}
	}
	// An id above 2^53 is exact on the way in and out.
	if n := unum(json.Number(id)); n <= 1<<53 {
		t.Logf("snapshot id %d happens to be below 2^53", n)
	}
	r := mustCall(t, s, "workbench_stat", `{"id":"wb","at_snapshot":`+id+`}`)
	if r["at_snapshot"].(json.Number).String() != id {
		t.Fatalf("at_snapshot echoed %v, want %s", r["at_snapshot"], id)
	}
}

// A deployment never written holds no snapshot, and asking writes
// nothing.
func TestSnapshotToolsOnANeverWrittenStore(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	s, err := workbench.Open(ctx, b, workbench.Options{AgentID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct{ tool, in, code string }{
		{"workbench_snapshot_renew", `{"id":"wb","snapshot_id":5}`, "SnapshotNotFound"},
		{"workbench_snapshot_retire", `{"id":"wb","name":"n"}`, "SnapshotNotFound"},
		{"workbench_snapshot_list", `{"id":"wb"}`, "SnapshotNotFound"},
		{"workbench_list", `{"id":"wb","at_snapshot":5}`, "NotFound"},
	} {
		got, ok := call(t, s, c.tool, c.in)
		if ok || got["code"] != c.code {
			t.Errorf("%s %s: %v, want %s", c.tool, c.in, got, c.code)
		}
	}
	if n, err := s.Reap(ctx); err != nil || n != 0 {
		t.Fatalf("Reap on an empty store: %d %v", n, err)
	}
	page, err := b.List(ctx, bucket.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 0 {
		t.Fatalf("the calls wrote %v", page.Objects)
	}
}

// Concurrent named mints through two replicas: every mint takes the name
// once (the alias generation counts them all) and the name resolves to
// the newest.
func TestSnapshotConcurrentNamedMints(t *testing.T) {
	clk := &fakeClock{}
	clk.set(t0)
	_, reps := newReplicas(t, 2, workbench.Options{Now: clk.Now})
	committedBench(t, reps[0], "wb")
	const n = 8
	ids := make(chan string, n)
	errs := make(chan string, n)
	for i := range n {
		go func() {
			out, ok := reps[i%2].Call(context.Background(), "workbench_snapshot", []byte(`{"id":"wb","name":"shared"}`))
			if !ok {
				errs <- string(out)
				return
			}
			var r map[string]any
			if err := jsonUnmarshal(out, &r); err != nil {
				errs <- err.Error()
				return
			}
			ids <- r["snapshot_id"].(json.Number).String()
		}()
	}
	for range n {
		select {
		case e := <-errs:
			t.Fatal(e)
		case <-ids:
		}
	}
	s := reps[0]
	ctx := context.Background()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := nokv.SnapshotAliasKey{Root: s.Root(), Incarnation: incarnationOf(t, s, "wb"), Alias: "shared"}.Encode()
	b, ok, err := sn.Get(ctx, nokv.FamilySnapshotAlias, key)
	if err != nil || !ok {
		t.Fatalf("alias: %v %v", ok, err)
	}
	a, err := nokv.DecodeSnapshotAlias(b)
	if err != nil {
		t.Fatal(err)
	}
	if a.AliasGeneration != n {
		t.Fatalf("alias generation %d after %d mints", a.AliasGeneration, n)
	}
	list := mustCall(t, s, "workbench_snapshot_list", `{"id":"wb"}`)["snapshots"].([]any)
	if len(list) != n {
		t.Fatalf("%d snapshots, want %d", len(list), n)
	}
	newest := list[n-1].(map[string]any)["snapshot_id"].(json.Number).String()
	r := mustCall(t, s, "workbench_snapshot_renew", `{"id":"wb","name":"shared"}`)
	if got := r["snapshot_id"].(json.Number).String(); got != newest {
		t.Fatalf("the name resolves to %s, the newest mint is %s", got, newest)
	}
	if got := fmt.Sprint(a.Snapshot); got != newest {
		t.Fatalf("alias row names %s, the newest mint is %s", got, newest)
	}
}
