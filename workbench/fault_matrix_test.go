package workbench_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench"
)

// The fault matrix: one short workload of workbench writes and reads
// through a Service over bucket/fault, once per kind of fault, tallied as
// acknowledged writes, acknowledged writes lost (read back afterwards
// through a clean Service), wrong data served (a successful read whose
// bytes or generation contradict what was acknowledged), and corruptions
// injected against corruptions detected (a read or the engine's Check
// failing rather than answering). docs/engine.md, "Fault matrix", holds
// the table this prints:
//
//	go test ./workbench -run TestFaultMatrix -v

// matrixOptions make the workload's few files exercise every object
// kind: bodies of more than 256 bytes go to blocks of 1 KiB, shards past
// 256 bytes are paged, objects up to 160 bytes travel inline in their
// table, and four deltas fold.
func matrixOptions() workbench.Options {
	return workbench.Options{
		AgentID:      "matrix",
		BlockSize:    1 << 10,
		InlineMax:    256,
		CleanupDelay: time.Hour, // keep staging ledgers to corrupt them
		Engine: head.Options{
			PageBytes:       256,
			InlineBytes:     160,
			MaxDeltas:       4,
			MergeBytes:      -1,
			MaxAttempts:     4,
			BackoffBase:     time.Millisecond,
			BackoffMax:      2 * time.Millisecond,
			ThrottleBackoff: time.Millisecond,
		},
	}
}

// attempt is one put of a path: its unique body, and its generation if
// acknowledged.
type attempt struct {
	body  string
	acked bool
	gen   string
}

// tally is one row of the matrix.
type tally struct {
	calls, acked, lost, wrong int
	injected, detected        int
	note                      string
}

// model is what a workload attempted, path by path, in order.
type model struct {
	paths []string
	tries map[string][]attempt
}

// judge returns whether a successful read of path (body, generation) is
// right: its body is an attempt not older than the latest acknowledged
// one, at that attempt's generation if it was acknowledged.
func (m *model) judge(path string, body []byte, gen string) bool {
	tries := m.tries[path]
	latest := -1
	for i, a := range tries {
		if a.acked {
			latest = i
		}
	}
	for i, a := range tries {
		if a.body == string(body) {
			return i >= latest && (!a.acked || a.gen == gen)
		}
	}
	return false
}

