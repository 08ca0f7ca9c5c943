package serve

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/workbench"
)

// bodyChunk is how much of a body of unknown length is charged to the
// body budget at a time.
const bodyChunk = 1 << 20

// smallBody is the largest declared body charged to the small bodies'
// share of the budget.
const smallBody = 256 << 10

// A bodyBudget is the body budget (Options.BodyBudget) in two lanes,
// each a FIFO semaphore: an eighth of it for bodies of a declared length
// of smallBody bytes or less, the rest for larger ones and for bodies of
// unknown length. A waiter at the head of a semaphore's queue holds up
// every acquirer behind it, whatever its size: in one queue, a 1 KiB put
// waited up to BodyWait behind 90 MiB bodies that did not fit.
type bodyBudget struct {
	small, large         *semaphore.Weighted
	smallSize, largeSize int64
	// held and waiting are the bytes charged and the bodies waiting for
	// room, for the metrics.
	held, waiting atomic.Int64
}

func newBodyBudget(size int64) *bodyBudget {
	small := max(size/8, 1)
	large := max(size-small, 1)
	return &bodyBudget{
		small: semaphore.NewWeighted(small), large: semaphore.NewWeighted(large),
		smallSize: small, largeSize: large,
	}
}

// lane is the semaphore a body of declared length n (-1: unknown) is
// charged to, and its size.
func (b *bodyBudget) lane(n int64) (*semaphore.Weighted, int64) {
	if n >= 0 && n <= smallBody {
		return b.small, b.smallSize
	}
	return b.large, b.largeSize
}

// readBody reads a tool call's body within the tool's input bound and the
// server's body budget (Options.BodyBudget). A declared length over the
// bound is refused unread; a longer body stops at the bound. The bytes of
// the body are charged to the budget before they are read: all of a
// declared length at once, an undeclared one a chunk at a time. A body
// that finds no room within Options.BodyWait is refused with ServerBusy,
// retryable. A body in the large lane is read no faster than
// Options.BodyRate. release gives the bytes back; call it once the input
// is no longer held.
//
// A put_file or append body longer than the payload limit, sent without
// an Idempotency-Key, is read with workbench.ReadPayloadInput: a text
// payload past the limit is dropped as it arrives, and oversize is its
// decoded size, for the call's context (workbench.WithOversizedText).
// (A keyed call is read whole: its key binds the whole input.)
func (s *Server) readBody(ctx context.Context, w http.ResponseWriter, r *http.Request, tool string) (input []byte, oversize int64, release func(), werr *workbench.Error) {
	maxBytes := s.opts.Workbench.MaxBytes
	if maxBytes <= 0 {
		maxBytes = workbench.DefaultMaxBytes
	}
	if (tool == "workbench_put_file" || tool == "workbench_append") && r.ContentLength > maxBytes && r.Header.Get("Idempotency-Key") == "" {
		limit := workbench.MaxInputBytes(tool, maxBytes)
		body, release, werr := s.admitBody(ctx, w, r, limit)
		if werr != nil {
			return nil, -1, release, werr
		}
		input, oversize, err := workbench.ReadPayloadInput(body, maxBytes, int(r.ContentLength))
		if werr := bodyError(err, limit); werr != nil {
			return nil, -1, release, werr
		}
		return input, oversize, release, nil
	}
	input, release, werr = s.readWhole(ctx, w, r, workbench.MaxInputBytes(tool, maxBytes))
	return input, -1, release, werr
}

// readWhole reads a request's body whole, within limit, charged to the
// body budget and paced as admitBody says.
func (s *Server) readWhole(ctx context.Context, w http.ResponseWriter, r *http.Request, limit int64) (input []byte, release func(), werr *workbench.Error) {
	body, release, werr := s.admitBody(ctx, w, r, limit)
	if werr != nil {
		return nil, release, werr
	}
	if r.ContentLength >= 0 {
		// Exactly the declared length, read in place: a bytes.Buffer grown
		// to it would grow again, to twice its size and a copy, for the
		// read that finds the end.
		input = make([]byte, r.ContentLength)
		_, err := io.ReadFull(body, input)
		if werr := bodyError(err, limit); werr != nil {
			return nil, release, werr
		}
		return input, release, nil
	}
	var buf bytes.Buffer
	_, err := buf.ReadFrom(body)
	if werr := bodyError(err, limit); werr != nil {
		return nil, release, werr
	}
	return buf.Bytes(), release, nil
}

