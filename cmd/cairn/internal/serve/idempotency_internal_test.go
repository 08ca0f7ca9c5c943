package serve

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
)

// TestRecordRoundTrip: a record's result comes back byte for byte, new
// lines and all, and a record that is not one is an integrity error.
func TestRecordRoundTrip(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	d := &idem{b: b, key: "idempotency/x/y", input: "in"}
	result := []byte("{\"a\":\"x\\ny\"}\n\nraw\x00tail")
	want := record{V: 1, Input: "in", State: stateDone, Epoch: 3, Started: time.Unix(5, 0).UTC(), OK: true, Result: result}
	body, err := d.encode(want)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, d.key, body, bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	got, _, err := d.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Result, result) || got.Epoch != 3 || got.State != stateDone || !got.OK || !got.Started.Equal(want.Started) {
		t.Fatalf("read back %+v", got)
	}
	if _, err := b.Put(ctx, d.key, []byte("not a record"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.read(ctx); !errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("a foreign object reads as %v", err)
	}
}

// TestReleasedKeyRunsAgain: a retryable failure that applied nothing
// releases the key in a new epoch; an unknown outcome keeps the epoch, so
// that the next try replays what landed.
func TestReleasedKeyRunsAgain(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	now := time.Unix(100, 0)
	newIdem := func() *idem { return &idem{b: b, key: "idempotency/x/k", bind: "cairn.http.k", input: "in"} }

	d := newIdem()
	if out, err := d.claim(ctx, now, time.Minute); err != nil || out != claimRun {
		t.Fatalf("first claim: %v %v", out, err)
	}
	if out, _ := newIdem().claim(ctx, now, time.Minute); out != claimBusy {
		t.Fatalf("a claim while it runs: %v", out)
	}
	if err := d.finish(ctx, []byte(`{"code":"Conflict"}`), false, "Conflict", true); err != nil {
		t.Fatal(err)
	}
	d = newIdem()
	if out, err := d.claim(ctx, now, time.Minute); err != nil || out != claimRun || d.boundID() != "cairn.http.k.1" {
		t.Fatalf("after a conflict: %v %v %s", out, err, d.boundID())
	}
	if err := d.finish(ctx, []byte(`{"code":"UnknownOutcome"}`), false, "UnknownOutcome", true); err != nil {
		t.Fatal(err)
	}
	d = newIdem()
	if out, err := d.claim(ctx, now, time.Minute); err != nil || out != claimRun || d.boundID() != "cairn.http.k.1" {
		t.Fatalf("after an unknown outcome: %v %v %s", out, err, d.boundID())
	}
	if err := d.finish(ctx, []byte(`{"status":"success"}`), true, "", false); err != nil {
		t.Fatal(err)
	}
	d = newIdem()
	if out, err := d.claim(ctx, now, time.Minute); err != nil || out != claimReplay || string(d.rec.Result) != `{"status":"success"}` {
		t.Fatalf("after a success: %v %v %s", out, err, d.rec.Result)
	}
	other := newIdem()
	other.input = "other"
	if out, _ := other.claim(ctx, now, time.Minute); out != claimReused {
		t.Fatalf("another input: %v", out)
	}
}
