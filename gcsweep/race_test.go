package gcsweep_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// The race of DESIGN.md, "Garbage collection and pins": a writer
// reuses the content of an orphan while a sweep deletes it.
//
// x=A then x=B (and y=2) leaves the shard object that held x=A an
// orphan, and the clock then moves past the grace and a commit makes it
// the head's, so the sweep will delete it. A writer
// then puts x=A again: the records the orphan holds. The writer's steps
// are pin (read the head), build (decide what to write: the fold that
// rebuilds x's shard), stage (write its objects) and CAS (write the
// head); the sweep's are mark (read the head, list, mark), re-read (read
// the head again, and mark it if it moved) and delete. Every
// interleaving of the two sequences is run, each on a fresh bucket, with
// the two actors paused at bucket hooks between their steps. After each,
// every committed root still in the bucket passes a strict Check, x reads
// A from a cold replica, the sweep deleted the orphan and nothing the
// writer staged, and no committed root names the orphan.

var raceSchema = head.Schema{
	Marker:   head.Marker{SchemaID: "gcsweep_race", FormatVersion: 1, ValueFormatVersion: 1},
	Families: shardstest.Schema(),
}

// raceOptions fold every commit into shard objects, none inline.
var raceOptions = head.Options{NoGroupCommit: true, MaxDeltaBytes: 1, InlineBytes: -1, Check: true}

func raceKey(i int) []byte {
	k := make([]byte, 16)
	k[0] = byte(i)
	return k
}

func racePut(i int, v string) head.Command {
	return head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Put(shardstest.Fixed16, raceKey(i), []byte(v))
	}}
}

// actor runs a function that stops at pause points; a scheduler lets it
// run one step at a time: from one pause point to the next, or to its
// end.
type actor struct {
	name    string
	proceed chan struct{}
	arrived chan bool // false at a pause point, true when done
	steps   []string  // the steps it took, for messages
}

func newActor(name string) *actor {
	return &actor{name: name, proceed: make(chan struct{}), arrived: make(chan bool)}
}

// start runs f on its own goroutine once the scheduler first lets the
// actor proceed.
func (a *actor) start(f func()) {
	go func() {
		<-a.proceed
		f()
		a.arrived <- true
	}()
}

// pause is called by the actor at a pause point.
func (a *actor) pause(step string) {
	a.steps = append(a.steps, step)
	a.arrived <- false
	<-a.proceed
}

// step lets the actor run to its next pause point or its end, and
// reports whether it ended.
func (a *actor) step(t *testing.T) bool {
	t.Helper()
	a.proceed <- struct{}{}
	select {
	case done := <-a.arrived:
		return done
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not reach its next pause point (steps so far %v)", a.name, a.steps)
	}
	return false
}

// interleavings returns every order of w writer steps and s sweep steps
// that keeps each actor's own order, as strings of 'w' and 's'.
func interleavings(w, s int) []string {
	if w == 0 {
		return []string{strings.Repeat("s", s)}
	}
	if s == 0 {
		return []string{strings.Repeat("w", w)}
	}
	var out []string
	for _, rest := range interleavings(w-1, s) {
		out = append(out, "w"+rest)
	}
	for _, rest := range interleavings(w, s-1) {
		out = append(out, "s"+rest)
	}
	return out
}

func TestSweepRacesWriterReusingOrphan(t *testing.T) {
	orders := interleavings(4, 3)
	if len(orders) != 35 {
		t.Fatalf("%d interleavings, want 35", len(orders))
	}
	for _, order := range orders {
		t.Run(order, func(t *testing.T) { raceOnce(t, order) })
	}
}