// admitBody returns r's body as it may be read: at most limit bytes (a
// declared length over it is refused unread), charged to the body budget
// (Options.BodyBudget) before they are read, all of a declared length at
// once and an undeclared one a chunk at a time, and no faster than
// Options.BodyRate when the body is not small. A body that finds no room
// within Options.BodyWait is refused with ServerBusy, retryable, and so
// is the read of an undeclared body that finds no room part way (its
// error is a *budgetError: bodyError gives back the refusal). release
// gives the bytes back; call it once what was read is no longer held.
func (s *Server) admitBody(ctx context.Context, w http.ResponseWriter, r *http.Request, limit int64) (body io.Reader, release func(), werr *workbench.Error) {
	if r.ContentLength > limit {
		return nil, func() {}, workbench.InputTooLarge(uint64(r.ContentLength), uint64(limit), false)
	}
	c := &bodyCharge{s: s, ctx: ctx}
	c.lane, c.laneSize = s.bodies.lane(r.ContentLength)
	body = http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength > smallBody || r.ContentLength < 0 {
		body = &pacedReader{ctx: ctx, r: body, p: s.pace}
	}
	if r.ContentLength >= 0 {
		if werr := c.charge(r.ContentLength); werr != nil {
			return nil, c.release, werr
		}
		return io.LimitReader(body, r.ContentLength), c.release, nil
	}
	return &chargedReader{r: body, c: c}, c.release, nil
}

// A bodyCharge is what one body holds of its lane of the body budget.
type bodyCharge struct {
	s        *Server
	ctx      context.Context
	lane     *semaphore.Weighted
	laneSize int64
	held     int64
}

// charge takes n more bytes of the lane, waiting up to Options.BodyWait.
// A body over the whole lane takes all of it.
func (c *bodyCharge) charge(n int64) *workbench.Error {
	s := c.s
	n = min(n, c.laneSize-c.held)
	if n <= 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(c.ctx, s.opts.BodyWait)
	defer cancel()
	s.bodies.waiting.Add(1)
	err := c.lane.Acquire(wctx, n)
	s.bodies.waiting.Add(-1)
	if err != nil {
		if c.ctx.Err() != nil {
			return workbench.FromError(c.ctx.Err())
		}
		s.metrics.busy()
		return &workbench.Error{Code: CodeServerBusy, Retryable: true,
			Message: "the server holds as many request bodies as its budget allows; retry later",
			Details: map[string]any{"body_budget_bytes": s.opts.BodyBudget}}
	}
	c.held += n
	s.bodies.held.Add(n)
	return nil
}

func (c *bodyCharge) release() {
	if c.held > 0 {
		c.s.bodies.held.Add(-c.held)
		c.lane.Release(c.held)
		c.held = 0
	}
}

// A chargedReader reads a body of undeclared length, charging it to the
// body budget a chunk (bodyChunk) ahead of what it reads.
type chargedReader struct {
	r       io.Reader
	c       *bodyCharge
	charged int64 // bytes asked of the budget so far
	read    int64
}

