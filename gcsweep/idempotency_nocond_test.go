package gcsweep_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
)

// noCondDelete is a store declared without conditional deletes (as s3
// with conditional_delete=false): it refuses them.
type noCondDelete struct{ bucket.Bucket }

func (b noCondDelete) Capabilities() bucket.Capabilities {
	c := b.Bucket.Capabilities()
	c.ConditionalDelete = false
	return c
}

func (b noCondDelete) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	if _, ok := cond.Version(); ok {
		return bucket.ErrUnsupported
	}
	return b.Bucket.Delete(ctx, key, cond)
}

// TestSweepKeepsRewritableRecordsWithoutConditionalDelete: on a store
// that cannot delete conditionally, an idempotency record past its
// retention is kept (a server may rewrite it after the listing, and an
// unconditional delete would remove the rewrite), and reported as such;
// the rest of the garbage is still deleted.
func TestSweepKeepsRewritableRecordsWithoutConditionalDelete(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	b := noCondDelete{newClockBucket(mem.NewBucket(), clk, nil)}
	s := openService(t, b, smallOptions("idem"))
	layout := s.Store().Layout()
	fill(t, s, files{}, 0, 4)
	s.Close()
	quiesce(t, b, layout)
	rec := gcsweep.IdempotencyKey(layout, digest.Sum([]byte("a key")))
	if _, err := b.Put(ctx, rec, []byte(`{"state":"released"}`), bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(25 * time.Hour)
	rep, err := gcsweep.Sweep(ctx, b, layout, sweepOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(ctx, rec); err != nil {
		t.Fatalf("a record past its retention on a store without conditional deletes: %v, want kept", err)
	}
	if rep.Rewritable.Objects != 1 {
		t.Fatalf("kept rewritable %+v, want 1 record", rep.Rewritable)
	}
	if rep.Deleted.Objects == 0 {
		t.Fatalf("nothing deleted: %+v", rep)
	}
	if rep.Failed.Objects != 0 {
		t.Fatalf("failed deletes %+v: the sweep must not ask for conditional ones", rep.Failed)
	}
}
