package workbench

import (
	"context"

	"github.com/cairnstore/cairn/workbench/nokv"
)

// What the three read-scope tools (stat, list, read) share: the scope they
// address, the view they open, the header of their results and the
// shaping of cards and entries.

// readScope is what a read tool addresses: one workbench, a stored path
// inside it (no components for the workbench itself) and the view, live or
// a snapshot.
type readScope struct {
	id    string
	comps []string
	// section and rel are the request's section and path ("" when absent
	// or null), which results echo as their scope.
	section, rel string
	// at is at_snapshot as the caller gave it (json.Number or string);
	// nil for a live read.
	at any
}

// logical is the section-joined path without the workbench root, as the
// tool-level errors report it ("outputs/a.txt"; "" for the workbench).
func (sc readScope) logical() string { return LogicalPath(sc.comps) }

// scopeInput is the workbench, the optional section and path (null and
// "" alike mean absent) and at_snapshot of stat and list.
type scopeInput struct {
	ID      string `json:"id"`
	Section string `json:"section"`
	Path    string `json:"path"`
	// AtSnapshot is a json.Number snapshot id or a string name; V is nil
	// when absent or null.
	AtSnapshot jsonValue `json:"at_snapshot"`

	scope readScope
	joinedPath
}

func (in *scopeInput) resolve(*Service) *Error {
	id, werr := ParseWorkbenchID(in.ID)
	if werr != nil {
		return werr
	}
	comps, werr := in.take(ScopePath(in.Section, in.Path))
	if werr != nil {
		return werr
	}
	if werr := checkAtSnapshot(in.AtSnapshot.V); werr != nil {
		return werr
	}
	in.scope = readScope{id: id, comps: comps, section: in.Section, rel: in.Path, at: in.AtSnapshot.V}
	return nil
}

// checkAtSnapshot applies the tool layer's rule to an at_snapshot
// selector: a snapshot name must not be empty (the schema admits any
// string; ids are non-negative integers by the schema).
func checkAtSnapshot(at any) *Error {
	if name, ok := at.(string); ok && name == "" {
		return InvalidArguments("at_snapshot name must not be empty")
	}
	return nil
}

// openScopeView opens the view a stat or read runs in. These two tools
// report any miss, the workbench's own included, as the tool-level
// NotFound naming the logical path they were asked about; a snapshot
// view's errors pass through unchanged.
func (s *Service) openScopeView(ctx context.Context, sc readScope, reads viewReads) (*view, *Error) {
	v, werr := s.openViewFor(ctx, sc.id, sc.at, reads)
	if werr != nil {
		if sc.at == nil && werr.Code == CodeNotFound {
			return nil, NotFound(sc.logical())
		}
		return nil, werr
	}
	return v, nil
}

// header returns the members every read-scope result begins with:
// workbench_id, workbench_path, the section and relative_path of the
// request as given (null when absent: with section null a path's first
// component is not taken for a section), the presentation path of the
// addressed path, and at_snapshot when a snapshot was selected.
func (s *Service) header(sc readScope) map[string]any {
	section, rel := requestScope(sc.section, sc.rel)
	m := map[string]any{
		"workbench_id":   sc.id,
		"workbench_path": WorkbenchPath(s.logical, sc.id),
		"section":        section,
		"relative_path":  rel,
		"path":           PresentationPath(s.logical, sc.id, sc.comps),
	}
	if sc.at != nil {
		m["at_snapshot"] = sc.at
	}
	return m
}

// requestScope returns the section and relative_path a result echoes
// for a request's section and path: each as given, null when "".
func requestScope(section, path string) (sec, rel any) {
	if section != "" {
		sec = section
	}
	if path != "" {
		rel = path
	}
	return sec, rel
}

// projection returns the section and relative path a result shows for a
// stored path: the section when the first component is one of the five
// (else null) and the rest joined by "/" (null when there is none).
func projection(comps []string) (section, rel any) {
	sec, r := SplitSection(comps)
	if sec != "" {
		section = sec
	}
	if len(r) > 0 {
		rel = LogicalPath(r)
	}
	return section, rel
}

// node returns the members a list entry and a stat card share for the
// child at comps of workbench id: name (the last component, or the
// workbench id for the workbench itself), path, section, relative_path,
// kind ("file" for an artifact, "directory" for the workbench, a section
// or an implicit directory), size_bytes and entry_count (always null).
func (s *Service) node(id string, comps []string, e *nokv.PathEntry) map[string]any {
	name := id
	if len(comps) > 0 {
		name = comps[len(comps)-1]
	}
	section, rel := projection(comps)
	m := map[string]any{
		"name":          name,
		"path":          PresentationPath(s.logical, id, comps),
		"section":       section,
		"relative_path": rel,
		"kind":          "directory",
		"size_bytes":    nil,
		"entry_count":   nil,
	}
	if e != nil {
		m["kind"] = "file"
		m["size_bytes"] = e.LogicalSize
	}
	return m
}

// card returns the stat card of the path sc addresses: node's members,
// with section and relative_path those of the request (as the result's
// header echoes them), record_count (always null) and the artifact
// members generation, content_type, digest_uri, producer and manifest_id,
// all null unless e is an artifact.
func (s *Service) card(sc readScope, e *nokv.PathEntry) map[string]any {
	m := s.node(sc.id, sc.comps, e)
	m["section"], m["relative_path"] = requestScope(sc.section, sc.rel)
	m["record_count"] = nil
	m["generation"] = nil
	m["content_type"] = nil
	m["digest_uri"] = nil
	m["producer"] = nil
	m["manifest_id"] = nil
	if e != nil {
		m["generation"] = e.Generation
		m["content_type"] = e.ContentType
		m["digest_uri"] = e.BodyDigestURI
		if e.Producer != nil {
			m["producer"] = *e.Producer
		}
		if e.ManifestID != nil {
			m["manifest_id"] = *e.ManifestID
		}
	}
	return m
}