func (b *chargedReader) Read(p []byte) (int, error) {
	if b.read >= b.charged {
		if werr := b.c.charge(bodyChunk); werr != nil {
			return 0, &budgetError{werr}
		}
		b.charged += bodyChunk
	}
	p = p[:min(int64(len(p)), b.charged-b.read)]
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

// A budgetError is a body read refused for want of room in the body
// budget, or cut short by the request's end while it waited for room.
type budgetError struct{ werr *workbench.Error }

func (e *budgetError) Error() string { return e.werr.Message }

// A pacer spreads the reading of request bodies over time: whatever the
// number of bodies read at once, together they are read no faster than
// its rate. A body that is read as fast as the network carries it keeps
// a core busy: on a machine of two cores, 16 bodies of 90 MiB read at
// once made a small call's p99 five to ten times its unloaded value
// (docs/performance.md, "cairn serve under hostile clients").
type pacer struct {
	rate float64 // bytes a second; 0 or less: unpaced
	mu   sync.Mutex
	// paid is when the bytes read so far have all been paid for at the
	// rate: a reader whose bytes take it past now waits until then.
	paid time.Time
	// now and sleep are the clock, for tests; nil: the real one.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

// paceChunk is the most a paced reader reads at once, so that the bytes
// between two waits stay a fraction of a millisecond at the default
// rate.
const paceChunk = 64 << 10

// paceSlack is the least wait worth a timer: debts shorter than it carry
// over to the next read.
const paceSlack = time.Millisecond

// pay charges n bytes just read and waits until they are paid for, or ctx
// is done.
func (p *pacer) pay(ctx context.Context, n int) error {
	if p == nil || p.rate <= 0 || n <= 0 {
		return nil
	}
	p.mu.Lock()
	now := time.Now()
	if p.now != nil {
		now = p.now()
	}
	if p.paid.Before(now) {
		p.paid = now // unused time is not saved up for a burst
	}
	p.paid = p.paid.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	wait := p.paid.Sub(now)
	p.mu.Unlock()
	if wait < paceSlack {
		return nil
	}
	if p.sleep != nil {
		return p.sleep(ctx, wait)
	}
	return bucket.Sleep(ctx, wait)
}

// A pacedReader reads through a pacer.
type pacedReader struct {
	ctx context.Context
	r   io.Reader
	p   *pacer
}

func (r *pacedReader) Read(b []byte) (int, error) {
	if len(b) > paceChunk {
		b = b[:paceChunk]
	}
	n, err := r.r.Read(b)
	if perr := r.p.pay(r.ctx, n); perr != nil && err == nil {
		err = perr
	}
	return n, err
}

// bodyError is the answer to a failed body read, nil for none.
func bodyError(err error, limit int64) *workbench.Error {
	if err == nil {
		return nil
	}
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return workbench.InputTooLarge(uint64(mbe.Limit)+1, uint64(limit), true)
	}
	if be, ok := errors.AsType[*budgetError](err); ok {
		return be.werr
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return workbench.FromError(context.DeadlineExceeded)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return workbench.FromError(err)
	}
	return workbench.InvalidArguments("read request body: " + err.Error())
}

// writeDeadline is when the answer of a request begun at start must be
// written by: its deadline plus Options.WriteTimeout.
func (s *Server) writeDeadline(start time.Time) time.Time {
	return start.Add(s.opts.RequestTimeout + s.opts.WriteTimeout)
}

// answerCharged is the size from which an answer is charged to the
// answer budget: smaller ones cost less than the accounting.
const answerCharged = 64 << 10

// holdAnswer charges an answer of out's size to the answer budget
// (Options.AnswerBudget) for as long as it is being written. A read-only
// tool's answer that finds no room at once is refused with ServerBusy;
// any other is written uncharged, for its change is made and a refusal
// would invite a retry.
func (s *Server) holdAnswer(tool string, out []byte) (release func(), werr *workbench.Error) {
	n := min(int64(len(out)), s.opts.AnswerBudget)
	if n < answerCharged {
		return func() {}, nil
	}
	// No wait: an answer that waited would hold its memory while it did,
	// and the answers computed meanwhile would pile up behind it.
	if !s.answers.TryAcquire(n) {
		if info, ok := workbench.Tool(tool); ok && info.Annotations.ReadOnly {
			s.metrics.busy()
			return nil, &workbench.Error{Code: CodeServerBusy, Retryable: true,
				Message: "the server is writing as many answers as its budget allows; retry later",
				Details: map[string]any{"answer_budget_bytes": s.opts.AnswerBudget}}
		}
		return func() {}, nil
	}
	s.answering.Add(n)
	return func() {
		s.answering.Add(-n)
		s.answers.Release(n)
	}, nil
}
