package files

import (
	"bytes"
	"context"
	"unicode/utf8"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"
)

// workbench_edit replaces an exact UTF-8 string in an artifact's body. It
// reads the body at one generation and publishes the result as a replace
// of that generation. The path must hold an artifact (NotFound with the
// logical path otherwise, a directory or a missing workbench included,
// as the reference's tool layer reports a path its backend found
// nothing at); bodies and results over MaxBytes are
// PayloadTooLarge; the body must be UTF-8 (InvalidUtf8); old_string must
// occur (NoMatch) and, without replace_all, exactly once (AmbiguousEdit
// with the count). A result identical to the body publishes nothing
// (no_change:true, the same generation). When another write moved the
// path, the edit reads it again and re-applies the replacement, up to
// editMaxAttempts times, then fails Conflict with the attempts and the
// last conflict's message. The artifact keeps its content type.
func init() { core.RegisterTool("workbench_edit", editTool) }

// editMaxAttempts is the reference facade's default attempt limit.
const editMaxAttempts = 5

// editInput is workbench_edit's input.
type editInput struct {
	core.TargetInput
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func (in *editInput) Resolve(*core.Service) *core.Error {
	if werr := in.TargetInput.Resolve(); werr != nil {
		return werr
	}
	if in.OldString == "" {
		return core.InvalidArguments("old_string must not be empty")
	}
	return nil
}

// EditInput is workbench_edit's input. Its strings must be valid UTF-8,
// as JSON's are: Edit refuses others with InvalidArguments.
type EditInput struct {
	ID        string `json:"id"`
	Section   string `json:"section"`
	Path      string `json:"path"`       // relative to Section
	OldString string `json:"old_string"` // the text to replace; not empty
	NewString string `json:"new_string"`
	// ReplaceAll replaces every occurrence of OldString; without it
	// OldString must occur exactly once.
	ReplaceAll bool `json:"replace_all,omitempty"`
}

// EditResult is workbench_edit's result.
type EditResult struct {
	core.Success
	core.FileLocation
	Replacements int    `json:"replacements"` // the occurrences replaced
	SizeBytes    uint64 `json:"size_bytes"`   // the body's size after the edit
	// Generation is the path's generation after the edit: the one read
	// when NoChange.
	Generation uint64 `json:"generation"`
	// NoChange reports an edit whose result equals the body: nothing was
	// published.
	NoChange bool `json:"no_change"`
}

func editTool(ctx context.Context, s *core.Service, in *editInput) (*EditResult, *core.Error) {
	return editFile(ctx, s, in.WorkbenchID, in.StoredPath, []byte(in.OldString), []byte(in.NewString), in.ReplaceAll)
}

func editFile(ctx context.Context, s *core.Service, id string, path []string, oldB, newB []byte, all bool) (*EditResult, *core.Error) {
	logical := core.LogicalPath(path)
	limit := uint64(s.Opts.MaxBytes)
	var lastMsg string
	for attempt := range editMaxAttempts {
		if attempt > 0 {
			if err := publish.CasBackoff.Wait(ctx, attempt-1, nil); err != nil {
				return nil, core.FromError(err)
			}
		}
		v, werr := s.OpenView(ctx, id, nil)
		if werr != nil {
			if werr.Code == core.CodeNotFound { // no workbench: the path is missing
				return nil, core.NotFound(logical)
			}
			return nil, werr
		}
		e, ok, werr := v.Entry(ctx, path)
		if werr != nil {
			return nil, werr
		}
		if !ok {
			return nil, core.NotFound(logical)
		}
		if e.LogicalSize > limit {
			return nil, core.PayloadTooLarge(e.LogicalSize, limit)
		}
		body, werr := v.Body(ctx, e)
		if werr != nil {
			return nil, werr
		}
		if !utf8.Valid(body) {
			return nil, core.InvalidUTF8(logical)
		}
		matches := bytes.Count(body, oldB)
		switch {
		case matches == 0:
			return nil, core.NoMatch(logical)
		case matches > 1 && !all:
			return nil, core.AmbiguousEdit(matches)
		}
		n := 1
		if all {
			n = matches
		}
		next := bytes.Replace(body, oldB, newB, n)
		if uint64(len(next)) > limit {
			return nil, core.PayloadTooLarge(uint64(len(next)), limit)
		}
		res := &EditResult{FileLocation: s.FileLocation(id, path), Replacements: n, SizeBytes: uint64(len(next))}
		if bytes.Equal(next, body) {
			res.Generation = e.Generation
			res.NoChange = true
			return res, nil
		}

		st := publish.PlanStaging(s, "workbench_edit", id, path, next)
		if werr := publish.StageBytes(ctx, s, st, next); werr != nil {
			return nil, werr
		}
		h := publish.NewBodyHash(next)
		p := &publish.PubPlan{
			Tool:        "workbench_edit",
			Sn:          v.Sn,
			Mode:        publish.PubReplace,
			ID:          id,
			Path:        path,
			Base:        &e,
			ContentType: e.ContentType,
			Size:        uint64(len(next)),
			Digest:      publish.DigestURIOf(h),
			Rows:        publish.OwnRows(st, 0, nil),
			St:          st,
		}
		out, werr, rejected := publish.Publish(ctx, s, p)
		if werr == nil {
			publish.RememberBody(s.Root(), p.St.Rev, h, p.Size)
			res.Generation = out.Generation
			return res, nil
		}
		if !rejected {
			return nil, werr
		}
		publish.DiscardStaging(ctx, s, p.St)
		if !publish.IsGenerationConflict(werr) {
			return nil, werr
		}
		lastMsg = werr.Message
	}
	return nil, core.EditConflict(editMaxAttempts, lastMsg)
}
