package workbench

import (
	"bytes"
	"context"
	"unicode/utf8"
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
func init() { registerTool("workbench_edit", (*Service).editTool) }

// editMaxAttempts is the reference facade's default attempt limit.
const editMaxAttempts = 5

// editInput is workbench_edit's input.
type editInput struct {
	targetInput
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func (in *editInput) resolve(*Service) *Error {
	if werr := in.targetInput.resolve(); werr != nil {
		return werr
	}
	if in.OldString == "" {
		return InvalidArguments("old_string must not be empty")
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
	Success
	FileLocation
	Replacements int    `json:"replacements"` // the occurrences replaced
	SizeBytes    uint64 `json:"size_bytes"`   // the body's size after the edit
	// Generation is the path's generation after the edit: the one read
	// when NoChange.
	Generation uint64 `json:"generation"`
	// NoChange reports an edit whose result equals the body: nothing was
	// published.
	NoChange bool `json:"no_change"`
}

func (s *Service) editTool(ctx context.Context, in *editInput) (*EditResult, *Error) {
	return s.editFile(ctx, in.id, in.path, []byte(in.OldString), []byte(in.NewString), in.ReplaceAll)
}

func (s *Service) editFile(ctx context.Context, id string, path []string, oldB, newB []byte, all bool) (*EditResult, *Error) {
	logical := LogicalPath(path)
	limit := uint64(s.opts.MaxBytes)
	var lastMsg string
	for attempt := range editMaxAttempts {
		if attempt > 0 {
			if err := casBackoff.Wait(ctx, attempt-1, nil); err != nil {
				return nil, FromError(err)
			}
		}
		v, werr := s.openView(ctx, id, nil)
		if werr != nil {
			if werr.Code == CodeNotFound { // no workbench: the path is missing
				return nil, NotFound(logical)
			}
			return nil, werr
		}
		e, ok, werr := v.entry(ctx, path)
		if werr != nil {
			return nil, werr
		}
		if !ok {
			return nil, NotFound(logical)
		}
		if e.LogicalSize > limit {
			return nil, PayloadTooLarge(e.LogicalSize, limit)
		}
		body, werr := v.body(ctx, e)
		if werr != nil {
			return nil, werr
		}
		if !utf8.Valid(body) {
			return nil, InvalidUTF8(logical)
		}
		matches := bytes.Count(body, oldB)
		switch {
		case matches == 0:
			return nil, NoMatch(logical)
		case matches > 1 && !all:
			return nil, AmbiguousEdit(matches)
		}
		n := 1
		if all {
			n = matches
		}
		next := bytes.Replace(body, oldB, newB, n)
		if uint64(len(next)) > limit {
			return nil, PayloadTooLarge(uint64(len(next)), limit)
		}
		res := &EditResult{FileLocation: s.fileLocation(id, path), Replacements: n, SizeBytes: uint64(len(next))}
		if bytes.Equal(next, body) {
			res.Generation = e.Generation
			res.NoChange = true
			return res, nil
		}

		st := s.planStaging("workbench_edit", id, path, next)
		if werr := s.stageBytes(ctx, st, next); werr != nil {
			return nil, werr
		}
		h := newBodyHash(next)
		p := &pubPlan{
			tool:        "workbench_edit",
			sn:          v.sn,
			mode:        pubReplace,
			id:          id,
			path:        path,
			base:        &e,
			contentType: e.ContentType,
			size:        uint64(len(next)),
			digest:      digestURIOf(h),
			rows:        ownRows(st, 0, nil),
			st:          st,
		}
		out, werr, rejected := s.publish(ctx, p)
		if werr == nil {
			rememberBody(s.root, p.st.rev, h, p.size)
			res.Generation = out.Generation
			return res, nil
		}
		if !rejected {
			return nil, werr
		}
		s.discardStaging(ctx, p.st)
		if !isGenerationConflict(werr) {
			return nil, werr
		}
		lastMsg = werr.Message
	}
	return nil, EditConflict(editMaxAttempts, lastMsg)
}
