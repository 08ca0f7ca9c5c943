package core

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Ledger cleanup: the deletes of the staging ledgers of landed
// publications, off the response path.
//
// Once a publication lands, the StagedObject rows own its blocks and its
// ledger is only garbage. Deleting it at once put one more round on every
// write, and on a store that allows about one write per second to one
// object name (GCS) the delete came less than a second after the ledger's
// own write: it was throttled, its error ignored, and ledgers were left
// behind at every rate. The Service therefore queues the delete and sends
// it CleanupDelay after the publication landed, tries it again when the
// store throttles it or is unavailable (waiting the store's pace, up to
// cleanupAttempts tries), and on Close tries what is still queued within
// CloseTimeout. Whatever is left after that, a crash included, is garbage
// the shard's sweep owns: a ledger whose operation has a Publish Operation
// row names only objects that metadata owns.
//
// Only publications that landed are queued. A ledger whose publication's
// outcome is unknown is never deleted by the Service: it is the only owner
// of that publication's blocks until a sweep reads the operation's fate.

// Defaults of the ledger cleanup.
const (
	// DefaultCleanupDelay is how long after a publication landed its
	// ledger is deleted: past GCS's pace of one write a second to one
	// object, which the ledger's own write used.
	DefaultCleanupDelay = 1500 * time.Millisecond
	// DefaultCloseTimeout bounds how long Close spends on queued ledger
	// deletes.
	DefaultCloseTimeout = 5 * time.Second
)

// cleanupAttempts bounds the tries of one ledger delete.
const cleanupAttempts = 6

// cleanupRetry spaces the tries of one delete: the store's pace after a
// throttle, a backoff after anything else transient.
var cleanupRetry = bucket.RetryPolicy{Attempts: cleanupAttempts, Base: 100 * time.Millisecond, Max: 4 * time.Second, ThrottleWait: time.Second}

// cleanupParallel bounds the deletes in flight.
const cleanupParallel = 8

type ledgerDelete struct {
	op    nokv.OperationID
	due   time.Time
	tries int
}

// ledgerCleanup is the Service's queue of ledger deletes and the goroutine
// that sends them.
type ledgerCleanup struct {
	bodies *bodies.Store
	delay  time.Duration
	bound  time.Duration // of the drain at close

	mu       sync.Mutex
	queue    []ledgerDelete
	inflight int // deletes taken from the queue and not yet settled
	closing  bool
	stopped  bool       // run has returned
	idle     *sync.Cond // signalled when nothing is queued or in flight, or run returned

	wake chan struct{} // cap 1: the queue changed
	stop chan struct{} // closed by close
	done chan struct{} // closed when run returns
}

func newLedgerCleanup(b *bodies.Store, delay, bound time.Duration) *ledgerCleanup {
	c := &ledgerCleanup{bodies: b, delay: delay, bound: bound,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	c.idle = sync.NewCond(&c.mu)
	go c.run()
	return c
}

// Add queues the delete of a landed publication's ledger.
func (c *ledgerCleanup) Add(op nokv.OperationID) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return // too late: the sweep's
	}
	c.queue = append(c.queue, ledgerDelete{op: op, due: time.Now().Add(c.delay)})
	c.mu.Unlock()
	c.poke()
}

func (c *ledgerCleanup) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// close tries what is queued within the bound and stops the goroutine.
func (c *ledgerCleanup) close() {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		<-c.done
		return
	}
	c.closing = true
	c.mu.Unlock()
	close(c.stop)
	<-c.done
}

// Flush sends every queued delete now, without its delay, and waits until
// none is queued or in flight (a delete that keeps failing is dropped
// after its tries) or the queue has stopped.
func (c *ledgerCleanup) Flush() {
	c.mu.Lock()
	now := time.Now()
	for i := range c.queue {
		c.queue[i].due = now
	}
	c.mu.Unlock()
	c.poke()
	c.mu.Lock()
	for (len(c.queue) > 0 || c.inflight > 0) && !c.stopped {
		c.idle.Wait()
	}
	c.mu.Unlock()
}

func (c *ledgerCleanup) run() {
	defer close(c.done)
	defer func() {
		c.mu.Lock()
		c.stopped = true
		c.idle.Broadcast()
		c.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var deadline time.Time
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		stopping := !deadline.IsZero()
		now := time.Now()
		if stopping && !now.Before(deadline) {
			return // the rest is the sweep's
		}
		c.mu.Lock()
		var due []ledgerDelete
		var next time.Time
		rest := c.queue[:0]
		for _, d := range c.queue {
			if !d.due.After(now) {
				due = append(due, d)
				continue
			}
			rest = append(rest, d)
			if next.IsZero() || d.due.Before(next) {
				next = d.due
			}
		}
		c.queue = rest
		c.inflight += len(due)
		c.mu.Unlock()

		if len(due) > 0 {
			c.requeue(len(due), c.send(ctx, due))
			continue
		}
		if stopping && next.IsZero() {
			return
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = time.Until(next)
		}
		if stopping {
			wait = min(wait, time.Until(deadline))
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-c.wake:
		case <-c.stop:
			if !stopping {
				deadline = time.Now().Add(c.bound)
				dctx, dcancel := context.WithDeadline(ctx, deadline)
				defer dcancel()
				ctx = dctx
				// What waits for its delay is tried now; a throttled
				// delete is tried again at the store's pace.
				c.mu.Lock()
				now := time.Now()
				for i := range c.queue {
					if c.queue[i].tries == 0 {
						c.queue[i].due = now
					}
				}
				c.mu.Unlock()
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// send deletes the ledgers of due, cleanupParallel at a time, and returns
// those to try again.
func (c *ledgerCleanup) send(ctx context.Context, due []ledgerDelete) []ledgerDelete {
	var mu sync.Mutex
	var again []ledgerDelete
	var wg sync.WaitGroup
	sem := make(chan struct{}, cleanupParallel)
	for _, d := range due {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := c.bodies.DropLedger(ctx, d.op)
			if err == nil || errors.Is(err, bucket.ErrNotExist) || !bucket.Transient(err) {
				return // gone, or a failure a retry cannot mend: the sweep's
			}
			d.tries++
			if d.tries >= cleanupAttempts {
				return
			}
			d.due = time.Now().Add(cleanupRetry.Backoff(d.tries-1, err))
			mu.Lock()
			again = append(again, d)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return again
}

// requeue settles n deletes in flight, of which again are tried later.
func (c *ledgerCleanup) requeue(n int, again []ledgerDelete) {
	c.mu.Lock()
	c.inflight -= n
	c.queue = append(c.queue, again...)
	if len(c.queue) == 0 && c.inflight == 0 {
		c.idle.Broadcast()
	}
	c.mu.Unlock()
}
