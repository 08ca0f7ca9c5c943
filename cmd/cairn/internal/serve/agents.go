package serve

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// errPoolClosed is returned by acquire once the server is shutting down.
var errPoolClosed = errors.New("serve: shutting down")

// agent is one open agent root: its Service, its MCP handler, and the
// requests using them.
type agent struct {
	id       string
	svc      *workbench.Service
	mcp      http.Handler // nil without an MCP mount
	inFlight int          // requests holding the agent (pool.mu)
	lastUsed time.Time    // when the last request released it (pool.mu)
}

// pool opens one workbench.Service per agent id on first use and closes
// it after it has been idle for a while. An agent with a request in
// flight is never closed: acquire and release count the requests, and
// only an agent with none is reaped.
type pool struct {
	b      bucket.Bucket
	opts   workbench.Options
	idle   time.Duration
	mcp    func(CallFunc) http.Handler
	now    func() time.Time
	closed bool

	mu     sync.Mutex
	agents map[string]*agent
	// gone accumulates the counters of the Services already closed, so
	// that the metrics stay monotonic across idle closes.
	gone closedStats

	stop chan struct{}
	done chan struct{}
	// busy counts the requests holding an agent; drained, once close has
	// begun, is closed when it reaches zero.
	busy    int
	drained chan struct{}
}

// closedStats are the engine counters of Services the pool has closed.
type closedStats struct {
	published, carried int64
	commit             head.CommitStats
}

func newPool(b bucket.Bucket, opts workbench.Options, idle time.Duration, mcp func(CallFunc) http.Handler) *pool {
	p := &pool{
		b:      b,
		opts:   opts,
		idle:   idle,
		mcp:    mcp,
		now:    time.Now,
		agents: map[string]*agent{},
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go p.reap()
	return p
}

// acquire returns the open agent id, opening its Service if needed, and
// counts a request on it until release. Opening makes no request to the
// bucket (workbench.Open), so it runs under the lock.
func (p *pool) acquire(ctx context.Context, id string) (*agent, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPoolClosed
	}
	a := p.agents[id]
	if a == nil {
		opts := p.opts
		opts.AgentID = id
		svc, err := workbench.Open(ctx, p.b, opts)
		if err != nil {
			return nil, err
		}
		a = &agent{id: id, svc: svc}
		if p.mcp != nil {
			a.mcp = p.mcp(func(ctx context.Context, tool string, input []byte) ([]byte, bool) {
				noteTool(ctx, tool) // the request's log line and metrics name the tool
				return svc.Call(ctx, tool, input)
			})
		}
		p.agents[id] = a
	}
	a.inFlight++
	p.busy++
	return a, nil
}

// release ends one request's hold on a.
func (p *pool) release(a *agent) {
	p.mu.Lock()
	a.inFlight--
	a.lastUsed = p.now()
	p.busy--
	if p.busy == 0 && p.drained != nil {
		close(p.drained)
		p.drained = nil
	}
	p.mu.Unlock()
}

// open returns the agents open now.
func (p *pool) open() []*agent {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*agent, 0, len(p.agents))
	for _, a := range p.agents {
		out = append(out, a)
	}
	return out
}

// reap closes, every quarter of the idle period, the agents idle for the
// whole period.
func (p *pool) reap() {
	defer close(p.done)
	tick := time.NewTicker(max(p.idle/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
			p.closeIdle()
		}
	}
}

// closeIdle closes the agents with no request in flight that were last
// released at least the idle period ago. They leave the map first, so a
// request arriving meanwhile opens a fresh Service (any number may serve
// one root), and close outside the lock: Close may spend a few seconds
// on queued ledger deletes.
func (p *pool) closeIdle() {
	now := p.now()
	var idle []*agent
	p.mu.Lock()
	for id, a := range p.agents {
		if a.inFlight == 0 && now.Sub(a.lastUsed) >= p.idle {
			delete(p.agents, id)
			p.retire(a)
			idle = append(idle, a)
		}
	}
	p.mu.Unlock()
	for _, a := range idle {
		a.svc.Close()
	}
}

// retire adds a's counters to the closed totals (p.mu held).
func (p *pool) retire(a *agent) {
	pub, car := a.svc.Store().IntentStats()
	p.gone.published += pub
	p.gone.carried += car
	addCommit(&p.gone.commit, a.svc.Store().CommitStats())
}

func addCommit(dst *head.CommitStats, s head.CommitStats) {
	dst.Batches += s.Batches
	dst.Commands += s.Commands
	dst.Retries += s.Retries
	dst.Landed += s.Landed
	dst.Folds += s.Folds
	dst.Merges += s.Merges
	dst.Installed += s.Installed
	dst.Dropped += s.Dropped
	dst.CASConflicts += s.CASConflicts
	dst.HeadReads += s.HeadReads
	dst.PinsCoalesced += s.PinsCoalesced
	dst.Deferred += s.Deferred
	dst.Unheld += s.Unheld
	dst.TakenOver += s.TakenOver
	for i, n := range s.BatchSizes {
		dst.BatchSizes[i] += n
	}
}

// drainWait bounds how long close waits for the requests still running.
// They run only when the HTTP server's shutdown grace ran out: their
// connections are closed and their contexts cancelled, so each ends once
// its commit settles (within the engine's settle timeout).
const drainWait = 15 * time.Second

// close stops the reaper and closes every agent. The HTTP server has
// finished its requests before (Server.Shutdown), unless its grace ran
// out: then close first waits, at most drainWait, for the requests still
// running, so that each settles its commit (and stores its idempotent
// result) on an open engine; a request still running after that is
// answered by its engine's Close (head.ErrClosed, or its outcome).
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	var drained chan struct{}
	if p.busy > 0 {
		p.drained = make(chan struct{})
		drained = p.drained
	}
	p.mu.Unlock()
	if drained != nil {
		t := time.NewTimer(drainWait)
		select {
		case <-drained:
		case <-t.C:
		}
		t.Stop()
	}
	p.mu.Lock()
	all := make([]*agent, 0, len(p.agents))
	for id, a := range p.agents {
		delete(p.agents, id)
		p.retire(a)
		all = append(all, a)
	}
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	var wg sync.WaitGroup
	for _, a := range all {
		wg.Go(func() { a.svc.Close() })
	}
	wg.Wait()
}
