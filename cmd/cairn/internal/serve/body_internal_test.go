package serve

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"
)

// fakeClock is a pacer's clock that moves only when the pacer sleeps.
type fakeClock struct {
	t     time.Time
	slept time.Duration
}

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.t = c.t.Add(d)
	c.slept += d
	return nil
}

func newTestPacer(rate float64) (*pacer, *fakeClock) {
	c := &fakeClock{t: time.Unix(1_000_000, 0)}
	return &pacer{rate: rate, now: c.now, sleep: c.sleep}, c
}

// TestPacerHoldsItsRate: a body read through the pacer takes its size
// over the rate, whether one reader or several share it, and a debt too
// short for a timer carries over instead of being forgiven.
func TestPacerHoldsItsRate(t *testing.T) {
	const rate = 1 << 20 // a MiB a second
	p, c := newTestPacer(rate)
	r := &pacedReader{ctx: context.Background(), r: bytes.NewReader(make([]byte, 4<<20)), p: p}
	buf := make([]byte, 1<<20)
	reads := 0
	for {
		n, err := r.Read(buf)
		if n > paceChunk {
			t.Fatalf("read %d bytes at once, more than paceChunk", n)
		}
		reads++
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := 4 * time.Second; c.slept < want-paceSlack || c.slept > want {
		t.Errorf("4 MiB at 1 MiB/s slept %v, want %v less at most the slack", c.slept, want)
	}

	// Two readers read in turn share the rate: together, 2 MiB take 2 s.
	p, c = newTestPacer(rate)
	a := &pacedReader{ctx: context.Background(), r: bytes.NewReader(make([]byte, 1<<20)), p: p}
	b := &pacedReader{ctx: context.Background(), r: bytes.NewReader(make([]byte, 1<<20)), p: p}
	for done := 0; done < 2; {
		done = 0
		for _, r := range []*pacedReader{a, b} {
			if _, err := r.Read(buf); err == io.EOF {
				done++
			}
		}
	}
	if want := 2 * time.Second; c.slept < want-paceSlack || c.slept > want {
		t.Errorf("two readers of 1 MiB each slept %v, want %v", c.slept, want)
	}

	// Reads each too small for a wait still add up to one.
	p, c = newTestPacer(rate)
	for range 100 {
		if err := p.pay(context.Background(), 100); err != nil { // 95 µs each
			t.Fatal(err)
		}
	}
	if c.slept == 0 {
		t.Error("100 reads of 100 bytes at 1 MiB/s never waited: their debts were forgiven")
	}
}

// TestPacerSavesNoBurst: time with nothing to read is not saved up, so
// that a body arriving after a quiet hour is paced like any other.
func TestPacerSavesNoBurst(t *testing.T) {
	p, c := newTestPacer(1 << 20)
	p.pay(context.Background(), 1<<20)
	c.t = c.t.Add(time.Hour)
	c.slept = 0
	p.pay(context.Background(), 1<<20)
	if c.slept < time.Second-paceSlack {
		t.Errorf("a MiB after an idle hour slept %v, want about a second", c.slept)
	}
}

// TestPacerWaitEndsWithTheRequest: a reader waiting on the pacer stops
// when its request is done, with the context's error.
func TestPacerWaitEndsWithTheRequest(t *testing.T) {
	p := &pacer{rate: 1} // a byte a second: any read waits
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &pacedReader{ctx: ctx, r: bytes.NewReader(make([]byte, 100)), p: p}
	n, err := r.Read(make([]byte, 100))
	if n != 100 || err != context.Canceled {
		t.Fatalf("read on a done request: %d bytes, %v; want 100 and context.Canceled", n, err)
	}
	// Unpaced (rate 0 or less) never waits.
	if err := (&pacer{rate: -1}).pay(ctx, 1<<30); err != nil {
		t.Fatalf("an unpaced pacer: %v", err)
	}
}
