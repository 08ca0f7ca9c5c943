package workbench

import (
	"context"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// What the three read-scope tools (stat, list, read) share: the scope they
// address, the view they open, the header of their results (grep's
// begins the same way) and the shaping of cards and entries.

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

// ScopeHeader is the members every read-scope result (list, stat, read,
// grep) begins with.
type ScopeHeader struct {
	WorkbenchID   string `json:"workbench_id"`
	WorkbenchPath string `json:"workbench_path"` // the workbench's presentation path
	// Section and RelativePath echo the request's section and path as
	// given, nil when absent (with no section, a path's first component
	// is not taken for a section).
	Section      *string `json:"section"`
	RelativePath *string `json:"relative_path"`
	// Path is the presentation path of the addressed path.
	Path string `json:"path"`
}

// header returns the header of a result about sc.
func (s *Service) header(sc readScope) ScopeHeader {
	section, rel := requestScope(sc.section, sc.rel)
	return ScopeHeader{
		WorkbenchID:   sc.id,
		WorkbenchPath: WorkbenchPath(s.logical, sc.id),
		Section:       section,
		RelativePath:  rel,
		Path:          PresentationPath(s.logical, sc.id, sc.comps),
	}
}

// requestScope returns the section and relative_path a result echoes
// for a request's section and path: each as given, nil when "".
func requestScope(section, path string) (sec, rel *string) {
	return optionalString(section), optionalString(path)
}

// optionalString is s, or nil when s is "".
func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// projection returns the section and relative path a result shows for a
// stored path: the section when the first component is one of the five
// (else nil) and the rest joined by "/" (nil when there is none).
func projection(comps []string) (section, rel *string) {
	sec, r := SplitSection(comps)
	return optionalString(sec), optionalString(LogicalPath(r))
}

// ListEntry is one child in a workbench_list page.
type ListEntry struct {
	// Name is the last component of the path, or the workbench id for the
	// workbench itself.
	Name string `json:"name"`
	Path string `json:"path"` // the presentation path
	// Section is the path's section, nil outside the five; RelativePath
	// the rest of the path below it, nil for a section itself.
	Section      *string `json:"section"`
	RelativePath *string `json:"relative_path"`
	// Kind is "file" for an artifact and "directory" for the workbench, a
	// section or an implicit directory.
	Kind string `json:"kind"`
	// SizeBytes is a file's size, nil for a directory.
	SizeBytes *uint64 `json:"size_bytes"`
	// EntryCount is always nil: a directory's entries are not counted.
	EntryCount *uint64 `json:"entry_count"`
}

// node returns the list entry of the path comps of workbench id, an
// artifact when e is not nil.
func (s *Service) node(id string, comps []string, e *nokv.PathEntry) ListEntry {
	name := id
	if len(comps) > 0 {
		name = comps[len(comps)-1]
	}
	section, rel := projection(comps)
	n := ListEntry{
		Name:         name,
		Path:         PresentationPath(s.logical, id, comps),
		Section:      section,
		RelativePath: rel,
		Kind:         "directory",
	}
	if e != nil {
		size := e.LogicalSize
		n.Kind, n.SizeBytes = "file", &size
	}
	return n
}

// StatCard is workbench_stat's description of a path. Its section and
// relative path are those of the request, as the result's header echoes
// them; the artifact members (SizeBytes, Generation, ContentType,
// DigestURI, Producer, ManifestID) are nil unless the path is a file.
type StatCard struct {
	Name         string  `json:"name"` // as ListEntry.Name
	Path         string  `json:"path"` // the presentation path
	Section      *string `json:"section"`
	RelativePath *string `json:"relative_path"`
	Kind         string  `json:"kind"` // "file" or "directory"
	SizeBytes    *uint64 `json:"size_bytes"`
	// EntryCount and RecordCount are always nil: they are not computed.
	EntryCount  *uint64 `json:"entry_count"`
	RecordCount *uint64 `json:"record_count"`
	Generation  *uint64 `json:"generation"`
	ContentType *string `json:"content_type"`
	DigestURI   *string `json:"digest_uri"` // sha256:<hex> of the whole body
	// Producer and ManifestID are as stored; the Workbench tools never
	// set them.
	Producer   *string `json:"producer"`
	ManifestID *string `json:"manifest_id"`
}

// card returns the stat card of the path sc addresses, an artifact when e
// is not nil.
func (s *Service) card(sc readScope, e *nokv.PathEntry) *StatCard {
	n := s.node(sc.id, sc.comps, e)
	c := &StatCard{
		Name:       n.Name,
		Path:       n.Path,
		Kind:       n.Kind,
		SizeBytes:  n.SizeBytes,
		EntryCount: n.EntryCount,
	}
	c.Section, c.RelativePath = requestScope(sc.section, sc.rel)
	if e != nil {
		gen, ct, digest := e.Generation, e.ContentType, e.BodyDigestURI
		c.Generation, c.ContentType, c.DigestURI = &gen, &ct, &digest
		if e.Producer != nil {
			p := *e.Producer
			c.Producer = &p
		}
		if e.ManifestID != nil {
			m := *e.ManifestID
			c.ManifestID = &m
		}
	}
	return c
}
