package reads

import (
	"context"

	"github.com/cairnstore/cairn/workbench/internal/core"
)

func init() {
	core.RegisterTool("workbench_stat", statTool)
}

// statInput is workbench_stat's input.
type statInput struct {
	core.ScopeInput
}

// StatInput is workbench_stat's input.
type StatInput struct {
	ID string `json:"id"`
	// Section is one of the five sections; nil addresses the workbench,
	// or with Path a path from the workbench's top.
	Section *string `json:"section,omitempty"`
	// Path is the path below Section; "" is none.
	Path string `json:"path,omitempty"`
	// AtSnapshot selects a snapshot by id (a non-negative integer) or by
	// name (a non-empty string); nil reads the live workbench.
	AtSnapshot any `json:"at_snapshot,omitempty"`
}

// StatResult is workbench_stat's result.
type StatResult struct {
	core.Success
	core.ScopeHeader
	// AtSnapshot echoes the request's snapshot selector, a json.Number
	// id or a string name; nil (absent from the JSON) for a live read.
	AtSnapshot any           `json:"at_snapshot,omitempty"`
	Card       core.StatCard `json:"card"`
}

// statTool serves workbench_stat: a metadata card without reading a body.
// Resolution, in order: the workbench itself; an exact artifact; a
// section named as section without a path (which exists whenever the
// workbench does); a directory, when some artifact lies below the path;
// otherwise NotFound with the logical path. A section's name given as
// path without a section ({"path":"logs"}) is a plain path: a directory
// only when something lies below it. The card describes the path asked
// about: its section and relative_path echo the request's, as the
// result's own do.
func statTool(ctx context.Context, s *core.Service, in *statInput) (*StatResult, *core.Error) {
	sc := in.Scope
	v, werr := s.OpenScopeView(ctx, sc, core.EntryReads(sc.Comps))
	if werr != nil {
		return nil, werr
	}
	card, werr := stat(ctx, v, sc)
	if werr != nil {
		return nil, werr
	}
	if card == nil {
		return nil, core.NotFound(sc.Logical())
	}
	return &StatResult{ScopeHeader: s.Header(sc), AtSnapshot: sc.At, Card: *card}, nil
}

// stat returns the card of the scope's path in the view, or nil when
// nothing is there.
func stat(ctx context.Context, v *core.View, sc core.ReadScope) (*core.StatCard, *core.Error) {
	comps := sc.Comps
	if len(comps) == 0 {
		return v.S.Card(sc, nil), nil
	}
	e, ok, werr := v.Entry(ctx, comps)
	if werr != nil {
		return nil, werr
	}
	if ok {
		return v.S.Card(sc, &e), nil
	}
	if sc.Rel == "" { // a section named as section (ScopePath)
		return v.S.Card(sc, nil), nil
	}
	some, werr := v.IsDirectory(ctx, comps)
	if werr != nil || !some {
		return nil, werr
	}
	return v.S.Card(sc, nil), nil
}
