package core

import (
	"context"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// A ReadBudget bounds the memory whole-body reads hold at once, across
// every Service given it (Options.ReadBudget): a structured read holds
// its body, its records and the answer built from them, about
// ReadCharge times the body's size, until the tool returns. A read that
// finds no room waits for it, for as long as its context allows; a body
// larger than the whole budget waits for all of it. A process serving
// many agents gives them one budget, so that many large reads at once
// queue instead of taking memory without bound.
type ReadBudget struct {
	sem  *semaphore.Weighted
	size int64
	held atomic.Int64
}

// Held is the bytes charged to the budget now.
func (b *ReadBudget) Held() int64 { return b.held.Load() }

// ReadCharge is what a whole-body read is charged per byte of its body.
const ReadCharge = 3

// DefaultReadBudget is the budget of a Service given none.
const DefaultReadBudget = 128 << 20

// NewReadBudget returns a budget of bytes (DefaultReadBudget when not
// positive).
func NewReadBudget(bytes int64) *ReadBudget {
	if bytes <= 0 {
		bytes = DefaultReadBudget
	}
	return &ReadBudget{sem: semaphore.NewWeighted(bytes), size: bytes}
}

// HoldRead charges a whole-body read of size bytes to the Service's read
// budget, waiting for room as long as ctx allows, and returns the release
// to call once the read's result is built. Under a context from
// HoldUntilAnswered the charge outlives the tool: the returned release
// does nothing, and the charge is given back when the answer is written.
func (s *Service) HoldRead(ctx context.Context, size uint64) (release func(), werr *Error) {
	b := s.Opts.ReadBudget
	n := min(int64(size)*ReadCharge, b.size)
	if n <= 0 {
		return func() {}, nil
	}
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, FromError(err)
	}
	b.held.Add(n)
	give := func() {
		b.held.Add(-n)
		b.sem.Release(n)
	}
	if h, ok := ctx.Value(answerHoldsKey{}).(*answerHolds); ok && h.add(give) {
		return func() {}, nil
	}
	return give, nil
}

// answerHoldsKey is the context key of a call's answerHolds.
type answerHoldsKey struct{}

// answerHolds are the read charges of one call kept until its answer is
// written.
type answerHolds struct {
	mu    sync.Mutex
	done  bool
	gives []func()
}

// add keeps give for the answer's end, or says false if the answer is
// already written.
func (h *answerHolds) add(give func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return false
	}
	h.gives = append(h.gives, give)
	return true
}

// HoldUntilAnswered returns a context under which a tool's whole-body
// reads keep their read-budget charge (HoldRead) until answered is
// called, rather than until the tool returns. A server that writes the
// answer to a client uses it: the answer is made of the body it read, so
// a client that is slow to take its answer holds the budget, and further
// large reads wait for room instead of building answers that would pile
// up in memory behind it. Call answered once the answer is written or
// abandoned; reads run after it release as usual.
func HoldUntilAnswered(ctx context.Context) (context.Context, func()) {
	h := &answerHolds{}
	return context.WithValue(ctx, answerHoldsKey{}, h), func() {
		h.mu.Lock()
		gives := h.gives
		h.gives, h.done = nil, true
		h.mu.Unlock()
		for _, give := range gives {
			give()
		}
	}
}
