package core

import (
	"context"

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
}

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
// to call once the read's result is built.
func (s *Service) HoldRead(ctx context.Context, size uint64) (release func(), werr *Error) {
	b := s.Opts.ReadBudget
	n := min(int64(size)*ReadCharge, b.size)
	if n <= 0 {
		return func() {}, nil
	}
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, FromError(err)
	}
	return func() { b.sem.Release(n) }, nil
}
