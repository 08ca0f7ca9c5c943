package head

import (
	"context"
	"sync"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

// A fold prepared beside the commits stages hundreds or thousands of
// objects (every changed shard and page of the families it folds) while
// the commits go on. Sent all at once, they queue at the store ahead of
// the commits' few writes: a served replica's trace showed its head
// writes answered in 150–260 ms during a fold, against 22 ms otherwise,
// and the head's interval stretched by as much. So background staging
// yields: while a commit stages or writes the head, or its turn is near,
// the commit holds the Store's urgent gate, and a background staging
// starts no new write until it opens (or maxYield passes), and keeps
// fewer writes in flight (backgroundStageWrites), so that those already
// sent drain before the head write.

// yieldGate is held by the commits' critical steps and waited on by
// background staging.
type yieldGate struct {
	mu   sync.Mutex
	held int
	open chan struct{} // closed when held drops to 0; nil while nothing holds
}

// hold closes the gate until the returned func is called.
func (g *yieldGate) hold() (release func()) {
	g.mu.Lock()
	g.held++
	if g.held == 1 {
		g.open = make(chan struct{})
	}
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.held--; g.held == 0 {
				close(g.open)
				g.open = nil
			}
		})
	}
}

// wait returns once nothing holds the gate, ctx has ended, or max has
// passed: a commit that holds it for long (a head write retried after a
// throttle) delays background staging, never stops it.
func (g *yieldGate) wait(ctx context.Context, max time.Duration) {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	if open == nil {
		return
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-open:
	case <-ctx.Done():
	case <-t.C:
	}
}

// maxYield bounds one wait of background staging for the gate.
const maxYield = 250 * time.Millisecond

// backgroundStageWrites bounds the writes in flight of a background
// staging: enough to keep a store with tens of milliseconds a request
// busy, few enough to drain in the lead the gate closes with.
const backgroundStageWrites = 64

// holdForTurn waits, in a paced Store, until the head's turn is
// yieldLead away, then holds the urgent gate: the background writes in
// flight drain before the head write is sent. The caller releases it once
// the head write is answered.
func (s *Store) holdForTurn(ctx context.Context) (release func()) {
	if s.opts.MinCommitInterval > 0 && !s.opts.NoGroupCommit {
		s.mu.Lock()
		wait := s.turnAfter() - time.Since(s.headWritten) - s.opts.MinCommitInterval/yieldLeadDivisor
		s.mu.Unlock()
		if wait > 0 {
			_ = bucket.Sleep(ctx, wait) // an ended ctx is takeTurn's to report
		}
	}
	return s.urgent.hold()
}

// yieldLeadDivisor sets how long before the head's turn the gate closes:
// a tenth of the interval, 100 ms at GCS's one write a second.
const yieldLeadDivisor = 10
