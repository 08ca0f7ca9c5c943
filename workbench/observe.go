package workbench

import (
	"context"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// observation is what a write saw before it staged anything: the pinned
// snapshot, the workbench's marker (nil when there is no visible
// workbench) and the artifact at the path (nil when there is none).
type observation struct {
	sn    *head.Snapshot
	ws    *nokv.WorkspaceCurrent
	entry *nokv.PathEntry
}

// observe pins the shard and reads the workbench and the path, having
// fetched together what the publication command will read of the path's
// ancestors (pathReads). A workbench being restored is a Conflict.
func (s *Service) observe(ctx context.Context, id string, path []string) (observation, *Error) {
	sn, werr := s.pinForWrite(ctx)
	if werr != nil {
		return observation{}, werr
	}
	o := observation{sn: sn}
	ws, ok, werr := s.prefetch(ctx, sn, id, pathReads(path))
	if werr != nil {
		return observation{}, werr
	}
	if ok && ws.State == nokv.WorkspaceStateStaging {
		return observation{}, workspaceBusy(id)
	}
	if !ok || ws.State != nokv.WorkspaceStateVisible {
		return o, nil
	}
	o.ws = &ws
	v := &view{s: s, sn: sn, id: id, ws: ws}
	e, found, werr := v.entry(ctx, path)
	if werr != nil {
		return observation{}, werr
	}
	if found {
		o.entry = &e
	}
	return o, nil
}

// isDirectory reports whether path is a directory of the observed
// workbench (an artifact lies strictly under it).
func (o observation) isDirectory(ctx context.Context, s *Service, id string, path []string) (bool, *Error) {
	if o.ws == nil {
		return false, nil
	}
	v := &view{s: s, sn: o.sn, id: id, ws: *o.ws}
	return v.isDirectory(ctx, path)
}

// fileLocation is where a write tool's artifact is: the members its
// result starts with.
func (s *Service) fileLocation(id string, path []string) FileLocation {
	section, rel := SplitSection(path)
	return FileLocation{
		WorkbenchID:  id,
		Path:         PresentationPath(s.logical, id, path),
		Section:      section,
		RelativePath: LogicalPath(rel),
	}
}