// ackedPaths returns the paths with an acknowledged put.
func (m *model) ackedPaths() []string {
	var out []string
	for _, p := range m.paths {
		for _, a := range m.tries[p] {
			if a.acked {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// readPath reads path as bytes, page by page (a page is at most 300
// bytes): ok with body and generation, or the error code.
func readPath(t *testing.T, s *workbench.Service, path string) (body []byte, gen, code string, ok bool) {
	t.Helper()
	cursor := ""
	for {
		in := fmt.Sprintf(`{"id":"m","section":"outputs","path":%q,"format":"bytes","limit":300%s}`, path, cursor)
		m, ok := call(t, s, "workbench_read", in)
		if !ok {
			return nil, "", fmt.Sprint(m["code"]), false
		}
		b, err := base64.StdEncoding.DecodeString(fmt.Sprint(m["bytes"]))
		if err != nil {
			t.Fatalf("read %s: bytes %v: %v", path, m["bytes"], err)
		}
		if g := num(m["generation"]); gen != "" && g != gen {
			return nil, "", "GenerationChanged", false
		} else {
			gen = g
		}
		body = append(body, b...)
		next, more := m["next_cursor"].(string)
		if !more {
			return body, gen, "", true
		}
		cursor = fmt.Sprintf(`,"cursor":%q`, next)
	}
}

// checkRead reads path and counts a wrong answer: bytes the model
// refuses, or NotFound for an acknowledged path.
func (m *model) checkRead(t *testing.T, s *workbench.Service, path string, row *tally) (failed bool) {
	t.Helper()
	row.calls++
	body, gen, code, ok := readPath(t, s, path)
	switch {
	case ok && !m.judge(path, body, gen):
		row.wrong++
		t.Errorf("read %s: %d bytes at generation %s, which was not acknowledged or is stale", path, len(body), gen)
	case !ok && code == "NotFound" && len(m.ackedPaths()) > 0 && m.latestAcked(path):
		row.wrong++
		t.Errorf("read %s: NotFound after an acknowledged put", path)
	}
	return !ok
}

func (m *model) latestAcked(path string) bool {
	for _, a := range m.tries[path] {
		if a.acked {
			return true
		}
	}
	return false
}

// runWorkload puts 24 files (16 small ones in d0, 8 of one to three
// blocks in d1), replaces every third, and reads an earlier file after
// each write. It stops early when stop reports true after a call.
func runWorkload(t *testing.T, s *workbench.Service, seed uint64, row *tally, stop func() bool) *model {
	return runFiles(t, s, seed, 24, row, stop)
}

// runFiles is runWorkload with the given number of files.
func runFiles(t *testing.T, s *workbench.Service, seed uint64, files int, row *tally, stop func() bool) *model {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	m := &model{tries: map[string][]attempt{}}
	put := func(path string, replace bool, n int) {
		body := fmt.Sprintf("%s#%d:", path, len(m.tries[path]))
		body += strings.Repeat(string(rune('a'+r.IntN(26))), max(0, n-len(body)))
		in := putInput("m", "outputs", path, fmt.Sprintf(`"text":%q`, body), fmt.Sprintf(`"replace":%t`, replace))
		row.calls++
		res, ok := call(t, s, "workbench_put_file", in)
		a := attempt{body: body, acked: ok}
		if ok {
			a.gen = num(res["generation"])
			row.acked++
		}
		if len(m.tries[path]) == 0 {
			m.paths = append(m.paths, path)
		}
		m.tries[path] = append(m.tries[path], a)
	}
	step := func(path string, replace bool, n int) bool {
		put(path, replace, n)
		if stop() {
			return true
		}
		if len(m.paths) > 0 {
			m.checkRead(t, s, m.paths[r.IntN(len(m.paths))], row)
		}
		return stop()
	}
	for i := range files {
		path, n := fmt.Sprintf("d0/file-%02d.txt", i), 20+r.IntN(40)
		if i%3 == 2 {
			path, n = fmt.Sprintf("d1/blob-%02d.bin", i), 300+r.IntN(2800)
		}
		if step(path, false, n) {
			return m
		}
	}
	for i, p := range m.paths {
		if i%3 == 0 && step(p, true, 30+r.IntN(600)) {
			return m
		}
	}
	return m
}

// verify reads every path through a clean Service over plain and counts
// acknowledged writes lost and wrong data.
func verify(t *testing.T, plain bucket.Bucket, m *model, row *tally) {
	t.Helper()
	s := newMatrixService(t, plain)
	for _, p := range m.ackedPaths() {
		body, gen, code, ok := readPath(t, s, p)
		if !ok {
			row.lost++
			t.Errorf("acknowledged %s: read back fails with %s", p, code)
			continue
		}
		if !m.judge(p, body, gen) {
			row.lost++
			t.Errorf("acknowledged %s: read back %d bytes at generation %s", p, len(body), gen)
		}
	}
}

func newMatrixService(t *testing.T, b bucket.Bucket) *workbench.Service {
	t.Helper()
	s, err := workbench.Open(t.Context(), b, matrixOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rig is a fresh store: a Service over a fault bucket over it, and a
// plain view of the same store.
type rig struct {
	s     *workbench.Service
	fb    *fault.Bucket
	plain bucket.Bucket
}

func newRig(t *testing.T, seed uint64) rig {
	t.Helper()
	fb, plain := faultAndPlain(t)
	fb.Seed(seed)
	return rig{s: newMatrixService(t, fb), fb: fb, plain: plain}
}

func never() bool { return false }

// TestFaultMatrix runs the matrix and fails on any acknowledged write
// lost, any wrong data served, or any corruption not detected.
func TestFaultMatrix(t *testing.T) {
	var rows []string
	report := func(name string, row tally) {
		line := fmt.Sprintf("%-34s calls %4d  acked %3d  lost %d  wrong %d  injected %4d  detected %4d  %s",
			name, row.calls, row.acked, row.lost, row.wrong, row.injected, row.detected, row.note)
		rows = append(rows, line)
		if row.lost != 0 || row.wrong != 0 || row.detected < row.injected {
			t.Errorf("%s: %d acknowledged writes lost, %d wrong answers, %d of %d corruptions detected", name, row.lost, row.wrong, row.detected, row.injected)
		}
	}
	t.Run("crash", func(t *testing.T) { matrixCrash(t, report) })
	t.Run("transient", func(t *testing.T) { matrixTransient(t, report) })
	t.Run("head", func(t *testing.T) { matrixHead(t, report) })
	t.Run("corruption", func(t *testing.T) { matrixCorruption(t, report) })
	for _, l := range rows {
		t.Log(l)
	}
}

var errCrashed = errors.New("process crashed")

// crashFiles is the size of the crash rows' workload: a crash at every
// write runs the workload once per write, so it is the first six files
// of the others' (two of them in blocks) and two replaces.
const crashFiles = 6

// matrixCrash crashes the process before, and after, each bucket write
// of the workload in turn: from then on every call of that Service fails,
// and a clean Service must find every acknowledged write.
func matrixCrash(t *testing.T, report func(string, tally)) {
	// Count the writes of a whole run first.
	r := newRig(t, 1)
	var writes atomic.Int64
	r.fb.Inject(fault.Rule{Op: fault.OpPut | fault.OpDelete, Fault: fault.Hook(func(context.Context, fault.Op, string) error {
		writes.Add(1)
		return nil
	})})
	runFiles(t, r.s, 1, crashFiles, &tally{}, never)
	total := int(writes.Load())
	for _, after := range []bool{false, true} {
		var row tally
		for n := 1; n <= total; n++ {
			r := newRig(t, 1)
			var seen atomic.Int64
			var dead atomic.Bool
			r.fb.Inject(fault.Rule{Fault: fault.Hook(func(_ context.Context, op fault.Op, _ string) error {
				if dead.Load() {
					return errCrashed
				}
				if op&(fault.OpPut|fault.OpDelete) != 0 && seen.Add(1) == int64(n) {
					dead.Store(true)
					if !after {
						return errCrashed
					}
				}
				return nil
			})})
			m := runFiles(t, r.s, 1, crashFiles, &row, dead.Load)
			row.injected++
			verify(t, r.plain, m, &row)
			row.detected++ // a crash needs no detecting; counted so the row reads whole
		}
		name := "crash before write n (every n)"
		if after {
			name = "crash after write n (every n)"
		}
		row.note = fmt.Sprintf("(%d crash points)", total)
		row.injected, row.detected = 0, 0
		report(name, row)
	}
}

// matrixTransient runs the workload through store faults that come and
// go: throttling, an unavailable store, lost responses, retried
// conditional writes that answer "precondition failed", and corrupt
// reads.
func matrixTransient(t *testing.T, report func(string, tally)) {
	for _, c := range []struct {
		name string
		rule fault.Rule
	}{
		{"throttled (p=0.2, every op)", fault.Rule{Probability: 0.2, Fault: fault.FailBefore(bucket.ErrThrottled)}},
		{"unavailable (p=0.2, every op)", fault.Rule{Probability: 0.2, Fault: fault.FailBefore(bucket.ErrUnavailable)}},
		{"lost response (p=0.2, writes)", fault.Rule{Op: fault.OpPut | fault.OpDelete, Probability: 0.2, Fault: fault.LoseResponse()}},
		{"precondition after apply (p=0.3)", fault.Rule{Op: fault.OpPut | fault.OpDelete, Conditional: true, Probability: 0.3, Fault: fault.PreconditionAfterApply()}},
		{"corrupt read (p=0.2, every get)", fault.Rule{Op: fault.OpGet, Probability: 0.2, Fault: fault.CorruptRead()}},
	} {
		var row tally
		for seed := uint64(1); seed <= 3; seed++ {
			r := newRig(t, seed)
			h := r.fb.Inject(c.rule)
			m := runWorkload(t, r.s, seed, &row, never)
			r.fb.Disarm(h)
			if c.rule.Fault.String() == "corrupt-read" {
				// A corrupt read is detected when nothing wrong was served;
				// wrong data is counted by the reads themselves.
				row.injected += int(h.Fired())
				row.detected += int(h.Fired())
			}
			verify(t, r.plain, m, &row)
			row.note += fmt.Sprintf("%d fired; ", h.Fired())
		}
		row.note = "(3 seeds: " + strings.TrimSuffix(row.note, "; ") + ")"
		report(c.name, row)
	}
}

// matrixHead deletes the head, and rolls it back, under a live Service.
func matrixHead(t *testing.T, report func(string, tally)) {
	ctx := t.Context()
	for _, rollback := range []bool{false, true} {
		var row tally
		r := newRig(t, 7)
		key := r.s.Store().Layout().Head()
		var old []byte
		m := runWorkload(t, r.s, 7, &row, func() bool {
			if old == nil && row.acked == 10 {
				old, _, _ = r.plain.Get(ctx, key)
			}
			return false
		})
		newest, _, err := r.plain.Get(ctx, key)
		if err != nil || old == nil {
			t.Fatalf("head: %v", err)
		}
		if rollback {
			_, err = r.plain.Put(ctx, key, old, bucket.Unconditional)
		} else {
			err = r.plain.Delete(ctx, key, bucket.Unconditional)
		}
		if err != nil {
			t.Fatal(err)
		}
		row.injected = 1
		// The live Service and a new one: every read and write fails, and
		// nothing writes a head.
		fresh := newMatrixService(t, r.plain)
		failed, tried := 0, 0
		for _, s := range []*workbench.Service{r.s, fresh} {
			if rollback && s == fresh {
				continue // a new process cannot tell an old head from the newest
			}
			for _, p := range m.ackedPaths() {
				tried++
				if m.checkRead(t, s, p, &row) {
					failed++
				}
			}
			tried++
			row.calls++
			if _, ok := call(t, s, "workbench_put_file", putInput("m", "outputs", "after.txt", `"text":"after"`)); !ok {
				failed++
			}
		}
		now, _, err := r.plain.Get(ctx, key)
		switch {
		case rollback && !bytes.Equal(now, old):
			t.Errorf("the rolled-back head was overwritten")
		case !rollback && !errors.Is(err, bucket.ErrNotExist):
			t.Errorf("a head was written after the head was deleted: %v", err)
		case failed == tried:
			row.detected = 1
		}
		if _, err := r.plain.Put(ctx, key, newest, bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
		verify(t, r.plain, m, &row)
		name, note := "head deleted", "(live and new Service: %d of %d calls refused, no head written)"
		if rollback {
			name, note = "head rolled back (10 acks back)", "(live Service: %d of %d calls refused, head untouched)"
		}
		row.note = fmt.Sprintf(note, failed, tried)
		report(name, row)
	}
}

// matrixCorruption corrupts, one at a time, stored objects of each kind
// that the current state reaches, and reads everything back through a
// new Service: each must make a read fail, or else the engine's Check.
func matrixCorruption(t *testing.T, report func(string, tally)) {
	ctx := t.Context()
	var row tally
	r := newRig(t, 3)
	m := runWorkload(t, r.s, 3, &row, never)
	layout := r.s.Store().Layout()
	reached := reachedKeys(t, r)
	byKind := classify(t, r.plain, layout, reached)
	// The ledgers: no read path reads one (the sweep deletes them by
	// key), so a corrupt ledger can serve nothing; it is listed to say so.
	ledgers := listKeys(t, r.plain, bodies.StagingPrefix(layout))
	for _, kind := range []string{"head", "root", "table", "table with an inline index", "shard object", "page", "page index", "delta segment", "block"} {
		keys := byKind[kind]
		if len(keys) == 0 {
			t.Errorf("the workload left no reachable %s to corrupt", kind)
			continue
		}
		var row tally
		byCheck := 0
		for _, c := range keys[:min(len(keys), 4)] {
			body, _, err := r.plain.Get(ctx, c.key)
			if err != nil {
				t.Fatal(err)
			}
			bad := bytes.Clone(body)
			bad[c.at] ^= 0x20
			if _, err := r.plain.Put(ctx, c.key, bad, bucket.Unconditional); err != nil {
				t.Fatal(err)
			}
			row.injected++
			s := newMatrixService(t, r.plain)
			failed := false
			for _, p := range m.ackedPaths() {
				failed = m.checkRead(t, s, p, &row) || failed
			}
			for _, dir := range []string{"d0", "d1"} {
				row.calls++
				if _, ok := call(t, s, "workbench_list", fmt.Sprintf(`{"id":"m","section":"outputs","path":%q}`, dir)); !ok {
					failed = true
				}
			}
			if !failed && kind != "head" {
				if err := head.Check(ctx, r.plain, layout, currentRoot(t, r.plain, layout), head.CheckOptions{Strict: true}); errors.Is(err, bucket.ErrIntegrity) {
					failed = true
					byCheck++
				}
			}
			if failed {
				row.detected++
			} else {
				t.Errorf("corrupt %s %s: every read answered and Check passed", kind, c.key)
			}
			if _, err := r.plain.Put(ctx, c.key, body, bucket.Unconditional); err != nil {
				t.Fatal(err)
			}
		}
		row.note = fmt.Sprintf("(%d of %d reachable; %d by Check only)", min(len(keys), 4), len(keys), byCheck)
		report("corrupt "+kind, row)
	}
	row = tally{note: fmt.Sprintf("(%d ledgers; no read path reads a ledger)", len(ledgers))}
	report("corrupt staging ledger", row)
	verify(t, r.plain, m, &row)
}

// target is one object to corrupt and the byte to flip in it.
type target struct {
	key string
	at  int
}

// reachedKeys returns the keys a clean read of the current state gets:
// the engine's Check of the current root, and a read of every file (the
// blocks).
func reachedKeys(t *testing.T, r rig) map[string]bool {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]bool{}
	rec := fault.New(r.plain)
	rec.Inject(fault.Rule{Op: fault.OpGet, Fault: fault.Hook(func(_ context.Context, _ fault.Op, key string) error {
		mu.Lock()
		seen[key] = true
		mu.Unlock()
		return nil
	})})
	layout := r.s.Store().Layout()
	if err := head.Check(t.Context(), rec, layout, currentRoot(t, r.plain, layout), head.CheckOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	s := newMatrixService(t, rec)
	for _, dir := range []string{"d0", "d1"} {
		res := mustCall(t, s, "workbench_list", fmt.Sprintf(`{"id":"m","section":"outputs","path":%q}`, dir))
		raw, _ := json.Marshal(res["entries"])
		var entries []map[string]any
		json.Unmarshal(raw, &entries)
		for _, e := range entries {
			readPath(t, s, dir+"/"+fmt.Sprint(e["name"]))
		}
	}
	seen[layout.Head()] = true
	return seen
}

// currentRoot returns the root the stored head names.
func currentRoot(t *testing.T, b bucket.Bucket, layout shards.Layout) digest.Hash {
	t.Helper()
	raw, _, err := b.Get(t.Context(), layout.Head())
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Root string `json:"root"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	d, err := digest.Parse(h.Root)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// classify sorts the reached keys by object kind: pages are the shard
// objects an index names; a table with an inline index is corrupted
// inside the index's bytes.
func classify(t *testing.T, b bucket.Bucket, layout shards.Layout, reached map[string]bool) map[string][]target {
	t.Helper()
	ctx := t.Context()
	out := map[string][]target{}
	pages := map[digest.Hash]bool{}
	p := layout.Prefix()
	indexPages := func(raw []byte) {
		x, err := shards.DecodeIndex(layout.Schema(), raw, digest.Sum(raw), shards.Family(raw[21]), raw[22])
		if err != nil {
			t.Fatal(err)
		}
		for i := range x.Len() {
			pages[x.Page(i).Ref.Hash] = true
		}
	}
	get := func(k string) []byte {
		raw, _, err := b.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	var objects []string
	for k := range reached {
		switch {
		case k == layout.Head():
			out["head"] = append(out["head"], target{k, 10})
		case strings.HasPrefix(k, p+"roots/"):
			out["root"] = append(out["root"], target{k, len(get(k)) / 2})
		case strings.HasPrefix(k, p+"tables/"):
			raw := get(k)
			tbl, err := roots.DecodeTable(layout.Schema(), raw, digest.Sum(raw))
			if err != nil {
				t.Fatal(err)
			}
			off, inline := 24, -1
			for _, e := range tbl.Entries {
				off += 46
				if e.Inline != "" && e.Index {
					indexPages([]byte(e.Inline))
					inline = off + len(e.Inline)/2
				}
				off += len(e.Inline)
			}
			if inline >= 0 {
				out["table with an inline index"] = append(out["table with an inline index"], target{k, inline})
			} else {
				out["table"] = append(out["table"], target{k, len(raw) / 2})
			}
		case strings.HasPrefix(k, p+"indexes/"):
			raw := get(k)
			indexPages(raw)
			out["page index"] = append(out["page index"], target{k, len(raw) / 2})
		case strings.HasPrefix(k, p+"deltas/"):
			out["delta segment"] = append(out["delta segment"], target{k, len(get(k)) / 2})
		case strings.HasPrefix(k, p+"objects/"):
			objects = append(objects, k)
		case strings.HasPrefix(k, bodies.ArtifactsPrefix(layout)):
			out["block"] = append(out["block"], target{k, len(get(k)) / 2})
		}
	}
	for _, k := range objects {
		h, err := digest.Parse(k[strings.LastIndexByte(k, '/')+1:])
		if err != nil {
			t.Fatal(err)
		}
		kind := "shard object"
		if pages[h] {
			kind = "page"
		}
		out[kind] = append(out[kind], target{k, len(get(k)) / 2})
	}
	for _, ts := range out {
		// Map order is random: sort, so that runs corrupt the same objects.
		slices.SortFunc(ts, func(a, b target) int { return strings.Compare(a.key, b.key) })
	}
	return out
}
