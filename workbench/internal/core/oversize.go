package core

import "context"

// An input whose text payload was too large to keep comes with the text
// emptied and the text's decoded size in its context
// (payload.EmptyOversizedText, payload.Read); PayloadInput.Resolve
// reports that size where it checks the payload's size, so the answer is
// the whole input's.

// oversizeKey is the context key of an oversized payload's decoded size.
type oversizeKey struct{}

// withOversize returns ctx carrying the decoded size of a text payload
// that was emptied from the input.
func withOversize(ctx context.Context, size int64) context.Context {
	return context.WithValue(ctx, oversizeKey{}, size)
}

// oversizeOf is the size withOversize gave ctx, 0 for none.
func oversizeOf(ctx context.Context) int64 {
	n, _ := ctx.Value(oversizeKey{}).(int64)
	return n
}

// oversized is a decoded input that can be told its payload was emptied.
type oversized interface{ setOversize(size int64) }

func (p *PayloadInput) setOversize(size int64) { p.oversize = size }

// WithOversizedText returns ctx for calling a tool on an input from
// payload.Read whose text of size bytes was dropped (0: none was, and
// the input need not be looked at again).
func WithOversizedText(ctx context.Context, size int64) context.Context {
	return withOversize(ctx, max(size, 0))
}

// lookedAt says whether ctx comes from withOversize: its input has been
// looked at for an oversized text already.
func lookedAt(ctx context.Context) bool {
	_, ok := ctx.Value(oversizeKey{}).(int64)
	return ok
}
