package reads

import (
	"context"

	"github.com/cairnstore/cairn/workbench/internal/core"
)

// BodyInput asks for the leading bytes of one file's body, live or at a
// snapshot: what a person looking at the file (the console of `cairn
// serve`) or downloading it reads, where workbench_read pages 300 bytes
// at a time.
type BodyInput struct {
	ID         string
	Section    string
	Path       string // below Section
	AtSnapshot any    // as ReadInput's: nil, a uint64 id or a name
	// Max is the most bytes returned, from the start; 0: the whole body
	// (at most the Service's MaxBytes).
	Max uint64
}

// Body is a file's card and its leading bytes.
type Body struct {
	Card  core.StatCard
	Bytes []byte
	// Truncated says that the body is longer than Bytes.
	Truncated bool
}

// ReadBody reads the file in's leading bytes through one validated head,
// charged to the Service's read budget as a tool's whole-body read is.
// Blocks are checked against their digests; a whole body is checked
// against the file's digest too.
func ReadBody(ctx context.Context, s *core.Service, in BodyInput) (*Body, *core.Error) {
	id, werr := core.ParseWorkbenchID(in.ID)
	if werr != nil {
		return nil, werr
	}
	if in.Path == "" {
		return nil, core.InvalidArguments("path is required")
	}
	comps, werr := core.JoinSection(in.Section, in.Path)
	if werr != nil {
		return nil, werr
	}
	if werr := core.CheckAtSnapshot(in.AtSnapshot); werr != nil {
		return nil, werr
	}
	sc := core.ReadScope{ID: id, Comps: comps, Section: in.Section, Rel: in.Path, At: in.AtSnapshot}
	v, e, werr := openFile(ctx, s, sc)
	if werr != nil {
		return nil, werr
	}
	if int64(e.LogicalSize) > s.Opts.MaxBytes {
		return nil, core.ArtifactTooLarge(e.LogicalSize, s.Opts.MaxBytes)
	}
	out := &Body{Card: *s.Card(sc, &e)}
	end := e.LogicalSize
	if in.Max > 0 && in.Max < end {
		end, out.Truncated = in.Max, true
	}
	release, werr := s.HoldRead(ctx, end)
	if werr != nil {
		return nil, werr
	}
	defer release()
	if out.Truncated {
		out.Bytes, werr = v.BodyRange(ctx, e, 0, end)
	} else {
		out.Bytes, werr = v.Body(ctx, e)
	}
	if werr != nil {
		return nil, werr
	}
	return out, nil
}
