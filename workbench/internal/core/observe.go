package core

import (
	"context"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Observation is what a write saw before it staged anything: the pinned
// snapshot, the workbench's marker (nil when there is no visible
// workbench) and the artifact at the path (nil when there is none).
type Observation struct {
	Sn    *head.Snapshot
	ws    *nokv.WorkspaceCurrent
	Entry *nokv.PathEntry
}

// Observe pins the shard and reads the workbench and the path, having
// fetched together what the publication command will read of the path's
// ancestors (pathReads). A workbench being restored is a Conflict.
func (s *Service) Observe(ctx context.Context, id string, path []string) (Observation, *Error) {
	sn, werr := s.PinForWrite(ctx)
	if werr != nil {
		return Observation{}, werr
	}
	o := Observation{Sn: sn}
	ws, ok, werr := s.prefetch(ctx, sn, id, pathReads(path))
	if werr != nil {
		return Observation{}, werr
	}
	if ok && ws.State == nokv.WorkspaceStateStaging {
		return Observation{}, WorkspaceBusy(id)
	}
	if !ok || ws.State != nokv.WorkspaceStateVisible {
		return o, nil
	}
	o.ws = &ws
	v := &View{S: s, Sn: sn, ID: id, Ws: ws}
	e, found, werr := v.Entry(ctx, path)
	if werr != nil {
		return Observation{}, werr
	}
	if found {
		o.Entry = &e
	}
	return o, nil
}

// IsDirectory reports whether path is a directory of the observed
// workbench (an artifact lies strictly under it).
func (o Observation) IsDirectory(ctx context.Context, s *Service, id string, path []string) (bool, *Error) {
	if o.ws == nil {
		return false, nil
	}
	v := &View{S: s, Sn: o.Sn, ID: id, Ws: *o.ws}
	return v.IsDirectory(ctx, path)
}

// FileLocation is where a write tool's artifact is: the members its
// result starts with.
func (s *Service) FileLocation(id string, path []string) FileLocation {
	section, rel := SplitSection(path)
	return FileLocation{
		WorkbenchID:  id,
		Path:         PresentationPath(s.logical, id, path),
		Section:      section,
		RelativePath: LogicalPath(rel),
	}
}
