package core

import (
	"context"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// What the three read-scope tools (stat, list, read) share: the scope they
// address, the view they open, the header of their results (grep's
// begins the same way) and the shaping of cards and entries.

// ReadScope is what a read tool addresses: one workbench, a stored path
// inside it (no components for the workbench itself) and the view, live or
// a snapshot.
type ReadScope struct {
	ID    string
	Comps []string
	// Section and rel are the request's section and path ("" when absent
	// or null), which results echo as their scope.
	Section, Rel string
	// At is at_snapshot as the caller gave it (json.Number or string);
	// nil for a live read.
	At any
}

// Logical is the section-joined path without the workbench root, as the
// tool-level errors report it ("outputs/a.txt"; "" for the workbench).
func (sc ReadScope) Logical() string { return LogicalPath(sc.Comps) }

// ScopeInput is the workbench, the optional section and path (null and
// "" alike mean absent) and at_snapshot of stat and list.
type ScopeInput struct {
	ID      string `json:"id"`
	Section string `json:"section"`
	Path    string `json:"path"`
	// AtSnapshot is a json.Number snapshot id or a string name; V is nil
	// when absent or null.
	AtSnapshot JSONValue `json:"at_snapshot"`

	Scope ReadScope `json:"-"`
	JoinedPath
}

func (in *ScopeInput) Resolve(*Service) *Error {
	id, werr := ParseWorkbenchID(in.ID)
	if werr != nil {
		return werr
	}
	comps, werr := in.Take(ScopePath(in.Section, in.Path))
	if werr != nil {
		return werr
	}
	if werr := CheckAtSnapshot(in.AtSnapshot.V); werr != nil {
		return werr
	}
	in.Scope = ReadScope{ID: id, Comps: comps, Section: in.Section, Rel: in.Path, At: in.AtSnapshot.V}
	return nil
}

// CheckAtSnapshot applies the tool layer's rule to an at_snapshot
// selector: a snapshot name must not be empty (the schema admits any
// string; ids are non-negative integers by the schema).
func CheckAtSnapshot(at any) *Error {
	if name, ok := at.(string); ok && name == "" {
		return InvalidArguments("at_snapshot name must not be empty")
	}
	return nil
}

// OpenScopeView opens the view a stat or read runs in. These two tools
// report any miss, the workbench's own included, as the tool-level
// NotFound naming the logical path they were asked about; a snapshot
// view's errors pass through unchanged.
func (s *Service) OpenScopeView(ctx context.Context, sc ReadScope, reads ViewReads) (*View, *Error) {
	v, werr := s.OpenViewFor(ctx, sc.ID, sc.At, reads)
	if werr != nil {
		if sc.At == nil && werr.Code == CodeNotFound {
			return nil, NotFound(sc.Logical())
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

// Header returns the header of a result about sc.
func (s *Service) Header(sc ReadScope) ScopeHeader {
	section, rel := requestScope(sc.Section, sc.Rel)
	return ScopeHeader{
		WorkbenchID:   sc.ID,
		WorkbenchPath: WorkbenchPath(s.logical, sc.ID),
		Section:       section,
		RelativePath:  rel,
		Path:          PresentationPath(s.logical, sc.ID, sc.Comps),
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

// Projection returns the section and relative path a result shows for a
// stored path: the section when the first component is one of the five
// (else nil) and the rest joined by "/" (nil when there is none).
func Projection(comps []string) (section, rel *string) {
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

// Node returns the list entry of the path comps of workbench id, an
// artifact when e is not nil.
func (s *Service) Node(id string, comps []string, e *nokv.PathEntry) ListEntry {
	name := id
	if len(comps) > 0 {
		name = comps[len(comps)-1]
	}
	section, rel := Projection(comps)
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

// Card returns the stat card of the path sc addresses, an artifact when e
// is not nil.
func (s *Service) Card(sc ReadScope, e *nokv.PathEntry) *StatCard {
	n := s.Node(sc.ID, sc.Comps, e)
	c := &StatCard{
		Name:       n.Name,
		Path:       n.Path,
		Kind:       n.Kind,
		SizeBytes:  n.SizeBytes,
		EntryCount: n.EntryCount,
	}
	c.Section, c.RelativePath = requestScope(sc.Section, sc.Rel)
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
