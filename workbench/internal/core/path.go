package core

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Limits of ids and paths, shared by the tools and the record layer
// (package nokv holds the rules).
const (
	// MaxWorkbenchIDBytes bounds a workbench id.
	MaxWorkbenchIDBytes = nokv.MaxWorkbenchIDBytes
	// MaxPathBytes bounds a relative path, its components joined with "/",
	// and the logical root.
	MaxPathBytes = nokv.MaxPathBytes
	// MaxPathComponents bounds the components of a relative path and of the
	// logical root. A path under a section has at most one fewer of its
	// own, because the section is its first stored component.
	MaxPathComponents = nokv.MaxPathComponents
)

// The five standard sections, in the order workbench_create reports them.
const (
	SectionInput    = "input"
	SectionScripts  = "scripts"
	SectionOutputs  = "outputs"
	SectionLogs     = "logs"
	SectionMetadata = "metadata"
)

// The reserved projections under the metadata section. Only commit writes
// the run manifest and only restore the restore manifest; the write tools
// cannot address either.
const (
	RunManifestPath     = "metadata/run_manifest.json"
	RestoreManifestPath = "metadata/restore_manifest.json"
)

// Sections returns the five standard sections in the order workbench_create
// reports them: input, scripts, outputs, logs, metadata.
func Sections() []string {
	return []string{SectionInput, SectionScripts, SectionOutputs, SectionLogs, SectionMetadata}
}

// IsSection reports whether s is one of the five standard sections.
func IsSection(s string) bool {
	switch s {
	case SectionInput, SectionScripts, SectionOutputs, SectionLogs, SectionMetadata:
		return true
	}
	return false
}

// ParseWorkbenchID checks a workbench id: 1 to 128 bytes, the first an
// ASCII letter or digit, the others ASCII letters, digits, '_' or '-'. Ids
// are case-sensitive and returned unchanged. A bad id is InvalidArguments
// whose message names the first offending byte ("workbench id contains
// invalid byte 0x2e at offset 3").
func ParseWorkbenchID(s string) (string, *Error) {
	if err := nokv.CheckWorkbenchID(s); err != nil {
		return "", InvalidArguments(err.Error())
	}
	return s, nil
}

// NormalizePath is the one path normalizer: every relative path a tool
// takes, every stored path and every key built from a path goes through
// it. It splits p on "/" and returns the components, or InvalidArguments
// with the reason nokv.SplitPath gives, the rules' one home: an empty or
// absolute path, over 4096 bytes or 64 components, not UTF-8, or a
// component that is empty, "." or "..", or holds a backslash or NUL
// ("relative path component 2 is '..'"). Nothing is rewritten:
// strings.Join(components, "/") is always p.
func NormalizePath(p string) ([]string, *Error) {
	c, err := nokv.SplitPath(p)
	if err != nil {
		return nil, InvalidArguments(err.Error())
	}
	return c, nil
}

// LogicalPath joins components with "/": the section-joined path inside a
// workbench ("outputs/a.txt") that NotFound and friends report. No
// components give "", the workbench itself.
func LogicalPath(components []string) string {
	return strings.Join(components, "/")
}

// JoinSection resolves a path a tool takes relative to a section into the
// stored path: [section, components of rel...]. section must be one of the
// five ("unknown Workbench section X" otherwise) and rel a valid relative
// path (see NormalizePath) whose first component is not section itself
// ("path is relative to section X; remove the duplicated section prefix";
// other section names are fine as a first component); these errors are
// InvalidArguments. The stored path must itself be within the limits, so
// rel has at most 63 components and 4095-len(section) bytes. Over that,
// the error is the normalizer's message for the joined path as
// InvalidState {source}, the only InvalidState of JoinSection, WritePath
// and ScopePath: the reference's tool layer accepts rel, and its backend
// refuses the path it joins (a tool reports it after its other argument
// checks, see joinedPath).
func JoinSection(section, rel string) ([]string, *Error) {
	if !IsSection(section) {
		return nil, InvalidArguments("unknown Workbench section " + section)
	}
	c, err := NormalizePath(rel)
	if err != nil {
		return nil, err
	}
	if c[0] == section {
		return nil, InvalidArgumentsf("path is relative to section %s; remove the duplicated section prefix", section)
	}
	c, err = NormalizePath(section + "/" + rel)
	if err != nil {
		return nil, InvalidState(err.Message)
	}
	return c, nil
}

// WritePath resolves the target of a write tool (put_file, append, edit):
// JoinSection, then a refusal of the two reserved projections
// (CheckWritable).
func WritePath(section, rel string) ([]string, *Error) {
	c, err := JoinSection(section, rel)
	if err != nil {
		return nil, err
	}
	if err := CheckWritable(c); err != nil {
		return nil, err
	}
	return c, nil
}

// IsReserved reports whether a stored path is one of the reserved
// projections, metadata/run_manifest.json or metadata/restore_manifest.json.
func IsReserved(components []string) bool {
	if len(components) != 2 || components[0] != SectionMetadata {
		return false
	}
	return components[1] == "run_manifest.json" || components[1] == "restore_manifest.json"
}

