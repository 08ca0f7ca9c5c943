package serve

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

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
// retryable. release gives the bytes back; call it once the input is no
// longer held.
//
// A put_file or append body longer than the payload limit, sent without
// an Idempotency-Key, is read with workbench.ReadPayloadInput: a text
// payload past the limit is dropped as it arrives, and oversize is its
// decoded size, for the call's context (workbench.WithOversizedText).
// (A keyed call is read whole: its key binds the whole input.)
func (s *Server) readBody(ctx context.Context, w http.ResponseWriter, r *http.Request, tool string) (input []byte, oversize int64, release func(), werr *workbench.Error) {
	limit := workbench.MaxInputBytes(tool, s.opts.Workbench.MaxBytes)
	if r.ContentLength > limit {
		return nil, -1, nil, workbench.InputTooLarge(uint64(r.ContentLength), uint64(limit), false)
	}
	var held int64
	lane, laneSize := s.bodies.lane(r.ContentLength)
	release = func() {
		if held > 0 {
			s.bodies.held.Add(-held)
			lane.Release(held)
			held = 0
		}
	}
	charge := func(n int64) *workbench.Error {
		n = min(n, laneSize-held) // a body over the whole lane takes all of it
		if n <= 0 {
			return nil
		}
		wctx, cancel := context.WithTimeout(ctx, s.opts.BodyWait)
		defer cancel()
		s.bodies.waiting.Add(1)
		err := lane.Acquire(wctx, n)
		s.bodies.waiting.Add(-1)
		if err != nil {
			if ctx.Err() != nil {
				return workbench.FromError(ctx.Err())
			}
			s.metrics.busy()
			return &workbench.Error{Code: CodeServerBusy, Retryable: true,
				Message: "the server holds as many request bodies as its budget allows; retry later",
				Details: map[string]any{"body_budget_bytes": s.opts.BodyBudget}}
		}
		held += n
		s.bodies.held.Add(n)
		return nil
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength >= 0 {
		if werr := charge(r.ContentLength); werr != nil {
			return nil, -1, release, werr
		}
		maxBytes := s.opts.Workbench.MaxBytes
		if maxBytes <= 0 {
			maxBytes = workbench.DefaultMaxBytes
		}
		if (tool == "workbench_put_file" || tool == "workbench_append") && r.ContentLength > maxBytes && r.Header.Get("Idempotency-Key") == "" {
			input, oversize, err := workbench.ReadPayloadInput(io.LimitReader(body, r.ContentLength), maxBytes, int(r.ContentLength))
			if werr := bodyError(err, limit); werr != nil {
				return nil, -1, release, werr
			}
			return input, oversize, release, nil
		}
		// Exactly the declared length, read in place: a bytes.Buffer grown
		// to it would grow again, to twice its size and a copy, for the
		// read that finds the end.
		input = make([]byte, r.ContentLength)
		_, err := io.ReadFull(body, input)
		if werr := bodyError(err, limit); werr != nil {
			return nil, -1, release, werr
		}
		return input, -1, release, nil
	}
	var buf bytes.Buffer
	for {
		if werr := charge(bodyChunk); werr != nil {
			return nil, -1, release, werr
		}
		n, err := io.CopyN(&buf, body, bodyChunk)
		if errors.Is(err, io.EOF) || (err == nil && n < bodyChunk) {
			return buf.Bytes(), -1, release, nil
		}
		if werr := bodyError(err, limit); werr != nil {
			return nil, -1, release, werr
		}
	}
}

// bodyError is the answer to a failed body read, nil for none.
func bodyError(err error, limit int64) *workbench.Error {
	if err == nil {
		return nil
	}
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return workbench.InputTooLarge(uint64(mbe.Limit)+1, uint64(limit), true)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return workbench.FromError(context.DeadlineExceeded)
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