func raceOnce(t *testing.T, order string) {
	ctx := context.Background()
	store := mem.NewStore()
	clk := newFakeClock()
	times := &sync.Map{}
	bucketOn := func() *clockBucket {
		b, err := mem.New(store, "")
		if err != nil {
			t.Fatal(err)
		}
		return newClockBucket(b, clk, times)
	}
	raw := bucketOn()
	id := shards.NewShardID()
	layout := shards.NewLayout(raceSchema.Families, id)
	open := func(b bucket.Bucket) *head.Store {
		s, err := head.Open(ctx, b, id, raceSchema, raceOptions)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}

	// x=A, y=1, then x=B: the x=A shard object is an orphan.
	other := open(raw)
	for _, cmd := range []head.Command{racePut(1, "A"), racePut(2, "1"), racePut(1, "B")} {
		if _, err := other.Do(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}
	xi, err := raceSchema.Families.ShardOf(shardstest.Fixed16, raceKey(1))
	if err != nil {
		t.Fatal(err)
	}
	orphan := xShardKey(t, raw, layout, parentOf(t, raw, layout, headRoot(t, raw, layout)), xi)
	// Then y=2: x=B's root was the head until this commit, which the
	// sweep knows only by y=2's own root's store time (the next commit
	// read x=B's head first), so y=2 must be as old as the rest for the
	// roots that name the orphan to fall behind the horizon.
	if _, err := other.Do(ctx, racePut(2, "2")); err != nil {
		t.Fatal(err)
	}
	before := listAll(t, raw)
	if !before[orphan] {
		t.Fatalf("orphan %s not in the bucket", orphan)
	}
	// Two hours on, another commit (an empty one) makes the head's store
	// time the present: the sweep's horizon is an hour before it, past
	// the orphan's.
	clk.Advance(2 * time.Hour)
	if _, err := other.Touch(ctx); err != nil {
		t.Fatal(err)
	}

	// The writer pauses after its pin read, before its first staging
	// write and before its head write.
	writer := newActor("writer")
	wb := fault.New(bucketOn())
	var wmu sync.Mutex
	var pinned, staging, casing bool
	var staged []string
	// (At most one rule applies per call, so the rules match disjoint
	// calls.)
	wb.Inject(fault.Rule{Op: fault.OpGet, Key: layout.Head(), Fault: fault.HookAfter(func(context.Context, fault.Op, string) error {
		wmu.Lock()
		first := !pinned
		pinned = pinned || first
		wmu.Unlock()
		if first {
			writer.pause("pin")
		}
		return nil
	})})
	wb.Inject(fault.Rule{Op: fault.OpPut, Fault: fault.Hook(func(_ context.Context, _ fault.Op, key string) error {
		wmu.Lock()
		var pause string
		switch {
		case key == layout.Head() && !casing:
			casing, pause = true, "stage"
		case key != layout.Head():
			staged = append(staged, key)
			if !staging {
				staging, pause = true, "build"
			}
		}
		wmu.Unlock()
		if pause != "" {
			writer.pause(pause)
		}
		return nil
	})})
	ws := open(wb)
	var wres head.Result
	var werr error
	writer.start(func() { wres, werr = ws.Do(ctx, racePut(1, "A")) })

	// The sweep pauses before its second head read and before its first
	// delete.
	sweeper := newActor("sweep")
	sb := fault.New(bucketOn())
	var smu sync.Mutex
	headReads, deleting := 0, false
	var deleted []string
	sb.Inject(fault.Rule{Fault: fault.Hook(func(_ context.Context, op fault.Op, key string) error {
		smu.Lock()
		var pause string
		switch {
		case op == fault.OpGet && key == layout.Head():
			headReads++
			if headReads == 2 {
				pause = "mark"
			}
		case op == fault.OpDelete && strings.HasPrefix(key, layout.Prefix()):
			deleted = append(deleted, key)
			if !deleting {
				deleting, pause = true, "reread"
			}
		}
		smu.Unlock()
		if pause != "" {
			sweeper.pause(pause)
		}
		return nil
	})})
	var rep *gcsweep.Report
	var serr error
	sweeper.start(func() {
		rep, serr = gcsweep.Sweep(ctx, sb, layout, gcsweep.Options{Concurrency: 1})
	})

	done := map[*actor]bool{}
	for i, c := range order {
		a := writer
		if c == 's' {
			a = sweeper
		}
		if done[a] {
			t.Fatalf("step %d: %s already ended (writer %v, sweep %v; %v %v)", i, a.name, writer.steps, sweeper.steps, werr, serr)
		}
		done[a] = a.step(t)
	}
	if !done[writer] || !done[sweeper] {
		t.Fatalf("not ended: writer %v %v, sweep %v %v", done[writer], writer.steps, done[sweeper], sweeper.steps)
	}
	if werr != nil {
		t.Fatalf("writer: %v", werr)
	}
	if serr != nil {
		t.Fatalf("sweep: %v", serr)
	}

	// What the sweep deleted: the orphan, nothing the writer staged.
	if !contains(deleted, orphan) {
		t.Errorf("the sweep did not delete the orphan (deleted %d objects)", len(deleted))
	}
	for _, k := range staged {
		if contains(deleted, k) {
			t.Errorf("the sweep deleted %s, which the writer staged", k)
		}
	}
	// Every committed root still in the bucket checks, and none names the
	// orphan.
	n := 0
	for h := headRoot(t, raw, layout); !h.IsZero(); h = parentOf(t, raw, layout, h) {
		if _, err := raw.Stat(ctx, layout.Root(h)); errors.Is(err, bucket.ErrNotExist) {
			break
		}
		if err := head.Check(ctx, raw, layout, h, head.CheckOptions{Strict: true}); err != nil {
			t.Fatalf("committed root %s: %v", h, err)
		}
		if k := xShardKey(t, raw, layout, h, xi); k == orphan {
			t.Fatalf("committed root %s names the orphan", h)
		}
		n++
	}
	if n < 2 {
		t.Fatalf("%d committed roots left, want the writer's and its parent", n)
	}
	if wres.Sequence != 7 {
		t.Errorf("the writer committed sequence %d, want 7", wres.Sequence)
	}
	cold := open(bucketOn())
	sn, err := cold.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := sn.Get(ctx, shardstest.Fixed16, raceKey(1))
	if err != nil || !ok || string(v) != "A" {
		t.Fatalf("x = %q, %v, %v", v, ok, err)
	}
	if rep.HeadSequence != 6 && rep.HeadSequence != 7 {
		t.Errorf("the sweep marked head %d", rep.HeadSequence)
	}
}

// xShardKey returns the key of shard xi of Fixed16 in root h.
func xShardKey(t *testing.T, b bucket.Bucket, layout shards.Layout, h digest.Hash, xi uint8) string {
	t.Helper()
	body, _, err := b.Get(context.Background(), layout.Root(h))
	if err != nil {
		t.Fatal(err)
	}
	r, err := roots.DecodeRoot(layout.Schema(), body, h)
	if err != nil {
		t.Fatal(err)
	}
	fr, ok := r.Family(shardstest.Fixed16)
	if !ok {
		return ""
	}
	tb, _, err := b.Get(context.Background(), layout.Table(fr.Table.Hash))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := roots.DecodeTable(layout.Schema(), tb, fr.Table.Hash)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := tbl.Entry(xi)
	if !ok {
		return ""
	}
	return layout.Shard(shardstest.Fixed16, xi, e.Ref.Hash)
}

func contains(s []string, k string) bool {
	for _, x := range s {
		if x == k {
			return true
		}
	}
	return false
}