// CheckWritable refuses a write tool's target that is a reserved
// projection, with InvalidArguments ("metadata/run_manifest.json is a
// reserved Workbench projection and cannot be changed by generic artifact
// tools").
func CheckWritable(components []string) *Error {
	if IsReserved(components) {
		return InvalidArgumentsf("%s is a reserved Workbench projection and cannot be changed by generic artifact tools", LogicalPath(components))
	}
	return nil
}

// ScopePath resolves the scope of a read tool (list, stat, read, grep,
// search, aggregate, catalog) from its optional section and path, "" for
// either meaning absent (the tools treat a JSON null and "" alike):
//
//   - neither: no components, the workbench itself;
//   - section only: [section];
//   - path only: the path from the workbench root, which may name a
//     non-section top-level entry; no duplicated-prefix check applies;
//   - both: JoinSection.
//
// A section that is not one of the five is InvalidArguments; a joined
// path over the limits is JoinSection's InvalidState.
func ScopePath(section, rel string) ([]string, *Error) {
	switch {
	case section == "" && rel == "":
		return []string{}, nil
	case rel == "":
		if !IsSection(section) {
			return nil, InvalidArguments("unknown Workbench section " + section)
		}
		return []string{section}, nil
	case section == "":
		return NormalizePath(rel)
	default:
		return JoinSection(section, rel)
	}
}

// SplitSection splits a stored path into its section and the path
// relative to it, as results present them: when the first component is a
// standard section it is the section and the rest (possibly none) the
// relative path; otherwise section is "" (null in results) and the
// relative path is the whole path.
func SplitSection(components []string) (section string, rel []string) {
	if len(components) > 0 && IsSection(components[0]) {
		return components[0], components[1:]
	}
	return "", components
}

// The deployment root.

// NormalizeLogicalRoot checks and normalizes the logical workbench root, the
// presentation prefix of every returned path (by convention
// /agents/{agent_id}/wb). It must be absolute, UTF-8, free of backslashes
// and NUL and of "." and ".." components, have 1 to 64 components and at
// most 4096 bytes once normalized; repeated and trailing slashes are
// dropped ("/agents//a/wb/" is "/agents/a/wb"). Errors are
// InvalidArguments. The root is presentation only: it shapes returned paths
// and the paths inside run and restore manifests, so a deployment must keep
// it unchanged, but it is never part of a storage key.
func NormalizeLogicalRoot(raw string) (string, *Error) {
	if !strings.HasPrefix(raw, "/") {
		return "", InvalidArguments("logical Workbench root must be absolute")
	}
	if !utf8.ValidString(raw) {
		return "", InvalidArguments("logical Workbench root must be valid UTF-8")
	}
	if strings.ContainsAny(raw, "\\\x00") {
		return "", InvalidArguments("logical Workbench root must not contain backslashes or NUL")
	}
	var parts []string
	for c := range strings.SplitSeq(raw, "/") {
		switch c {
		case "":
			continue
		case ".", "..":
			return "", InvalidArguments("logical Workbench root must not contain '.' or '..' components")
		}
		parts = append(parts, c)
	}
	if len(parts) == 0 {
		return "", InvalidArguments("logical Workbench root must not be /")
	}
	if len(parts) > MaxPathComponents {
		return "", InvalidArgumentsf("logical Workbench root must not exceed %d components", MaxPathComponents)
	}
	root := "/" + strings.Join(parts, "/")
	if len(root) > MaxPathBytes {
		return "", InvalidArgumentsf("logical Workbench root must not exceed %d bytes", MaxPathBytes)
	}
	return root, nil
}

// AgentRoot returns the conventional logical root of an agent,
// /agents/{agentID}/wb, normalized by NormalizeLogicalRoot.
func AgentRoot(agentID string) (string, *Error) {
	if agentID == "" {
		return "", InvalidArguments("agent id is empty")
	}
	if strings.Contains(agentID, "/") {
		return "", InvalidArguments("agent id must not contain '/'")
	}
	return NormalizeLogicalRoot(fmt.Sprintf("/agents/%s/wb", agentID))
}

// Presentation paths. root is a normalized logical root and id a valid
// workbench id.

// WorkbenchPath returns a workbench's presentation path, <root>/<id>.
func WorkbenchPath(root, id string) string {
	return root + "/" + id
}

// PresentationPath returns the presentation path of a stored path inside a
// workbench: <root>/<id>/<components joined by "/">, or the workbench's own
// path for no components.
func PresentationPath(root, id string, components []string) string {
	if len(components) == 0 {
		return WorkbenchPath(root, id)
	}
	return WorkbenchPath(root, id) + "/" + LogicalPath(components)
}

// Order.

// ComparePaths orders stored paths as their exact-row keys order
// (shards.EncodePath), so a scan of the path_current family and a sort of
// paths agree and a cursor can be checked against either. Components are
// compared in turn, as bytes; a component that is a prefix of another sorts
// first ("a/x" before "a-b/x", which plain text order reverses since '-'
// is below '/'). When one path is a proper prefix of the other, the longer
// one, a descendant, sorts first: the subtree of a comes before the exact
// row of a ("a/x" before "a"), as the key layout puts a's NUL-separated
// subtree below its 0x01 terminator. Among siblings, the only paths a
// directory listing compares, this is plain component order. It returns
// -1, 0 or +1.
func ComparePaths(a, b []string) int {
	n := min(len(a), len(b))
	for i := range n {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(a) == len(b):
		return 0
	case len(a) > len(b):
		return -1
	default:
		return 1
	}
}
