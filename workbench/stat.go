package workbench

import (
	"context"
)

func init() {
	registerTool("workbench_stat", (*Service).statTool)
}

// statInput is workbench_stat's input.
type statInput struct {
	scopeInput
}

// statTool serves workbench_stat: a metadata card without reading a body.
// Resolution, in order: the workbench itself; an exact artifact; a
// section (which exists whenever the workbench does); a directory, when
// some artifact lies below the path; otherwise NotFound with the logical
// path.
func (s *Service) statTool(ctx context.Context, in *statInput) (map[string]any, *Error) {
	sc := in.scope
	v, werr := s.openScopeView(ctx, sc, entryReads(sc.comps))
	if werr != nil {
		return nil, werr
	}
	card, werr := v.stat(ctx, sc.comps)
	if werr != nil {
		return nil, werr
	}
	if card == nil {
		return nil, NotFound(sc.logical())
	}
	res := s.header(sc)
	res["card"] = card
	return res, nil
}

// stat returns the card of comps in the view, or nil when nothing is
// there.
func (v *view) stat(ctx context.Context, comps []string) (map[string]any, *Error) {
	if len(comps) == 0 {
		return v.s.card(v.id, nil, nil), nil
	}
	e, ok, werr := v.entry(ctx, comps)
	if werr != nil {
		return nil, werr
	}
	if ok {
		return v.s.card(v.id, comps, &e), nil
	}
	if len(comps) == 1 && IsSection(comps[0]) {
		return v.s.card(v.id, comps, nil), nil
	}
	some, werr := v.isDirectory(ctx, comps)
	if werr != nil || !some {
		return nil, werr
	}
	return v.s.card(v.id, comps, nil), nil
}
